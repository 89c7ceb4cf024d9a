/**
 * The tool host: host tools mirrored as the `custom-user-tools` MCP server, calls parked until the
 * bridge settles them. Self-contained: nothing here imports `src/`.
 *
 * Per session (the Cursor adapter's wiring, sketched):
 * ```ts
 * const broker = new ParkedCallBroker();
 * const host = createCustomUserToolsServer({ tools, broker });
 * const link = await connectInProcess(host.server);
 * broker.onParked((call) => emitToolCall(call)); // each new call once, in order
 * const customTools = Object.fromEntries(host.tools().map((tool) => [tool.name, {
 *   description: tool.description, inputSchema: tool.inputSchema,
 *   execute: (args, context) => link.callTool(tool.name, args, context.toolCallId),
 * }]));
 * // next request: broker.resolve(toolCallId, result) per client result
 * // cancel / eviction: broker.settleAll(reason); shutdown: broker.close(), link.close(), host.close()
 * ```
 *
 * The standalone tool host (`cursor-bridge mcp-host`) is `createMcpHostServer`: agents over Streamable
 * HTTP / stdio, tool hosts attached over WebSocket, all sharing one broker through `ToolHostAggregator`.
 */

export { AsyncQueue } from './async-queue.js';
export {
  createCustomUserToolsServer,
  CUSTOM_USER_TOOLS_SERVER_NAME,
  TOOL_CALL_ID_META_KEY,
} from './custom-user-tools-server.js';
export type { CustomUserToolsServer, CustomUserToolsServerOptions } from './custom-user-tools-server.js';
export { connectInProcess } from './in-process-client.js';
export type { InProcessClient, InProcessClientOptions } from './in-process-client.js';
export { mirrorToolDefinition, normalizeInputSchema } from './mirror-tool-definition.js';
export type {
  McpInputSchema,
  MirroredTool,
  ToolAnnotations,
  ToolDefinition,
} from './mirror-tool-definition.js';
export { MAX_TIMER_DELAY_MS, ParkedCallBroker } from './parked-call-broker.js';
export type {
  ParkedCall,
  ParkedCallBrokerOptions,
  ParkedCallListener,
  ParkedCallStatus,
  ParkOptions,
  ParkRequest,
} from './parked-call-broker.js';
export { createErrorResult, createTextResult, toToolCallResult } from './tool-call-result.js';
export type { ToolCallResult, ToolResultContent } from './tool-call-result.js';
export type { JsonObject, JsonValue } from './json-value.js';
export { createMcpHostServer } from './mcp-host-server.js';
export type { McpHostAddress, McpHostServer, McpHostServerOptions } from './mcp-host-server.js';
export {
  DEFAULT_CALL_DEADLINE_MS,
  DEFAULT_PROGRESS_INTERVAL_MS,
  ToolHostAggregator,
  TOOLS_REFUSED_METHOD,
} from './tool-host-aggregator.js';
export type { AggregatorSnapshot, HostSnapshot, ToolHostAggregatorOptions } from './tool-host-aggregator.js';
export { MCP_WEBSOCKET_SUBPROTOCOL, WebSocketServerTransport } from './websocket-server-transport.js';
export type { WebSocketServerTransportOptions } from './websocket-server-transport.js';
