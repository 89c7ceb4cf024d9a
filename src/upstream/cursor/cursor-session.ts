/**
 * One conversation's SDK agent plus its `custom-user-tools` tool host. The agent is created at the first
 * run (it needs the model) and keeps its bound model selection for its life; host tools are mirrored
 * into the MCP server before every run, and the SDK's `customTools` reach that server through an
 * in-process MCP client, where each call parks until the client posts its result.
 */

import type {
  Agent as AgentClass,
  AgentOptions,
  ModelSelection,
  SDKAgent,
  SDKCustomTool,
  SDKJsonValue,
} from '@cursor/sdk';
import type { Logger } from 'pino';
import {
  connectInProcess,
  createCustomUserToolsServer,
  ParkedCallBroker,
  type CustomUserToolsServer,
  type InProcessClient,
  type ToolDefinition,
} from '../../../mcp/index.js';
import { BridgeError, createTurnError } from '../../turn/turn-error.js';
import type { TurnTool } from '../../turn/turn-request.js';
import type { UpstreamMode, UpstreamRun, UpstreamRunInput, UpstreamSession } from '../upstream-port.js';
import { CursorRun, type CursorRunOptions } from './cursor-run.js';
import { mapCursorSdkError } from './map-cursor-error.js';

export type CursorSessionContext = {
  Agent: typeof AgentClass;
  apiKey: string;
  logger: Logger;
  mode: UpstreamMode;
  /** The session's scratch workspace. */
  workspaceDir: string;
  /** Agent mode only: `cursorCwd`, the agent's cwd instead of the scratch workspace. */
  agentCwd?: string;
  sandboxEnabled: boolean;
  enableAgentRetries: boolean;
  /** Bounds on a run's silence and its batch quiet period (see {@link CursorRunOptions}); defaults when absent. */
  timeouts?: Pick<CursorRunOptions, 'firstEventTimeoutMs' | 'idleTimeoutMs' | 'batchQuietMs'>;
  /** Resolves the model selection for a run (from the cached catalog). */
  selectModel: (input: UpstreamRunInput) => Promise<ModelSelection>;
  /**
   * A fresh in-memory store per agent: no conversation text on disk. `onRunRequest` is called with the id
   * of each run's backend request as the SDK records it (see {@link BackendFlow}).
   */
  createStore: (hooks?: {
    onRunRequest: (runId: string, requestId: string) => void;
    onCheckpoint: (agentId: string) => void;
  }) => NonNullable<NonNullable<Parameters<typeof AgentClass.create>[0]['local']>['store']>;
};

/**
 * Whether a run mirrors the client's tools (as `custom-user-tools`): in bridge mode only. Plan mode has no
 * tools; agent mode has Cursor's own.
 */
export const mirrorsHostTools = (mode: UpstreamMode): boolean => mode === 'bridge';

/** The agent's cwd: `cursorCwd` in agent mode when set, else the session's scratch workspace. */
const agentCwdOf = (context: Pick<CursorSessionContext, 'mode' | 'workspaceDir' | 'agentCwd'>): string =>
  context.mode === 'agent' && context.agentCwd !== undefined ? context.agentCwd : context.workspaceDir;

/**
 * The agent options of a session — also what the upstream pre-warms an executor with: the SDK keys its
 * executors on the cwd, api key, setting sources, sandbox and retry options, so both must agree. The
 * one place the mode becomes SDK options (with {@link mirrorsHostTools} for each run's tools).
 */
export const buildAgentOptions = (
  context: Pick<CursorSessionContext, 'apiKey' | 'mode' | 'workspaceDir' | 'enableAgentRetries'> &
    Partial<Pick<CursorSessionContext, 'createStore' | 'agentCwd'>>,
  choice: {
    model?: ModelSelection;
    sandbox: boolean;
    storeHooks?: Parameters<CursorSessionContext['createStore']>[0];
  },
): AgentOptions => ({
  apiKey: context.apiKey,
  ...(choice.model === undefined ? {} : { model: choice.model }),
  name: 'cursor-bridge',
  // `tools` and `settingSources` are not persisted by the SDK: they are passed on every create.
  ...(context.mode === 'bridge'
    ? { tools: ['mcp'] }
    : context.mode === 'plan'
      ? { tools: [], mode: 'plan' as const }
      : {}),
  local: {
    cwd: agentCwdOf(context),
    // An agent's store (no conversation text on disk); not part of the executor key, so pre-warming has none.
    ...(context.createStore === undefined ? {} : { store: context.createStore(choice.storeHooks) }),
    enableAgentRetries: context.enableAgentRetries,
    sandboxOptions: { enabled: choice.sandbox },
    ...(context.mode === 'bridge' ? { settingSources: ['project' as const] } : {}),
  },
});

const toToolDefinition = (tool: TurnTool): ToolDefinition => ({
  name: tool.name,
  ...(tool.description === undefined ? {} : { description: tool.description }),
  inputSchema: tool.inputSchema,
});

export class CursorSession implements UpstreamSession {
  readonly id: string;
  readonly #context: CursorSessionContext;
  readonly #broker: ParkedCallBroker;
  readonly #host: CustomUserToolsServer;
  #client: Promise<InProcessClient> | undefined;
  #agent: SDKAgent | undefined;
  #bound: ModelSelection | undefined;
  #active: CursorRun | undefined;
  /** Conversation checkpoints the agent's store saved so far. */
  #checkpoints = 0;
  #disposed = false;

  constructor(id: string, context: CursorSessionContext) {
    this.id = id;
    this.#context = context;
    this.#broker = new ParkedCallBroker({ logger: context.logger });
    this.#host = createCustomUserToolsServer({ tools: [], broker: this.#broker });
    this.#broker.onParked((call) => this.#active?.parked(call));
  }

  async startRun(input: UpstreamRunInput): Promise<UpstreamRun> {
    if (this.#disposed) throw new BridgeError(createTurnError('api', 'The Cursor session was disposed.'));
    if (this.#active !== undefined && !this.#active.finished) {
      throw new BridgeError(createTurnError('api', 'The Cursor agent already has an active run.'));
    }
    const selection = await this.#context.selectModel(input);
    const tools = mirrorsHostTools(this.#context.mode) ? input.tools : [];
    this.#host.setTools(tools.map(toToolDefinition));
    // A failed connect is not cached: the next run tries again.
    const client = await (this.#client ??= connectInProcess(this.#host.server).catch((error: unknown) => {
      this.#client = undefined;
      throw error;
    }));
    const agent = await this.#ensureAgent(selection);

    const checkpointsBefore = this.#checkpoints;
    const run = new CursorRun({
      ...this.#context.timeouts,
      logger: this.#context.logger,
      historyAdvanced: () => this.#checkpoints !== checkpointsBefore,
      host: {
        resolve: (toolCallId, result) => this.#broker.resolve(toolCallId, result),
        settleAll: (reason) => {
          void this.#broker.settleAll(reason);
          // A run settles its host calls when it finishes (and when it starts cancelling): let go of a
          // finished run, whose SDK `Run` keeps the run's whole request context (≈ 160 kB of live heap:
          // its executor resources) reachable until the next turn, in every idle session up to the cap.
          queueMicrotask(() => {
            if (run.finished && this.#active === run) this.#active = undefined;
          });
        },
      },
    });
    this.#active = run;
    const customTools: Record<string, SDKCustomTool> = {};
    for (const tool of tools) {
      customTools[tool.name] = {
        ...(tool.description === undefined ? {} : { description: tool.description }),
        inputSchema: tool.inputSchema as Record<string, SDKJsonValue>,
        execute: async (args, context) => {
          const toolCallId = context.toolCallId ?? run.claimStartedCall(tool.name, args);
          const result = await client.callTool(tool.name, args as Record<string, unknown>, toolCallId);
          return {
            content: result.content,
            ...(result.isError === true ? { isError: true } : {}),
            // It crossed MCP as JSON, so its values are JSON values.
            ...(result.structuredContent === undefined
              ? {}
              : { structuredContent: result.structuredContent as Record<string, SDKJsonValue> }),
          };
        },
      };
    }
    // A live agent keeps its bound selection; only a different model id is switched per send (the SDK
    // keeps a per-send model for the agent's later sends, so compare with the agent's current one).
    const current = agent.model?.id ?? this.#bound?.id;
    const modelOverride = current !== undefined && current !== selection.id ? { model: selection } : {};
    try {
      const sending = agent.send(
        {
          text: input.prompt.text,
          ...(input.prompt.images.length === 0
            ? {}
            : {
                images: input.prompt.images.map((image) => ({
                  data: image.data,
                  mimeType: image.mediaType,
                })),
              }),
        },
        { onDelta: run.onDelta, local: { customTools }, ...modelOverride },
      );
      // On a dead backend `send()` itself can take minutes: past the first-event bound the run already
      // holds its error, and the late SDK run is cancelled as soon as it exists.
      const sdkRun = await Promise.race([sending, run.expired.then(() => undefined)]);
      if (sdkRun === undefined) {
        sending.then(
          (late) => run.attach(late),
          (error: unknown) => this.#context.logger.debug({ err: error }, 'send() failed after the bound'),
        );
        return run;
      }
      run.attach(sdkRun);
      if ('model' in modelOverride) this.#bound = selection;
      return run;
    } catch (error) {
      run.abandon();
      throw new BridgeError(mapCursorSdkError(error), { cause: error });
    }
  }

  async dispose(): Promise<void> {
    if (this.#disposed) return;
    this.#disposed = true;
    try {
      await this.#active?.cancel();
    } finally {
      this.#broker.close('the Cursor session was disposed');
      const agent = this.#agent;
      this.#agent = undefined;
      agent?.close();
      const client = await this.#client?.catch(() => undefined);
      await client?.close();
      await this.#host.close();
    }
  }

  async #ensureAgent(selection: ModelSelection): Promise<SDKAgent> {
    if (this.#agent !== undefined) return this.#agent;
    const { Agent, logger } = this.#context;
    const create = (sandbox: boolean): ReturnType<typeof Agent.create> =>
      Agent.create(
        buildAgentOptions(this.#context, {
          model: selection,
          sandbox,
          // The agent has one run at a time: the request recorded is the active run's (see BackendFlow).
          storeHooks: {
            onRunRequest: (_runId, requestId) => this.#active?.flow.expect(requestId),
            onCheckpoint: () => (this.#checkpoints += 1),
          },
        }),
      );
    try {
      this.#agent = await create(this.#context.sandboxEnabled);
    } catch (error) {
      const sandboxRefused =
        this.#context.sandboxEnabled && error instanceof Error && /sandbox/i.test(error.message);
      if (!sandboxRefused) throw new BridgeError(mapCursorSdkError(error), { cause: error });
      logger.warn(
        { err: error },
        'Cursor local sandboxing is not supported on this host; running without it',
      );
      try {
        this.#agent = await create(false);
      } catch (retryError) {
        throw new BridgeError(mapCursorSdkError(retryError), { cause: retryError });
      }
    }
    this.#bound = selection;
    return this.#agent;
  }
}
