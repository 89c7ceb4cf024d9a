import { afterEach, describe, expect, it, vi } from 'vitest';
import { createCustomUserToolsServer } from '../../mcp/custom-user-tools-server.js';
import { connectInProcess } from '../../mcp/in-process-client.js';
import { ParkedCallBroker } from '../../mcp/parked-call-broker.js';
import { createTextResult } from '../../mcp/tool-call-result.js';
import { createMcpFixture, hostTools, until } from '../helpers/mcp/mcp-fixture.js';
import type { McpFixture } from '../helpers/mcp/mcp-fixture.js';

const TIMERS = ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] as const;
const HOUR = 3_600_000;

let fixture: McpFixture | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await fixture?.close();
  fixture = undefined;
});

describe('connectInProcess', () => {
  it('a call parked far beyond the MCP SDK default timeout (60 s) still resolves', async () => {
    fixture = await createMcpFixture();
    const { client, broker, announced } = fixture;
    vi.useFakeTimers({ toFake: [...TIMERS] });
    const pending = client.callTool('Bash', { command: 'npm test' }, 'toolu_long');
    const outcome = pending.catch((error: unknown) => error);
    await until(() => announced.length === 1);
    await vi.advanceTimersByTimeAsync(6 * HOUR);
    expect(broker.pending()).toEqual(['toolu_long']);
    broker.resolve('toolu_long', createTextResult('all green'));
    expect(await outcome).toEqual(createTextResult('all green'));
  });

  it('control: the raw MCP client call with default options times out at 60 s', async () => {
    fixture = await createMcpFixture();
    vi.useFakeTimers({ toFake: [...TIMERS] });
    const params = { name: 'Bash', arguments: {}, _meta: { toolCallId: 'toolu_raw' } };
    const outcome = fixture.client.client.callTool(params).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(60_001);
    expect(await outcome).toMatchObject({ code: -32001, message: expect.stringMatching(/timed out/i) });
  });

  it('honours a configured callTimeoutMs', async () => {
    fixture = await createMcpFixture({ client: { callTimeoutMs: 1_000 } });
    vi.useFakeTimers({ toFake: [...TIMERS] });
    const outcome = fixture.client.callTool('Bash', {}, 'toolu_short').catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(999);
    expect(fixture.broker.pending()).toEqual(['toolu_short']);
    await vi.advanceTimersByTimeAsync(1);
    expect(await outcome).toMatchObject({ code: -32001 });
  });

  it.each([Number.NaN, 0, -5, Number.POSITIVE_INFINITY])(
    'treats callTimeoutMs %s as no timeout',
    async (value) => {
      fixture = await createMcpFixture({ client: { callTimeoutMs: value } });
      vi.useFakeTimers({ toFake: [...TIMERS] });
      const outcome = fixture.client.callTool('Bash', {}, 'toolu_odd').catch((error: unknown) => error);
      await vi.advanceTimersByTimeAsync(HOUR);
      expect(fixture.broker.pending()).toEqual(['toolu_odd']);
      fixture.broker.resolve('toolu_odd', createTextResult('fine'));
      expect(await outcome).toEqual(createTextResult('fine'));
    },
  );

  it('lists tools and calls without a toolCallId (the server generates one)', async () => {
    fixture = await createMcpFixture();
    const { client, broker, announced } = fixture;
    expect((await client.listTools()).map((tool) => tool.name)).toEqual(['Read', 'Bash', 'Screenshot']);
    const pending = client.callTool('Read', { file_path: '/x' });
    await until(() => announced.length === 1);
    const id = announced[0]?.toolCallId ?? '';
    expect(id).toMatch(/^mcp-call-/);
    broker.resolve(id, createTextResult('x'));
    expect(await pending).toEqual(createTextResult('x'));
  });

  it('close rejects pending calls and is idempotent; the parked call stays with the broker', async () => {
    fixture = await createMcpFixture();
    const { client, broker, announced } = fixture;
    const outcome = client.callTool('Bash', {}, 'toolu_closed').catch((error: unknown) => error);
    await until(() => announced.length === 1);
    await Promise.all([client.close(), client.close()]);
    expect(await outcome).toMatchObject({ message: expect.stringMatching(/closed/i) });
    expect(broker.pending()).toEqual(['toolu_closed']);
    await expect(client.callTool('Bash', {}, 'toolu_after')).rejects.toThrow(/not connected/i);
  });

  it('refuses a server that is already connected', async () => {
    const host = createCustomUserToolsServer({ tools: hostTools, broker: new ParkedCallBroker() });
    const first = await connectInProcess(host.server);
    await expect(connectInProcess(host.server)).rejects.toThrow(/already connected/i);
    await first.close();
    await host.close();
  });

  it('onToolListChanged unsubscribes', async () => {
    fixture = await createMcpFixture();
    const { client, host } = fixture;
    const seen: string[] = [];
    const unsubscribe = client.onToolListChanged(() => seen.push('first'));
    client.onToolListChanged(() => seen.push('second'));
    host.setTools([{ name: 'A' }]);
    await until(() => seen.length === 2);
    unsubscribe();
    host.setTools([{ name: 'B' }]);
    await until(() => seen.length === 3);
    expect(seen).toEqual(['first', 'second', 'second']);
  });
});
