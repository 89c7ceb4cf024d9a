// @ts-check
/**
 * A tool host for `cursor-bridge mcp-host`, written with nothing but the official MCP SDK: an `McpServer`
 * with two tools, connected out to mcp-host's `/host` over the SDK's own `WebSocketClientTransport`.
 * Agents connected to mcp-host see the tools as `custom-user-tools`; every call runs here.
 *
 *   cursor-bridge mcp-host &                     # in a source checkout: npx cursor-bridge mcp-host
 *   CURSOR_BRIDGE_MCP_TOKEN=… cursor-bridge example mcp-tool-host
 *
 * `cursor-bridge example mcp-tool-host` runs this file on the Node cursor-bridge runs on; `node
 * examples/mcp-tool-host.mjs` runs it too (plain JavaScript: no build, no type stripping). Env:
 * `CURSOR_BRIDGE_MCP_URL` (default `ws://127.0.0.1:3457/host`), `CURSOR_BRIDGE_MCP_TOKEN` (when mcp-host
 * has one). The host reconnects with a backoff when the link drops (mcp-host restarted); Ctrl-C stops it.
 */

import { createRequire } from 'node:module';
import { hostname, uptime } from 'node:os';
import process from 'node:process';
import { setTimeout } from 'node:timers';
import { URL } from 'node:url';

// cursor-bridge's Node rule, the same line as every entry point of the package (drop it when copying):
// checked before the SDK loads, so an old Node gets that line rather than whatever the SDK does there.
createRequire(import.meta.url)('../bin/node-version.cjs').exitUnlessSupported('example');

const { WebSocketClientTransport } = await import('@modelcontextprotocol/sdk/client/websocket.js');
const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
const { z } = await import('zod');

const baseUrl = process.env['CURSOR_BRIDGE_MCP_URL'] ?? 'ws://127.0.0.1:3457/host';
const token = process.env['CURSOR_BRIDGE_MCP_TOKEN'];

/** The tools. Register them on a fresh server for every connection (a server serves one transport). */
/** @returns {import('@modelcontextprotocol/sdk/server/mcp.js').McpServer} */
const createHost = () => {
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
/** @type {import('@modelcontextprotocol/sdk/server/mcp.js').McpServer | undefined} */
let current;

/** @param {number} attempt */
const connect = async (attempt) => {
  const url = new URL(baseUrl);
  if (token !== undefined && token !== '') url.searchParams.set('token', token);
  const server = createHost();
  current = server;
  // A failed attach both rejects and closes: reconnect once per connection.
  let retried = false;
  /** @param {number} next */
  const retry = (next) => {
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

/** @param {number} attempt */
const scheduleReconnect = (attempt) => {
  if (stopping) return;
  const delay = Math.min(30_000, 500 * 2 ** attempt);
  setTimeout(() => void connect(attempt), delay);
};

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    stopping = true;
    void current?.close().finally(() => process.exit(0));
  });
}

await connect(0);
