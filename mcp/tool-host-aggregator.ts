/**
 * The standalone tool host's core: the tools of every attached host, served to every agent as one
 * `custom-user-tools` server, and each agent call parked in one {@link ParkedCallBroker} until the host
 * that owns the tool answers.
 *
 * Contracts:
 * - **Ownership is first come, and stable**: a tool name belongs to the host that offered it first. A
 *   host offering a name another host owns gets that tool refused (logged at warn; the host receives
 *   {@link TOOLS_REFUSED_METHOD} with its complete refused set, and again whenever the set changes) —
 *   never a silent override. When the owner leaves or drops the tool, the earliest-attached host still
 *   offering it takes it over (and is told, its refused set shrinks).
 * - Every change of the aggregated list (attach, a host's list_changed, detach) reaches every agent
 *   session as `notifications/tools/list_changed`.
 * - **Each call executes at most once**: a call is forwarded to its owner only when the broker announces
 *   it (once per id); an agent's retry under the same id attaches to the parked call or gets its remembered
 *   result; the forwarded `tools/call` is never re-sent.
 * - A call settles by the first of: the host's answer, the deadline, the agent's cancellation (the host
 *   then gets `notifications/cancelled`), the host's disconnect ("tool host disconnected"), shutdown.
 */

import { randomUUID } from 'node:crypto';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { createCustomUserToolsServer } from './custom-user-tools-server.js';
import type { CustomUserToolsServer } from './custom-user-tools-server.js';
import type { ToolAnnotations, ToolDefinition } from './mirror-tool-definition.js';
import { ParkedCallBroker } from './parked-call-broker.js';
import type { ParkedCall } from './parked-call-broker.js';
import { ToolHostLink } from './tool-host-link.js';
import type { HostProgress } from './wait-for-parked-result.js';
import { errorMessage } from '../lib/error-message.js';

/** The notification mcp-host sends a host about its refused tools: `params.tools: [{ name, reason, owner }]`. */
export const TOOLS_REFUSED_METHOD = 'notifications/cursor-bridge/tools_refused';

/** Default per-call deadline: 10 minutes. */
export const DEFAULT_CALL_DEADLINE_MS = 600_000;
/** Default interval of `notifications/progress` to agents that sent a progress token. */
export const DEFAULT_PROGRESS_INTERVAL_MS = 10_000;

export type ToolHostAggregatorOptions = {
  logger: Logger;
  /** Settle a call with an `isError` result after this long without the host's answer. Default 10 min. */
  callDeadlineMs?: number;
  /** Progress heartbeat to agents while a call is parked. Default 10 s; 0 = off. */
  progressIntervalMs?: number;
  /** mcp-host's version, in `serverInfo` to agents and `clientInfo` to hosts. */
  version?: string;
};

/** What `/health` reports about one host. */
export type HostSnapshot = {
  id: string;
  name: string;
  version: string;
  connectedAt: string;
  tools: string[];
  refused: Array<{ name: string; owner: string }>;
  calls: number;
};

export type AggregatorSnapshot = {
  hosts: HostSnapshot[];
  tools: string[];
  parkedCalls: number;
  agents: number;
};

type HostEntry = {
  id: string;
  link: ToolHostLink;
  log: Logger;
  connectedAt: Date;
  /** The host's tools as it listed them, in its order. */
  offered: Map<string, Tool>;
  /** Refused names → the owning host id, as last told to the host. */
  refused: Map<string, string>;
  /** Ids of the calls forwarded to it and not settled yet. */
  calls: Set<string>;
};

export class ToolHostAggregator {
  readonly broker: ParkedCallBroker;
  readonly #options: ToolHostAggregatorOptions;
  readonly #log: Logger;
  /** In attach order (Map iteration order). */
  readonly #hosts = new Map<string, HostEntry>();
  /** Tool name → owning host id. */
  readonly #owners = new Map<string, string>();
  readonly #agents = new Set<CustomUserToolsServer>();
  /** Agents' listeners to the host's progress of a pending call; emptied when the call settles. */
  readonly #progress = new Map<string, Set<(progress: HostProgress) => void>>();
  #definitions: ToolDefinition[] = [];
  #hostCounter = 0;
  #closed = false;

  constructor(options: ToolHostAggregatorOptions) {
    this.#options = options;
    this.#log = options.logger;
    this.broker = new ParkedCallBroker({
      deadlineMs: options.callDeadlineMs ?? DEFAULT_CALL_DEADLINE_MS,
      logger: options.logger,
    });
    this.broker.onParked((call) => this.#forward(call));
  }

  /**
   * Attaches a host over `transport` (not started): initializes it, lists its tools and publishes them.
   * Resolves with the host's id once attached; rejects (the link closed) when the host fails to
   * initialize or list. The host is detached when its link closes.
   */
  async attachHost(transport: Transport, context: { remoteAddress?: string } = {}): Promise<string> {
    if (this.#closed) {
      await transport.close();
      throw new Error('mcp-host is shutting down');
    }
    this.#hostCounter += 1;
    const id = `host-${this.#hostCounter}`;
    const log = this.#log.child({ hostId: id });
    // Set once attached; the link's callbacks may run before (a close during initialize).
    const attached: { entry?: HostEntry; changedBeforeAttach?: Tool[] } = {};
    const { link, tools } = await ToolHostLink.connect(transport, {
      clientInfo: { name: 'cursor-bridge-mcp-host', version: this.#options.version ?? '0.0.0' },
      logger: log,
      onToolsChanged: (next) => {
        const { entry } = attached;
        if (entry === undefined) {
          // A change right after the first tools/list: applied once attached.
          attached.changedBeforeAttach = next;
          return;
        }
        if (!this.#hosts.has(entry.id)) return;
        entry.offered = toolMap(next);
        log.info({ tools: [...entry.offered.keys()] }, 'tool host changed its tools');
        this.#publish();
      },
      onClose: () => {
        if (attached.entry !== undefined) this.#detach(attached.entry);
      },
    });
    const info = link.serverInfo;
    const entry: HostEntry = {
      id,
      link,
      log,
      connectedAt: new Date(),
      offered: toolMap(tools),
      refused: new Map(),
      calls: new Set(),
    };
    if (link.closed || this.#closed) {
      await link.close();
      throw new Error('the tool host left while attaching');
    }
    if (attached.changedBeforeAttach !== undefined) entry.offered = toolMap(attached.changedBeforeAttach);
    attached.entry = entry;
    this.#hosts.set(id, entry);
    log.info(
      {
        host: info?.name,
        version: info?.version,
        remoteAddress: context.remoteAddress,
        tools: [...entry.offered.keys()],
      },
      'tool host attached',
    );
    this.#publish();
    return id;
  }

  /**
   * A fresh `custom-user-tools` server for one agent session, already holding the current tools. Connect
   * it to exactly one transport; closing it (or its transport) cancels the calls it still waits on.
   */
  createAgentServer(): CustomUserToolsServer {
    const agentKey = randomUUID();
    const agent = createCustomUserToolsServer({
      tools: this.#definitions,
      broker: this.broker,
      version: this.#options.version ?? '0.0.0',
      // Same session + same JSON-RPC id (MCP forbids reusing one) = the same call, re-sent.
      generateToolCallId: (extra) => `${agentKey}:${String(extra.requestId)}`,
      cancelUnwatchedCalls: true,
      subscribeProgress: (toolCallId, listener) => {
        if (this.broker.status(toolCallId) !== 'pending') return () => {};
        const listeners = this.#progress.get(toolCallId) ?? new Set();
        listeners.add(listener);
        this.#progress.set(toolCallId, listeners);
        return () => {
          listeners.delete(listener);
          if (listeners.size === 0 && this.#progress.get(toolCallId) === listeners)
            this.#progress.delete(toolCallId);
        };
      },
      progressIntervalMs: this.#options.progressIntervalMs ?? DEFAULT_PROGRESS_INTERVAL_MS,
    });
    this.#agents.add(agent);
    agent.server.onclose = () => this.#agents.delete(agent);
    return agent;
  }

  /** The aggregated tool names, in host attach order. */
  toolNames(): string[] {
    return this.#definitions.map((tool) => tool.name);
  }

  snapshot(): AggregatorSnapshot {
    return {
      hosts: [...this.#hosts.values()].map((entry) => ({
        id: entry.id,
        name: entry.link.serverInfo?.name ?? '',
        version: entry.link.serverInfo?.version ?? '',
        connectedAt: entry.connectedAt.toISOString(),
        tools: [...entry.offered.keys()].filter((name) => this.#owners.get(name) === entry.id),
        refused: [...entry.refused].map(([name, owner]) => ({ name, owner })),
        calls: entry.calls.size,
      })),
      tools: this.toolNames(),
      parkedCalls: this.broker.pending().length,
      agents: this.#agents.size,
    };
  }

  /**
   * Shuts down: settles every parked call with an `isError` result naming `reason` (the agents get
   * their answers), then closes the agent servers and the host links. Idempotent.
   */
  async close(reason = 'mcp-host is shutting down'): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.broker.close(reason);
    // Let the settled calls' responses reach the transports before they close.
    await new Promise((resolve) => setImmediate(resolve));
    const closing: Array<Promise<void>> = [];
    for (const agent of [...this.#agents]) closing.push(agent.close());
    for (const entry of [...this.#hosts.values()]) closing.push(entry.link.close());
    await Promise.allSettled(closing);
  }

  #forward(call: ParkedCall): void {
    const { toolCallId, toolName } = call;
    const ownerId = this.#owners.get(toolName);
    const entry = ownerId === undefined ? undefined : this.#hosts.get(ownerId);
    if (entry === undefined) {
      this.broker.reject(toolCallId, `Tool "${toolName}" is not served by any connected tool host.`);
      return;
    }
    const controller = new AbortController();
    let answered = false;
    entry.calls.add(toolCallId);
    entry.log.debug({ toolCallId, tool: toolName }, 'forwarding tool call');
    // Settled by anything but the host's answer (deadline, the agent's cancel, shutdown): cancel at the host.
    void this.broker.park(call).then((result) => {
      entry.calls.delete(toolCallId);
      this.#progress.delete(toolCallId);
      entry.log.debug(
        {
          toolCallId,
          tool: toolName,
          ms: Date.now() - call.parkedAt,
          answered,
          isError: result.isError === true,
        },
        'tool call settled',
      );
      if (answered) return;
      const text = result.content.find((block) => block.type === 'text');
      controller.abort(text?.type === 'text' ? text.text : 'The call was settled without the host.');
    });
    const relayProgress = (progress: HostProgress): void => {
      for (const listener of [...(this.#progress.get(toolCallId) ?? [])]) listener(progress);
    };
    entry.link.callTool(toolName, call.args, controller.signal, relayProgress).then(
      (result) => {
        answered = true;
        this.broker.resolve(toolCallId, result);
      },
      (error: unknown) => {
        answered = true;
        if (controller.signal.aborted) return;
        const message = describeHostError(error);
        this.broker.reject(
          toolCallId,
          entry.link.closed
            ? disconnectedText(toolName)
            : `Tool call "${toolName}" failed at the tool host: ${message}`,
        );
      },
    );
  }

  #detach(entry: HostEntry): void {
    if (!this.#hosts.delete(entry.id)) return;
    for (const toolCallId of [...entry.calls]) {
      const name = this.broker.get(toolCallId)?.toolName ?? 'unknown';
      this.broker.reject(toolCallId, disconnectedText(name));
    }
    entry.log.info({ settledCalls: entry.calls.size }, 'tool host detached');
    entry.calls.clear();
    if (!this.#closed) this.#publish();
  }

  /** Re-resolves ownership, tells hosts about changed refusals, and pushes the list to every agent. */
  #publish(): void {
    for (const [name, ownerId] of [...this.#owners]) {
      if (this.#hosts.get(ownerId)?.offered.has(name) !== true) this.#owners.delete(name);
    }
    const definitions: ToolDefinition[] = [];
    for (const entry of this.#hosts.values()) {
      const refused = new Map<string, string>();
      for (const [name, tool] of entry.offered) {
        const owner = this.#owners.get(name);
        if (owner === undefined || owner === entry.id) {
          this.#owners.set(name, entry.id);
          definitions.push(toDefinition(tool));
        } else {
          refused.set(name, owner);
        }
      }
      this.#updateRefused(entry, refused);
    }
    this.#definitions = definitions;
    for (const agent of this.#agents) agent.setTools(definitions);
  }

  #updateRefused(entry: HostEntry, refused: Map<string, string>): void {
    const same =
      refused.size === entry.refused.size &&
      [...refused].every(([name, owner]) => entry.refused.get(name) === owner);
    if (same) return;
    for (const [name, owner] of refused) {
      if (!entry.refused.has(name))
        entry.log.warn({ tool: name, owner }, `tool "${name}" refused: host ${owner} already serves it`);
    }
    entry.refused = refused;
    const tools = [...refused].map(([name, owner]) => ({
      name,
      owner,
      reason: `Tool name "${name}" is already served by another tool host (${owner}); this host's "${name}" is not exposed.`,
    }));
    entry.link.notify(TOOLS_REFUSED_METHOD, { tools }).catch((error: unknown) => {
      entry.log.debug({ err: error }, 'could not tell the host about refused tools');
    });
  }
}

/** A host's JSON-RPC error, once: the SDK prefixes `MCP error <code>: ` on both ends of the link. */
function describeHostError(error: unknown): string {
  if (error instanceof McpError) {
    return `${error.message.replace(/^(MCP error -?\d+: )+/, '')} (JSON-RPC error ${error.code})`;
  }
  return errorMessage(error);
}

function disconnectedText(toolName: string): string {
  return `Tool call "${toolName}" failed: tool host disconnected before answering.`;
}

function toolMap(tools: readonly Tool[]): Map<string, Tool> {
  const map = new Map<string, Tool>();
  for (const tool of tools) if (!map.has(tool.name)) map.set(tool.name, tool);
  return map;
}

function toDefinition(tool: Tool): ToolDefinition {
  return {
    name: tool.name,
    ...(tool.title === undefined ? {} : { title: tool.title }),
    ...(tool.description === undefined ? {} : { description: tool.description }),
    inputSchema: tool.inputSchema,
    ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema }),
    // mirrorToolDefinition keeps only the annotation fields MCP defines, with their types.
    ...(tool.annotations === undefined ? {} : { annotations: tool.annotations as ToolAnnotations }),
  };
}
