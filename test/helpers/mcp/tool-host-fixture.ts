/**
 * Test parts for the standalone tool host: an official-SDK tool host (`McpServer` over the SDK's own
 * `WebSocketClientTransport`, exactly what a user writes) that counts every execution, and official-SDK
 * agents over Streamable HTTP.
 */

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { pino } from 'pino';
import { z } from 'zod';
import { createMcpHostServer } from '../../../mcp/mcp-host-server.js';
import type { McpHostServer, McpHostServerOptions } from '../../../mcp/mcp-host-server.js';
import { sleep } from '../../../lib/sleep.js';

export const testToken = 'test-token-0123456789';

export const PNG_1X1 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

export type RunningMcpHost = { server: McpHostServer; url: string; port: number; close(): Promise<void> };

/** mcp-host in process on an ephemeral loopback port, with {@link testToken} unless `token` says otherwise. */
export async function startMcpHost(
  options: Partial<McpHostServerOptions> = {},
  listenPort = 0,
): Promise<RunningMcpHost> {
  const server = createMcpHostServer({
    logger: pino({ level: process.env['TEST_LOG'] === '1' ? 'debug' : 'silent' }),
    token: testToken,
    ...options,
  });
  const { port } = await server.listen(listenPort, '127.0.0.1');
  return { server, port, url: `http://127.0.0.1:${port}`, close: () => server.close() };
}

/** A call the host is executing; settle it with `answer`. */
export type HeldCall = {
  args: Record<string, unknown>;
  signal: AbortSignal;
  answer(result: CallToolResult): void;
};

export type TestToolHost = {
  readonly mcp: McpServer;
  /** Executions per tool name (every time a handler ran). */
  readonly executions: Map<string, number>;
  /** Calls of the `hold` tool, in arrival order, until answered. */
  readonly held: HeldCall[];
  /** Every `notifications/cursor-bridge/tools_refused` params the host received. */
  readonly refusals: unknown[];
  /** Resolves when the host's link closes. */
  readonly closed: Promise<void>;
  close(): Promise<void>;
};

export type ToolSet = 'standard' | { names: string[] };

/**
 * An official-SDK host. The standard set: `echo` (text), `fail` (isError), `weather` (structuredContent
 * with an outputSchema), `snapshot` (an image plus text), `hold` (answered by the test). `{ names }`:
 * tools that answer `<host>:<name>:<text>` after `delayMs`.
 */
export async function connectToolHost(
  baseUrl: string,
  options: { name?: string; tools?: ToolSet; token?: string; delayMs?: number } = {},
): Promise<TestToolHost> {
  const name = options.name ?? 'test-host';
  const mcp = new McpServer({ name, version: '1.2.3' });
  const executions = new Map<string, number>();
  const held: HeldCall[] = [];
  const refusals: unknown[] = [];
  const count = (tool: string): void => void executions.set(tool, (executions.get(tool) ?? 0) + 1);
  const tools = options.tools ?? 'standard';
  if (tools === 'standard') {
    mcp.registerTool(
      'echo',
      { description: 'Echo the text back.', inputSchema: { text: z.string() } },
      ({ text }) => {
        count('echo');
        return { content: [{ type: 'text', text: `echo: ${text}` }] };
      },
    );
    mcp.registerTool('fail', { description: 'Always fails.' }, () => {
      count('fail');
      return { content: [{ type: 'text', text: 'the tool failed on purpose' }], isError: true };
    });
    mcp.registerTool(
      'weather',
      {
        title: 'Weather',
        description: 'Structured weather.',
        inputSchema: { city: z.string() },
        outputSchema: { city: z.string(), celsius: z.number() },
        annotations: { readOnlyHint: true },
      },
      ({ city }) => {
        count('weather');
        const structuredContent = { city, celsius: 21.5 };
        return { content: [{ type: 'text', text: JSON.stringify(structuredContent) }], structuredContent };
      },
    );
    mcp.registerTool('snapshot', { description: 'An image.' }, () => {
      count('snapshot');
      return {
        content: [
          { type: 'image', data: PNG_1X1, mimeType: 'image/png' },
          { type: 'text', text: '1x1 pixel' },
        ],
      };
    });
    mcp.registerTool(
      'hold',
      { description: 'Answered by the test.', inputSchema: { tag: z.string().optional() } },
      (args, extra) => {
        count('hold');
        return new Promise<CallToolResult>((resolve) => {
          held.push({ args, signal: extra.signal, answer: resolve });
        });
      },
    );
  } else {
    for (const tool of tools.names) {
      mcp.registerTool(
        tool,
        { description: `${tool} of ${name}`, inputSchema: { text: z.string() } },
        async ({ text }) => {
          count(tool);
          if (options.delayMs !== undefined) await sleep(options.delayMs);
          return { content: [{ type: 'text', text: `${name}:${tool}:${text}` }] };
        },
      );
    }
  }
  mcp.server.setNotificationHandler(
    z.object({ method: z.literal('notifications/cursor-bridge/tools_refused'), params: z.unknown() }),
    (notification) => void refusals.push(notification.params),
  );
  let markClosed: () => void = () => {};
  const closed = new Promise<void>((resolve) => (markClosed = resolve));
  mcp.server.onclose = () => markClosed();
  const url = new URL(`${baseUrl.replace(/^http/, 'ws')}/host`);
  url.searchParams.set('token', options.token ?? testToken);
  await mcp.connect(new WebSocketClientTransport(url));
  return { mcp, executions, held, refusals, closed, close: () => mcp.close() };
}

/** An official-SDK agent over Streamable HTTP. */
export async function connectAgent(baseUrl: string, token: string = testToken): Promise<Client> {
  const client = new Client({ name: 'test-agent', version: '0.0.1' });
  const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

/**
 * Polls `check` until it returns true, or throws after `timeoutMs`: a generous safety net against a hang,
 * never a speed claim (the links are real sockets on a possibly loaded machine).
 */
export async function until(check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(10);
  }
}
