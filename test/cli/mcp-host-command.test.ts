/**
 * `cursor-bridge mcp-host` as users start it: the real entry point (`node bin/cursor-bridge.js`, Node 22)
 * in a child process, an official-SDK tool host attached over WebSocket, and official-SDK agents over
 * stdio (what `claude mcp add` / Codex `mcp_servers` launch) and Streamable HTTP.
 */

import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/ensure-built.js';
import { connectAgent, connectToolHost, testToken } from '../helpers/mcp/tool-host-fixture.js';
import type { TestToolHost } from '../helpers/mcp/tool-host-fixture.js';
import {
  binPath,
  createChildEnv,
  killLeftoverChildren,
  nodeBinary,
  runCli,
  startCli,
  stopChild,
} from '../helpers/cli/cli-process.js';

const listeningLine = /mcp-host listening on http:\/\/127\.0\.0\.1:(\d+) /;

let home: string;
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  await ensureBuilt();
}, 180_000);
beforeEach(async () => {
  home = await realpath(await mkdtemp(join(tmpdir(), 'cursor-bridge-mcp-host-')));
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  await killLeftoverChildren();
  await rm(home, { recursive: true, force: true });
});

const attachHost = async (port: number): Promise<TestToolHost> => {
  const host = await connectToolHost(`http://127.0.0.1:${port}`);
  cleanups.push(() => host.close());
  return host;
};

/** Polls (every 25 ms or more) up to this many times: a safety net against a hang, never a speed claim. */
const maxPolls = 1_200;

const waitForTools = async (client: Client, count: number): Promise<void> => {
  for (let attempt = 0; attempt < maxPolls; attempt += 1) {
    if ((await client.listTools()).tools.length === count) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`the agent never saw ${count} tools`);
};

describe('cursor-bridge mcp-host', () => {
  it('--stdio serves one agent over stdin/stdout, logs only on stderr, and shuts down when stdin closes', async () => {
    const transport = new StdioClientTransport({
      command: nodeBinary,
      args: [binPath, 'mcp-host', '--stdio', '--port', '0', '--config', join(home, 'none.json')],
      env: createChildEnv(home, { CURSOR_BRIDGE_MCP_TOKEN: testToken, LOG_LEVEL: 'debug' }) as Record<
        string,
        string
      >,
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const protocolErrors: Error[] = [];
    const client = new Client({ name: 'stdio-agent', version: '0' });
    client.onerror = (error) => protocolErrors.push(error);
    await client.connect(transport);
    const pid = transport.pid;
    cleanups.push(() => client.close());

    const port = await (async () => {
      for (let attempt = 0; attempt < maxPolls; attempt += 1) {
        const match = listeningLine.exec(stderr);
        if (match?.[1] !== undefined) return Number(match[1]);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error(`no listening line on stderr:\n${stderr}`);
    })();
    const host = await attachHost(port);
    await waitForTools(client, 5);

    expect(client.getServerVersion()?.name).toBe('custom-user-tools');
    expect(await client.callTool({ name: 'echo', arguments: { text: 'over stdio' } })).toEqual({
      content: [{ type: 'text', text: 'echo: over stdio' }],
    });
    expect(host.executions.get('echo')).toBe(1);
    // The debug log went to stderr; stdout carried only MCP (a stray line would be a protocol error).
    expect(stderr).toContain('"msg":"agent connected over stdio"');
    expect(protocolErrors).toEqual([]);

    // The agent leaves: mcp-host shuts down and its host link closes.
    const exited = new Promise<number | null>((resolve) => {
      const poll = setInterval(() => {
        try {
          process.kill(pid ?? -1, 0);
        } catch {
          clearInterval(poll);
          resolve(0);
        }
      }, 25);
    });
    await client.close();
    await host.closed;
    await exited;
    expect(stderr).toContain('"msg":"stdio agent left"');
  });

  it('over HTTP: SIGTERM settles parked calls with an isError result and exits 0', async () => {
    const child = startCli(['mcp-host', '--port', '0', '--config', join(home, 'none.json')], {
      env: createChildEnv(home, { CURSOR_BRIDGE_MCP_TOKEN: testToken }),
    });
    const port = Number((await child.waitFor('stderr', listeningLine))[1]);
    const host = await attachHost(port);
    const agent = await connectAgent(`http://127.0.0.1:${port}`);
    cleanups.push(() => agent.close());
    await waitForTools(agent, 5);

    const call = agent.callTool({ name: 'hold', arguments: {} });
    for (let attempt = 0; host.held.length === 0 && attempt < maxPolls; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(host.held).toHaveLength(1);
    const exit = await stopChild(child, 'SIGTERM');

    expect(await call).toEqual({
      content: [
        {
          type: 'text',
          text: 'Tool call "hold" was abandoned before the tool host answered: mcp-host is shutting down.',
        },
      ],
      isError: true,
    });
    expect(exit).toEqual({ code: 0, signal: null });
    // Logged as serve does (pino JSON on stdout), the token never in it.
    expect(child.stdout()).toContain('"msg":"mcp-host listening"');
    expect(child.stdout()).not.toContain(testToken);
  });

  it('refuses a non-loopback address without a token, exit 2, naming the fix', async () => {
    const result = await runCli(['mcp-host', '--host', '0.0.0.0', '--port', '0'], {
      env: createChildEnv(home),
    });

    expect(result.code).toBe(2);
    expect(result.stderr).toContain('mcp-host refuses to listen on 0.0.0.0 without a token');
    expect(result.stderr).toContain('CURSOR_BRIDGE_MCP_TOKEN');
    expect(result.stdout).toBe('');
  });

  it('takes the token and port from the config file (mcpHost.token, mcpHost.port)', async () => {
    const config = join(home, 'config.json');
    await writeFile(config, JSON.stringify({ mcpHost: { token: 'from-config', port: 0 } }));
    const child = startCli(['mcp-host', '--config', config], { env: createChildEnv(home) });
    const port = Number((await child.waitFor('stderr', listeningLine))[1]);

    await expect(connectAgent(`http://127.0.0.1:${port}`)).rejects.toThrow();
    const agent = await connectAgent(`http://127.0.0.1:${port}`, 'from-config');
    expect(agent.getServerVersion()?.name).toBe('custom-user-tools');
    await agent.close();
    expect(await stopChild(child, 'SIGTERM')).toEqual({ code: 0, signal: null });
  });
});
