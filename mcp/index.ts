/**
 * The tool host: host tools mirrored as the `custom-user-tools` MCP server, calls parked until the
 * bridge settles them. Self-contained: nothing here imports `src/`.
 *
 * Per session, as the gateway wires it (`src/upstream/cursor/host-tools/`):
 * ```ts
 * const broker = new ParkedCallBroker();
 * const host = createCustomUserToolsServer({ tools: [], broker });
 * const link = await connectInProcess(host.server);
 * broker.onParked((call) => currentRun.parked(call)); // each new call once, in park order
 * // per run: mirror the client's tools, then hand the SDK exactly what the server lists
 * host.setTools(tools);
 * const customTools = Object.fromEntries(host.tools().map((tool) => [tool.name, {
 *   description: tool.description, inputSchema: tool.inputSchema,
 *   // the id is assigned once (the SDK's, else the started call's, else a fresh one) and parks the call
 *   execute: (args, context) => link.callTool(tool.name, args, idFor(context, tool.name, args)),
 * }]));
 * // next request: broker.resolve(toolCallId, result) per client result
 * // cancel / run end: broker.settleAll(reason); dispose: broker.close(reason), link.close(), host.close()
 * ```
 *
 * This entry is what the gateway loads for every session, so it holds only the per-session tool host. The
 * standalone tool host (`cursor-bridge mcp-host`: agents over Streamable HTTP / stdio, tool hosts attached
 * over WebSocket, one broker shared through `ToolHostAggregator`) is `./host.js`: its transports (`ws`,
 * the MCP SDK's HTTP and stdio server transports, live heap once loaded) stay out of `serve`.
 * `./server-name.js` holds only the server name, for code that must not load the MCP SDK to know it.
 */

export { createCustomUserToolsServer, TOOL_CALL_ID_META_KEY } from './custom-user-tools-server.js';
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
export { CUSTOM_USER_TOOLS_SERVER_NAME } from './server-name.js';
export { createErrorResult, createTextResult, toToolCallResult } from './tool-call-result.js';
export type { ToolCallResult, ToolResultContent } from './tool-call-result.js';
export type { JsonObject, JsonValue } from './json-value.js';
