/**
 * The `custom-user-tools` MCP server: mirrors the host's tools and parks every call in a
 * {@link ParkedCallBroker} until the bridge settles it with the client's result.
 *
 * Transport-agnostic: the bridge connects it to an in-process client (`connectInProcess`); a standalone
 * tool host connects it to stdio or Streamable HTTP. One `Server` serves one transport at a time, so a
 * host with several peers creates one server per peer, sharing the broker.
 */

import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolRequest } from '@modelcontextprotocol/sdk/types.js';
import type { MirroredTool, ToolDefinition } from './mirror-tool-definition.js';
import type { ParkedCallBroker } from './parked-call-broker.js';
import { CUSTOM_USER_TOOLS_SERVER_NAME } from './server-name.js';
import { createErrorResult } from './tool-call-result.js';
import type { ToolCallResult } from './tool-call-result.js';
import { ToolMirror } from './tool-mirror.js';
import { createLazyJsonSchemaValidator } from './lazy-json-schema-validator.js';
import { waitForParkedResult } from './wait-for-parked-result.js';
import type { HostProgress, ToolRequestExtra } from './wait-for-parked-result.js';

/**
 * The `tools/call` request `_meta` key carrying the SDK's `toolCallId` (MCP has no such field).
 * Calls without it (any other MCP client) get a generated id.
 */
export const TOOL_CALL_ID_META_KEY = 'toolCallId';

export type CustomUserToolsServerOptions = {
  tools: readonly ToolDefinition[];
  broker: ParkedCallBroker;
  /** Reported in `serverInfo`. Default `0.0.0`. */
  version?: string;
  /** Sent to peers at initialization. */
  instructions?: string;
  /**
   * Ids for calls that arrive without one. Default `mcp-call-<uuid>`. A generator that derives the id from
   * the request (e.g. session + JSON-RPC id) makes a re-sent request attach to its parked call.
   */
  generateToolCallId?: (extra: ToolRequestExtra) => string;
  /**
   * When the last request waiting on a call is aborted (the peer's `notifications/cancelled`, or its
   * transport closed), settle the call as cancelled — even under an SDK-provided id. For servers whose
   * peers own their calls (the standalone tool host). Default: only calls under a generated id are.
   */
  cancelUnwatchedCalls?: boolean;
  /** The tool host's progress reports for a parked call, relayed to peers that sent a progress token. */
  subscribeProgress?: (toolCallId: string, listener: (progress: HostProgress) => void) => () => void;
  /** Keep peers that asked for progress alive with a `notifications/progress` this often. Default: off. */
  progressIntervalMs?: number;
};

export type CustomUserToolsServer = {
  /** The low-level MCP server; connect it to exactly one transport. */
  readonly server: Server;
  readonly broker: ParkedCallBroker;
  /** The currently mirrored tools. */
  tools(): MirroredTool[];
  /** Replaces the mirrored set; sends `notifications/tools/list_changed` if it changed. Returns whether it did. */
  setTools(tools: readonly ToolDefinition[]): boolean;
  /**
   * Closes the server and its transport. Calls parked under a generated id are settled (their peer is
   * gone); calls parked under an SDK id stay with the broker, whose owner settles or closes it. Idempotent.
   */
  close(): Promise<void>;
};

export function createCustomUserToolsServer(options: CustomUserToolsServerOptions): CustomUserToolsServer {
  const { broker } = options;
  const generateToolCallId = options.generateToolCallId ?? (() => `mcp-call-${randomUUID()}`);
  const server = new Server(
    { name: CUSTOM_USER_TOOLS_SERVER_NAME, version: options.version ?? '0.0.0' },
    {
      capabilities: { tools: { listChanged: true } },
      // One per conversation: Ajv only if something validates (see the validator's file).
      jsonSchemaValidator: createLazyJsonSchemaValidator(),
      ...(options.instructions === undefined ? {} : { instructions: options.instructions }),
    },
  );
  const mirror = new ToolMirror(server, options.tools);

  // How many requests wait on each parked call; a retried request is a second waiter of the same call.
  const waiters = new Map<string, number>();
  const callTool = async (request: CallToolRequest, extra: ToolRequestExtra): Promise<ToolCallResult> => {
    const { name } = request.params;
    const sdkToolCallId = readToolCallId(request.params._meta);
    const toolCallId = sdkToolCallId ?? generateToolCallId(extra);
    // A retried call attaches to its parked call even if the tool list changed in between.
    const known = broker.status(toolCallId) !== 'unknown';
    if (!known && mirror.get(name) === undefined) {
      const available = mirror.list().map((tool) => tool.name);
      return createErrorResult(`Unknown tool "${name}". Available tools: ${available.join(', ') || 'none'}.`);
    }
    const parked = broker.park({ toolCallId, toolName: name, args: request.params.arguments ?? {} });
    waiters.set(toolCallId, (waiters.get(toolCallId) ?? 0) + 1);
    let released = false;
    /** Drops this request as a waiter; true when it was the last one. */
    const release = (): boolean => {
      if (released) return false;
      released = true;
      const remaining = (waiters.get(toolCallId) ?? 1) - 1;
      if (remaining > 0) waiters.set(toolCallId, remaining);
      else waiters.delete(toolCallId);
      return remaining <= 0;
    };
    const result = await waitForParkedResult(parked, extra, {
      // A generated id is this server's to settle. An SDK id may have other waiters (retries) and its owner
      // (the bridge) settles it, unless this server's peers own their calls.
      onAbort: () => {
        if (!release()) return;
        if (sdkToolCallId === undefined || options.cancelUnwatchedCalls === true)
          broker.reject(toolCallId, `Tool call "${name}" was cancelled by the MCP client.`);
      },
      progressIntervalMs: options.progressIntervalMs,
      subscribeProgress:
        options.subscribeProgress === undefined
          ? undefined
          : (listener) => options.subscribeProgress?.(toolCallId, listener) ?? (() => {}),
    });
    release();
    return ensureTransportable(result);
  };
  server.setRequestHandler(CallToolRequestSchema, callTool);

  let closing: Promise<void> | undefined;
  return {
    server,
    broker,
    tools: () => mirror.list(),
    setTools: (tools) => mirror.setTools(tools),
    close: () => (closing ??= server.close()),
  };
}

function readToolCallId(meta: CallToolRequest['params']['_meta']): string | undefined {
  const value = meta?.[TOOL_CALL_ID_META_KEY];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * Text blocks only (`{type, text}`, nothing else) and at most `isError`: always a valid `CallToolResult`.
 * The common result, checked without the schema (a cold `safeParse` of it is costly on every tool call).
 */
function isPlainTextResult(result: ToolCallResult): boolean {
  for (const key in result) if (key !== 'content' && key !== 'isError') return false;
  if (result.isError !== undefined && typeof result.isError !== 'boolean') return false;
  if (!Array.isArray(result.content)) return false;
  for (const block of result.content as unknown[]) {
    if (typeof block !== 'object' || block === null || Object.getPrototypeOf(block) !== Object.prototype)
      return false;
    let keys = 0;
    for (const key in block) {
      if (key !== 'type' && key !== 'text') return false;
      keys += 1;
    }
    const { type, text } = block as { type?: unknown; text?: unknown };
    if (keys !== 2 || type !== 'text' || typeof text !== 'string') return false;
  }
  return true;
}

/** A result MCP cannot carry (e.g. bad base64) would become a protocol error; report it as a tool error. */
function ensureTransportable(result: ToolCallResult): ToolCallResult {
  if (isPlainTextResult(result)) return result;
  const parsed = CallToolResultSchema.safeParse(result);
  if (parsed.success) return result;
  const detail = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
  return createErrorResult(`The tool host returned a result that MCP cannot carry (${detail}).`);
}
