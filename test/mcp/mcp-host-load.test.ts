/**
 * Load: 200 concurrent agent calls over Streamable HTTP (4 agent sessions), spread over the tools of 2
 * official-SDK hosts on WebSocket links. Every call must come back with its own answer (0 lost) and run
 * exactly once on its host (0 duplicated, counted on the hosts). Prints wall time and per-call p50/p99 for
 * a reader: no figure is asserted (a test must not fail because the machine is slow).
 */

import { afterEach, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { connectAgent, connectToolHost, startMcpHost, until } from '../helpers/mcp/tool-host-fixture.js';
import type { RunningMcpHost, TestToolHost } from '../helpers/mcp/tool-host-fixture.js';

const calls = 200;
const agents = 4;

let running: RunningMcpHost | undefined;
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => {});
  await running?.close();
});

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

describe('mcp-host under load', () => {
  it('answers 50 sequential calls of an idle host, each with its own answer, each run once (prints the round trip)', async () => {
    running = await startMcpHost();
    const host = await connectToolHost(running.url, { tools: { names: ['ping_tool'] } });
    closers.push(() => host.close());
    await until(() => running?.server.aggregator.toolNames().length === 1);
    const client = await connectAgent(running.url);
    closers.push(() => client.close());

    const durations: number[] = [];
    for (let index = 0; index < 50; index += 1) {
      const started = performance.now();
      const result = await client.callTool({ name: 'ping_tool', arguments: { text: String(index) } });
      durations.push(performance.now() - started);
      expect(result).toEqual({ content: [{ type: 'text', text: `test-host:ping_tool:${index}` }] });
    }

    expect(host.executions.get('ping_tool')).toBe(50);
    const sorted = [...durations].sort((a, b) => a - b);
    console.log(
      `mcp-host round trip (agent → mcp-host → host → back), 50 sequential calls: ` +
        `p50 ${percentile(sorted, 50).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms`,
    );
  });

  it(`runs ${calls} concurrent calls across 2 hosts: 0 lost, 0 duplicated`, async () => {
    running = await startMcpHost();
    const url = running.url;
    // Each host "works" 20 ms per call, so calls really overlap on both links.
    const hosts: TestToolHost[] = [
      await connectToolHost(url, { name: 'left', tools: { names: ['left_tool'] }, delayMs: 20 }),
      await connectToolHost(url, { name: 'right', tools: { names: ['right_tool'] }, delayMs: 20 }),
    ];
    for (const host of hosts) closers.push(() => host.close());
    await until(() => running?.server.aggregator.toolNames().length === 2);
    const clients: Client[] = [];
    for (let index = 0; index < agents; index += 1) clients.push(await connectAgent(url));
    for (const client of clients) closers.push(() => client.close());

    const durations: number[] = [];
    const started = performance.now();
    const results = await Promise.all(
      Array.from({ length: calls }, async (_, index) => {
        const tool = index % 2 === 0 ? 'left_tool' : 'right_tool';
        const client = clients[index % agents] as Client;
        const callStarted = performance.now();
        const result = await client.callTool({ name: tool, arguments: { text: `call-${index}` } });
        durations.push(performance.now() - callStarted);
        return { index, tool, result };
      }),
    );
    const wallMs = performance.now() - started;

    for (const { index, tool, result } of results) {
      const host = tool === 'left_tool' ? 'left' : 'right';
      expect(result).toEqual({ content: [{ type: 'text', text: `${host}:${tool}:call-${index}` }] });
    }
    expect(hosts[0]?.executions.get('left_tool')).toBe(calls / 2);
    expect(hosts[1]?.executions.get('right_tool')).toBe(calls / 2);
    expect(running.server.aggregator.broker.pending()).toEqual([]);

    const sorted = [...durations].sort((a, b) => a - b);
    console.log(
      `mcp-host load: ${calls} calls, ${agents} agents, 2 hosts (20 ms work each): wall ${wallMs.toFixed(0)} ms, ` +
        `per call p50 ${percentile(sorted, 50).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms, ` +
        `lost 0, duplicated 0`,
    );
  });
});
