import Anthropic from '@anthropic-ai/sdk';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BridgeMetrics } from '../../src/metrics/bridge-metrics.js';
import { ScratchPathGuards } from '../../src/workspace/scratch-path-guards.js';
import { bridgeCounters, parsePrometheusText, sumSamples } from '../helpers/prometheus-text.js';
import { startScriptedBridgeServer } from '../helpers/scripted-bridge-server.js';

let bridge: Awaited<ReturnType<typeof startScriptedBridgeServer>> | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await bridge?.close();
  bridge = undefined;
});

const bashTool = {
  name: 'Bash',
  description: 'Run a shell command',
  input_schema: { type: 'object' as const, properties: { command: { type: 'string' } } },
};

describe('GET /metrics (Prometheus text via prom-client)', () => {
  it('counts turns by protocol and outcome, plans, and observes TTFB, tool-call latency and turn duration', async () => {
    // The wall clock stands still (timers and sockets stay real): every duration observed is exact.
    vi.useFakeTimers({ toFake: ['Date'] });
    bridge = await startScriptedBridgeServer([
      [
        {
          type: 'tool-call',
          toolCallId: 'toolu_1',
          toolName: 'Bash',
          input: { command: 'ls' },
          parkedAt: Date.now() - 40,
        },
        { type: 'tool-batch-end' },
        { type: 'await-tool-results' },
        { type: 'text-delta', text: 'done' },
        { type: 'end', status: 'finished' },
      ],
    ]);
    const client = new Anthropic({ baseURL: bridge.url, apiKey: 'unused', maxRetries: 0 });
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'list files' }];
    const first = await client.messages.create({
      model: 'composer-2',
      max_tokens: 100,
      messages,
      tools: [bashTool],
    });
    expect(first.stop_reason).toBe('tool_use');
    const parked = parsePrometheusText(await (await fetch(`${bridge.url}/metrics`)).text());
    expect(sumSamples(parked, 'cursor_bridge_parked_tool_calls')).toBe(1);
    expect(sumSamples(parked, 'cursor_bridge_sessions_in_flight')).toBe(1);
    await client.messages.create({
      model: 'composer-2',
      max_tokens: 100,
      tools: [bashTool],
      messages: [
        ...messages,
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'a.txt' }] },
      ],
    });

    const response = await fetch(`${bridge.url}/metrics`);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    expect(text).toContain('# TYPE cursor_bridge_turns_total counter');
    const samples = parsePrometheusText(text);
    const turns = (outcome: string) =>
      sumSamples(samples, 'cursor_bridge_turns_total', { protocol: 'anthropic', outcome });
    expect([turns('tool-use'), turns('finished'), turns('failed'), turns('cancelled')]).toEqual([1, 1, 0, 0]);
    expect(sumSamples(samples, 'cursor_bridge_turn_plans_total', { plan: 'replay' })).toBe(1);
    expect(sumSamples(samples, 'cursor_bridge_turn_plans_total', { plan: 'resume' })).toBe(1);
    expect(
      sumSamples(samples, 'cursor_bridge_time_to_first_byte_seconds_count', { protocol: 'anthropic' }),
    ).toBe(2);
    expect(sumSamples(samples, 'cursor_bridge_turn_duration_seconds_count', { protocol: 'anthropic' })).toBe(
      2,
    );
    expect(sumSamples(samples, 'cursor_bridge_tool_call_latency_seconds_count')).toBe(1);
    // Parked 40 ms before the event, by the clock that stands still: exactly that, in seconds.
    expect(sumSamples(samples, 'cursor_bridge_tool_call_latency_seconds_sum')).toBeCloseTo(0.04, 9);
    expect(sumSamples(samples, 'cursor_bridge_tool_call_latency_seconds_bucket', { le: '0.025' })).toBe(0);
    expect(sumSamples(samples, 'cursor_bridge_tool_call_latency_seconds_bucket', { le: '0.05' })).toBe(1);
    expect(bridgeCounters(text)).toMatchObject({
      sessions: 1,
      inFlightSessions: 0,
      parkedCalls: 0,
      evicted: 0,
    });
  });

  it('keeps one registry per bridge and adds the default process metrics when asked', async () => {
    const plain = new BridgeMetrics();
    const withProcess = new BridgeMetrics({ processMetrics: true });
    plain.sessionEvicted();
    expect(
      sumSamples(parsePrometheusText(await withProcess.render()), 'cursor_bridge_session_evictions_total'),
    ).toBe(0);
    expect(
      sumSamples(parsePrometheusText(await plain.render()), 'cursor_bridge_session_evictions_total'),
    ).toBe(1);
    expect(await withProcess.render()).toContain('process_cpu_user_seconds_total');
    expect(await plain.render()).not.toContain('process_cpu_user_seconds_total');
  });

  it('counts scratch-path violations and corrections monotonically, not summed over live sessions', async () => {
    const metrics = new BridgeMetrics();
    const workspace = '/tmp/cb-workspaces/' + 'a'.repeat(32);
    const guards = new ScratchPathGuards({
      logger: pino({ level: 'silent' }),
      scratchRoot: '/tmp/cb-workspaces',
      maxCorrections: 1,
      onViolation: (corrected) => metrics.scratchPathViolation(corrected),
    });
    const call = { toolCallId: 't1', toolName: 'Bash', input: { command: `ls ${workspace}` } };
    const context = { workspaceDir: workspace, hostRoot: '/home/me/proj' };
    guards.check('a'.repeat(32), call, context);
    guards.check('a'.repeat(32), call, context);
    guards.check('a'.repeat(32), { ...call, input: { command: 'ls /home/me/proj' } }, context);
    guards.forget('a'.repeat(32));
    expect(await metrics.snapshot()).toMatchObject({ scratchPathViolations: 2, scratchPathCorrections: 1 });
  });
});
