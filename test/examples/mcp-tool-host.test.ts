/**
 * The example tool host of docs/mcp-host.md runs as its file header says (`node examples/mcp-tool-host.mjs`:
 * plain JavaScript, no build) and serves its tools to an agent of mcp-host; it reattaches when the link drops.
 * `cursor-bridge example mcp-tool-host`, the README's command, is covered in test/cli/node-entry-points.test.ts.
 */

import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/repo-root.js';
import { connectAgent, startMcpHost, testToken, until } from '../helpers/mcp/tool-host-fixture.js';
import type { RunningMcpHost } from '../helpers/mcp/tool-host-fixture.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

const startExample = (running: RunningMcpHost): { stderr: () => string } => {
  let stderr = '';
  const child = spawn(process.execPath, [join(repoRoot, 'examples', 'mcp-tool-host.mjs')], {
    cwd: repoRoot,
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      CURSOR_BRIDGE_MCP_URL: `ws://127.0.0.1:${running.port}/host`,
      CURSOR_BRIDGE_MCP_TOKEN: testToken,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  cleanups.push(async () => {
    if (child.exitCode === null && child.pid !== undefined) process.kill(child.pid, 'SIGTERM');
    await exited;
  });
  return { stderr: () => stderr };
};

describe('examples/mcp-tool-host.mjs', () => {
  it('attaches with the official SDK alone and answers calls, structured content included', async () => {
    const running = await startMcpHost();
    cleanups.push(() => running.close());
    const example = startExample(running);
    await until(() => running.server.aggregator.toolNames().length === 2, 20_000);
    const agent = await connectAgent(running.url);
    cleanups.push(() => agent.close());

    expect((await agent.listTools()).tools.map((tool) => tool.name)).toEqual(['add_numbers', 'machine_info']);
    expect(await agent.callTool({ name: 'add_numbers', arguments: { a: 2, b: 40 } })).toEqual({
      content: [{ type: 'text', text: '2 + 40 = 42' }],
      structuredContent: { sum: 42 },
    });
    expect(example.stderr()).toContain('attached to ws://127.0.0.1:');

    // mcp-host restarts on the same port: the example attaches again by itself.
    await agent.close();
    await running.close();
    const restarted = await startMcpHost({}, running.port);
    cleanups.push(() => restarted.close());
    await until(() => restarted.server.aggregator.toolNames().length === 2, 20_000);
    expect(example.stderr()).toContain('link closed; reconnecting');
  });
});
