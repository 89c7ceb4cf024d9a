/**
 * An MCP client linked in memory to a `custom-user-tools` server: the path by which the Cursor adapter's
 * `customTools[name].execute()` reaches the parked-call broker.
 *
 * A parked call waits for the user's client (a human may be approving a command), so `callTool` must not
 * time out: the MCP SDK's per-request default is 60 s and cannot be switched off (an infinite timeout
 * becomes a 1 ms Node timer), so callTool uses the longest timer delay Node honours (~24.8 days).
 * Calls are bounded by the broker (deadlines, `settleAll`) instead.
 */

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { TOOL_CALL_ID_META_KEY } from './custom-user-tools-server.js';
import { createLazyJsonSchemaValidator } from './lazy-json-schema-validator.js';
import { MAX_TIMER_DELAY_MS } from './parked-call-broker.js';
import { toToolCallResult } from './tool-call-result.js';
import type { ToolCallResult } from './tool-call-result.js';

/**
 * The schema the client checks a `tools/call` result with. The linked server's SDK has already parsed the
 * result with `CallToolResultSchema` (its `Server` does for every `tools/call`) and answers with that parsed
 * value, which the in-memory link hands over as it is; {@link toToolCallResult} narrows whatever arrives.
 * Parsing it again would cost a second cold `CallToolResultSchema` parse per call.
 */
const linkedResultSchema = z.looseObject({}) as unknown as typeof CallToolResultSchema;

export type InProcessClientOptions = {
  /**
   * Request timeout for `callTool`, in ms. Default (and maximum, `Infinity` included) {@link MAX_TIMER_DELAY_MS};
   * a value that is not positive means the default.
   */
  callTimeoutMs?: number;
  /** Reported to the server at initialization. */
  clientInfo?: { name: string; version: string };
};

export type InProcessClient = {
  /** The underlying MCP client, for anything not wrapped here. */
  readonly client: Client;
  /**
   * Calls a tool, passing `toolCallId` in the request `_meta` so the server parks the call under the
   * SDK's id. Resolves with the settled result (tool failures are `isError` results); rejects only when
   * the link fails or is closed.
   */
  callTool(name: string, args: Record<string, unknown>, toolCallId?: string): Promise<ToolCallResult>;
  /** The server's current tool list. */
  listTools(): Promise<Tool[]>;
  /** Runs `listener` on each `notifications/tools/list_changed`. Returns an unsubscribe. */
  onToolListChanged(listener: () => void): () => void;
  /** Closes the link (both ends); pending `callTool`s reject with a connection-closed error. Idempotent. */
  close(): Promise<void>;
};

/** Connects a fresh client to `server`, which must not be connected to any other transport. */
export async function connectInProcess(
  server: Server,
  options: InProcessClientOptions = {},
): Promise<InProcessClient> {
  const requested = options.callTimeoutMs;
  // NaN, zero or a negative delay would make a 1 ms Node timer: fall back to the default instead.
  const timeout =
    requested !== undefined && requested > 0 ? Math.min(requested, MAX_TIMER_DELAY_MS) : MAX_TIMER_DELAY_MS;
  const client = new Client(options.clientInfo ?? { name: 'cursor-bridge', version: '0.0.0' }, {
    jsonSchemaValidator: createLazyJsonSchemaValidator(),
  });
  const listeners = new Set<() => void>();
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    for (const listener of [...listeners]) listener();
  });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  try {
    await client.connect(clientTransport);
  } catch (error) {
    await server.close();
    throw error;
  }

  let closing: Promise<void> | undefined;
  return {
    client,
    async callTool(name, args, toolCallId) {
      const params = {
        name,
        arguments: args,
        ...(toolCallId === undefined ? {} : { _meta: { [TOOL_CALL_ID_META_KEY]: toolCallId } }),
      };
      const result = await client.callTool(params, linkedResultSchema, { timeout });
      return toToolCallResult(result);
    },
    async listTools() {
      return (await client.listTools()).tools;
    },
    onToolListChanged(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close: () => (closing ??= client.close()),
  };
}
