/**
 * A tool host for `cursor-bridge mcp-host`, written with nothing but the official MCP SDK: an `McpServer`
 * with two tools, connected out to mcp-host's `/host` over the SDK's own `WebSocketClientTransport`.
 * Agents connected to mcp-host see the tools as `custom-user-tools`; every call runs here.
 *
 *   cursor-bridge mcp-host &                     # or: npm run build && node bin/cursor-bridge.js mcp-host
 *   CURSOR_BRIDGE_MCP_TOKEN=… node examples/mcp-tool-host.ts
 *
 * Node ≥ 22.18 runs this file as is (type stripping). Env: `CURSOR_BRIDGE_MCP_URL` (default
 * `ws://127.0.0.1:3457/host`), `CURSOR_BRIDGE_MCP_TOKEN` (when mcp-host has one). The host reconnects
 * with a backoff when the link drops (mcp-host restarted); Ctrl-C stops it.
 */

import { hostname, uptime } from 'node:os';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';

const baseUrl = process.env['CURSOR_BRIDGE_MCP_URL'] ?? 'ws://127.0.0.1:3457/host';
const token = process.env['CURSOR_BRIDGE_MCP_TOKEN'];

/** The tools. Register them on a fresh server for every connection (a server serves one transport). */
const createHost = (): McpServer => {
  const server = new McpServer({ name: 'example-tool-host', version: '1.0.0' });
  server.registerTool(
    'add_numbers',
    {
      description: 'Add two numbers on the tool host.',
      inputSchema: { a: z.number(), b: z.number() },
      outputSchema: { sum: z.number() },
      annotations: { readOnlyHint: true },
    },
    ({ a, b }) => ({
      content: [{ type: 'text', text: `${a} + ${b} = ${a + b}` }],
      structuredContent: { sum: a + b },
    }),
  );
  server.registerTool(
    'machine_info',
    { description: "The tool host's machine name and uptime.", annotations: { readOnlyHint: true } },
    () => ({ content: [{ type: 'text', text: `${hostname()}, up ${Math.round(uptime())} s` }] }),
  );
  // mcp-host tells a host which of its tools it refused (another host owns the name).
  server.server.setNotificationHandler(
    z.object({
      method: z.literal('notifications/cursor-bridge/tools_refused'),
      params: z.object({ tools: z.array(z.object({ name: z.string(), reason: z.string() })) }),
    }),
    ({ params }) => {
      for (const tool of params.tools) process.stderr.write(`refused: ${tool.reason}\n`);
    },
  );
  return server;
};

let stopping = false;
let current: McpServer | undefined;

const connect = async (attempt: number): Promise<void> => {
  const url = new URL(baseUrl);
  if (token !== undefined && token !== '') url.searchParams.set('token', token);
  const server = createHost();
  current = server;
  // A failed attach both rejects and closes: reconnect once per connection.
  let retried = false;
  const retry = (next: number): void => {
    if (retried || stopping) return;
    retried = true;
    scheduleReconnect(next);
  };
  server.server.onclose = () => {
    process.stderr.write('link closed; reconnecting\n');
    retry(0);
  };
  try {
    await server.connect(new WebSocketClientTransport(url));
    process.stderr.write(`attached to ${baseUrl}\n`);
  } catch (error) {
    process.stderr.write(
      `cannot attach to ${baseUrl}: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    retry(attempt + 1);
  }
};

const scheduleReconnect = (attempt: number): void => {
  if (stopping) return;
  const delay = Math.min(30_000, 500 * 2 ** attempt);
  setTimeout(() => void connect(attempt), delay);
};

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    stopping = true;
    void current?.close().finally(() => process.exit(0));
  });
}

await connect(0);
