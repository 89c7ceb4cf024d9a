/**
 * The standalone tool host (`cursor-bridge mcp-host`): agents connect over Streamable HTTP or stdio, tool
 * hosts attach over WebSocket, and all of them share one broker through {@link ToolHostAggregator}. Kept
 * apart from `./index.js` (the per-session tool host every gateway session uses) so that `serve` never
 * loads these transports.
 */

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
