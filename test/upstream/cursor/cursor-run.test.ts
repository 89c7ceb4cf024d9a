import type { InteractionUpdate, Run, RunResult, SDKMessage } from '@cursor/sdk';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AsyncQueue } from '../../../lib/async-queue.js';
import type { ParkedCall } from '../../../mcp/index.js';
import { CursorRun } from '../../../src/upstream/cursor/cursor-run.js';
import { RunToolCalls } from '../../../src/upstream/cursor/host-tools/run-tool-calls.js';
import type { UpstreamEvent } from '../../../src/upstream/upstream-port.js';

/** The parts of the SDK's Run that CursorRun uses, driven by the test. */
const createFakeRun = () => {
  const stream = new AsyncQueue<SDKMessage>();
  let finish!: (result: RunResult) => void;
  const result = new Promise<RunResult>((resolve) => (finish = resolve));
  let cancelled = false;
  const run = {
    id: 'run-1',
    stream: () => stream,
    wait: () => result,
    cancel: async () => {
      cancelled = true;
      finish({ id: 'run-1', status: 'cancelled' });
      stream.end();
    },
  } as unknown as Run;
  return {
    run,
    stream,
    finish: (value: Omit<RunResult, 'id'>) => {
      stream.end();
      finish({ id: 'run-1', ...value });
    },
    get cancelled() {
      return cancelled;
    },
  };
};

const createRun = (
  bounds: { firstEventTimeoutMs?: number; idleTimeoutMs?: number; maxPendingChars?: number } = {},
) => {
  const resolved: string[] = [];
  const settled: string[] = [];
  const cursorRun = new CursorRun({
    ...bounds,
    logger: pino({ level: 'silent' }),
    toolCalls: (sink) =>
      new RunToolCalls({
        ...sink,
        batchQuietMs: 20,
        broker: {
          resolve: (id) => (resolved.push(id), true),
          settleAll: (reason) => void settled.push(reason),
        },
      }),
  });
  const fake = createFakeRun();
  cursorRun.attach(fake.run);
  const delta = (update: InteractionUpdate) => cursorRun.onDelta({ update });
  return { cursorRun, fake, delta, resolved, settled };
};

const drain = async (run: CursorRun): Promise<UpstreamEvent[]> => {
  const events: UpstreamEvent[] = [];
  for await (const event of run.events) events.push(event);
  return events;
};

/** Events available right now, without waiting for the run to end. */
const available = async (run: CursorRun, count: number): Promise<UpstreamEvent[]> => {
  const events: UpstreamEvent[] = [];
  for (let index = 0; index < count; index += 1) {
    const next = await run.events.next();
    if (next.done) break;
    events.push(next.value);
  }
  return events;
};

const parkedAt = 1_700_000_000_000;

/** A call as the tool host's broker announces it. */
const parkedCall = (toolCallId: string, toolName: string, args: Record<string, unknown>): ParkedCall => ({
  toolCallId,
  toolName,
  args,
  parkedAt,
});

const mcpCall = (toolName: string, args: Record<string, unknown>) =>
  ({ type: 'mcp', args: { providerIdentifier: 'custom-user-tools', toolName, args } }) as never;

/**
 * Fake clock and timers for the run's bounds (batch quiet period, silence watchdog); `setImmediate` stays
 * real, as the event-loop turn that releases held deltas and the watchdog's recheck use it.
 */
const useFakeClock = () => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });

/** Advance the fake clock by `ms`, then let what the fired timers queued (`setImmediate`, promises) run. */
const advance = async (ms: number) => {
  vi.advanceTimersByTime(ms);
  await new Promise((resolve) => setImmediate(resolve));
};

afterEach(() => {
  vi.useRealTimers();
});

describe('CursorRun', () => {
  it('merges onDelta and run.stream() without duplicating text or thinking', async () => {
    const { cursorRun, fake, delta } = createRun();
    delta({ type: 'thinking-delta', text: 'hmm' });
    fake.stream.push({ type: 'thinking', agent_id: 'a', run_id: 'r', text: 'hmm' });
    delta({ type: 'thinking-completed', thinkingDurationMs: 5 });
    fake.stream.push({ type: 'thinking', agent_id: 'a', run_id: 'r', text: '', thinking_duration_ms: 5 });
    delta({ type: 'text-delta', text: 'Hello' });
    fake.stream.push({
      type: 'assistant',
      agent_id: 'a',
      run_id: 'r',
      message: { role: 'assistant', content: [{ type: 'text', text: 'Hello' }] },
    });
    fake.stream.push({
      type: 'assistant',
      agent_id: 'a',
      run_id: 'r',
      message: { role: 'assistant', content: [{ type: 'text', text: ' world' }] },
    });
    delta({ type: 'text-delta', text: ' world' });
    delta({
      type: 'turn-ended',
      usage: { inputTokens: 10, outputTokens: 2, cacheReadTokens: 4, cacheWriteTokens: 0 },
    });
    fake.finish({ status: 'finished' });
    expect(await drain(cursorRun)).toEqual([
      { type: 'reasoning-delta', text: 'hmm' },
      { type: 'reasoning-end' },
      // Nobody read in between: the two deltas reach the consumer as one.
      { type: 'text-delta', text: 'Hello world' },
      { type: 'usage', usage: { inputTokens: 6, outputTokens: 2, cacheReadTokens: 4, cacheWriteTokens: 0 } },
      { type: 'end', status: 'finished' },
    ]);
  });

  it('merges deltas only while the consumer is behind, and never across another event', async () => {
    const { cursorRun, fake, delta } = createRun();
    // A consumer waiting for each event gets every delta as it came.
    for (const text of ['a', 'b']) {
      const next = cursorRun.events.next();
      delta({ type: 'text-delta', text });
      expect(await next).toEqual({ done: false, value: { type: 'text-delta', text } });
    }
    // Behind: a thousand deltas wait as one event …
    for (let index = 0; index < 1000; index += 1) delta({ type: 'text-delta', text: 'x' });
    expect(cursorRun.events.size).toBe(1);
    // … taking it ends the merge: the next delta is queued on its own.
    expect(await cursorRun.events.next()).toEqual({
      done: false,
      value: { type: 'text-delta', text: 'x'.repeat(1000) },
    });
    delta({ type: 'thinking-delta', text: 't1' });
    delta({ type: 'thinking-delta', text: 't2' });
    delta({ type: 'text-delta', text: 'c' });
    delta({ type: 'text-delta', text: 'd' });
    cursorRun.toolCalls.parked(parkedCall('call-1', 'Bash', {}));
    delta({ type: 'text-delta', text: 'e' });
    fake.finish({ status: 'finished' });
    expect(await drain(cursorRun)).toEqual([
      { type: 'reasoning-delta', text: 't1t2' },
      { type: 'reasoning-end' },
      { type: 'text-delta', text: 'cd' },
      { type: 'tool-call', toolCallId: 'call-1', toolName: 'Bash', input: {}, parkedAt },
      { type: 'text-delta', text: 'e' },
      { type: 'end', status: 'finished' },
    ]);
  });

  it('hands a consumer that keeps up the first delta of an event-loop turn at once and the rest of the turn as one event', async () => {
    const { cursorRun, fake, delta } = createRun();
    const received: Array<{ event: UpstreamEvent; turn: number }> = [];
    let turn = 0;
    const consumer = (async () => {
      for await (const event of cursorRun.events) received.push({ event, turn });
    })();
    // As the SDK delivers one backend read: every delta in its own microtask chain, long enough for the
    // consumer to take each one in between (without holding, each would be an event of its own).
    const settle = async (): Promise<void> => {
      for (let step = 0; step < 8; step += 1) await Promise.resolve();
    };
    const burst = async (prefix: string, count: number): Promise<void> => {
      for (let index = 0; index < count; index += 1) {
        delta({ type: 'text-delta', text: `${prefix}${index} ` });
        await settle();
      }
    };
    await burst('a', 500);
    // The first delta left in the same turn; the rest is held until the turn ends.
    expect(received).toEqual([{ event: { type: 'text-delta', text: 'a0 ' }, turn: 0 }]);
    await new Promise((resolve) => setImmediate(resolve));
    turn = 1;
    // Thinking then text in one turn: each kind's first delta goes at once, in order.
    delta({ type: 'thinking-delta', text: 't0 ' });
    await settle();
    delta({ type: 'thinking-delta', text: 't1 ' });
    await settle();
    delta({ type: 'text-delta', text: 'b0 ' });
    await settle();
    await burst('c', 3);
    await new Promise((resolve) => setImmediate(resolve));
    turn = 2;
    fake.finish({ status: 'finished' });
    await consumer;
    const a = Array.from({ length: 499 }, (_, index) => `a${index + 1} `).join('');
    expect(received).toEqual([
      { event: { type: 'text-delta', text: 'a0 ' }, turn: 0 },
      { event: { type: 'text-delta', text: a }, turn: 0 },
      { event: { type: 'reasoning-delta', text: 't0 ' }, turn: 1 },
      // Text closes the thinking: the held thinking delta goes first, then the end of thinking.
      { event: { type: 'reasoning-delta', text: 't1 ' }, turn: 1 },
      { event: { type: 'reasoning-end' }, turn: 1 },
      { event: { type: 'text-delta', text: 'b0 ' }, turn: 1 },
      { event: { type: 'text-delta', text: 'c0 c1 c2 ' }, turn: 1 },
      { event: { type: 'end', status: 'finished' }, turn: 2 },
    ]);
  });

  it('swallows what an SDK retry replays and passes on what is new', async () => {
    const { cursorRun, fake, delta } = createRun();
    delta({ type: 'step-started', stepId: 1 });
    delta({ type: 'text-delta', text: 'partial ' });
    delta({ type: 'step-started', stepId: 1 });
    delta({ type: 'text-delta', text: 'partial ' });
    delta({ type: 'text-delta', text: 'answer' });
    fake.finish({ status: 'finished' });
    const text = (await drain(cursorRun)).flatMap((event) =>
      event.type === 'text-delta' ? [event.text] : [],
    );
    expect(text.join('')).toBe('partial answer');
  });

  it('ends a tool batch when every listed and started call has parked, with no timer advance', async () => {
    useFakeClock();
    const { cursorRun, delta } = createRun();
    delta({ type: 'tool-call-started', callId: 'a', modelCallId: 'm1', toolCall: mcpCall('Bash', { c: 1 }) });
    delta({ type: 'tool-call-started', callId: 'b', modelCallId: 'm2', toolCall: mcpCall('Bash', { c: 2 }) });
    delta({ type: 'tool-requests-listed', callCount: 2 });
    cursorRun.toolCalls.parked(parkedCall('a', 'Bash', { c: 1 }));
    cursorRun.toolCalls.parked(parkedCall('a', 'Bash', { c: 1 }));
    cursorRun.toolCalls.parked(parkedCall('b', 'Bash', { c: 2 }));
    expect(cursorRun.events.size).toBe(3);
    expect(await available(cursorRun, 3)).toEqual([
      { type: 'tool-call', toolCallId: 'a', toolName: 'Bash', input: { c: 1 }, parkedAt },
      { type: 'tool-call', toolCallId: 'b', toolName: 'Bash', input: { c: 2 }, parkedAt },
      { type: 'tool-batch-end' },
    ]);
    expect(cursorRun.pendingToolCalls()).toEqual(['a', 'b']);
  });

  it('ends the batch the moment a listing comes after its call parked, with no timer advance', async () => {
    useFakeClock();
    const { cursorRun, delta } = createRun();
    delta({ type: 'tool-call-started', callId: 'a', modelCallId: 'm1', toolCall: mcpCall('Bash', {}) });
    cursorRun.toolCalls.parked(parkedCall('a', 'Bash', {}));
    expect(await available(cursorRun, 1)).toEqual([
      { type: 'tool-call', toolCallId: 'a', toolName: 'Bash', input: {}, parkedAt },
    ]);
    expect(cursorRun.events.size).toBe(0);
    delta({ type: 'tool-requests-listed', callCount: 1 });
    expect(cursorRun.events.size).toBe(1);
    expect(await available(cursorRun, 1)).toEqual([{ type: 'tool-batch-end' }]);
  });

  it('a listing between two parks ends the batch at the second, with no timer advance', async () => {
    useFakeClock();
    const { cursorRun, delta } = createRun();
    delta({ type: 'tool-call-started', callId: 'a', modelCallId: 'm1', toolCall: mcpCall('Bash', { c: 1 }) });
    delta({ type: 'tool-call-started', callId: 'b', modelCallId: 'm2', toolCall: mcpCall('Bash', { c: 2 }) });
    cursorRun.toolCalls.parked(parkedCall('a', 'Bash', { c: 1 }));
    delta({ type: 'tool-requests-listed', callCount: 2 });
    expect(cursorRun.events.size).toBe(1);
    cursorRun.toolCalls.parked(parkedCall('b', 'Bash', { c: 2 }));
    expect((await available(cursorRun, 3)).map((event) => event.type)).toEqual([
      'tool-call',
      'tool-call',
      'tool-batch-end',
    ]);
  });

  it('a listing of more calls than have parked stops the quiet period from ending the batch (batchQuietMs 20)', async () => {
    useFakeClock();
    const { cursorRun, delta } = createRun();
    delta({ type: 'tool-call-started', callId: 'a', modelCallId: 'm1', toolCall: mcpCall('Bash', { c: 1 }) });
    cursorRun.toolCalls.parked(parkedCall('a', 'Bash', { c: 1 }));
    delta({ type: 'tool-requests-listed', callCount: 2 });
    await advance(1_000);
    expect((await available(cursorRun, 1)).map((event) => event.type)).toEqual(['tool-call']);
    expect(cursorRun.events.size).toBe(0);
    delta({ type: 'tool-call-started', callId: 'b', modelCallId: 'm2', toolCall: mcpCall('Bash', { c: 2 }) });
    cursorRun.toolCalls.parked(parkedCall('b', 'Bash', { c: 2 }));
    expect((await available(cursorRun, 2)).map((event) => event.type)).toEqual([
      'tool-call',
      'tool-batch-end',
    ]);
  });

  it('matches parked calls whose toolCallId differs from the started callId by tool and arguments', async () => {
    const { cursorRun, delta } = createRun();
    delta({
      type: 'tool-call-started',
      callId: 'started-1',
      modelCallId: 'm1',
      toolCall: mcpCall('Read', { path: '/x' }),
    });
    delta({ type: 'tool-requests-listed', callCount: 1 });
    cursorRun.toolCalls.parked(parkedCall('exec-1', 'Read', { path: '/x' }));
    expect(await available(cursorRun, 2)).toEqual([
      { type: 'tool-call', toolCallId: 'exec-1', toolName: 'Read', input: { path: '/x' }, parkedAt },
      { type: 'tool-batch-end' },
    ]);
  });

  it('knows a started call that names its tool only as `custom-user-tools-<tool>` (no toolName, no provider)', () => {
    const { cursorRun, delta } = createRun();
    const qualified = {
      type: 'mcp',
      args: { name: 'custom-user-tools-Read', args: { path: '/x' } },
    } as never;
    delta({ type: 'tool-call-started', callId: 's1', modelCallId: 'm1', toolCall: qualified });
    expect(cursorRun.toolCalls.claim('Read', { path: '/x' })).toBe('s1');
  });

  it('an execute without toolCallId parks under the started call it claims, and the batch ends', async () => {
    const { cursorRun, delta } = createRun();
    delta({
      type: 'tool-call-started',
      callId: 's1',
      modelCallId: 'm1',
      toolCall: mcpCall('Bash', { c: 1 }),
    });
    delta({
      type: 'tool-call-started',
      callId: 's2',
      modelCallId: 'm2',
      toolCall: mcpCall('Bash', { c: 2 }),
    });
    delta({ type: 'tool-requests-listed', callCount: 2 });
    const second = cursorRun.toolCalls.claim('Bash', { c: 2 });
    const first = cursorRun.toolCalls.claim('Bash', { c: 1 });
    expect([first, second]).toEqual(['s1', 's2']);
    cursorRun.toolCalls.parked(parkedCall('s2', 'Bash', { c: 2 }));
    cursorRun.toolCalls.parked(parkedCall('s1', 'Bash', { c: 1 }));
    // Announced in the order the model made them, not the order they parked in.
    expect(await available(cursorRun, 3)).toEqual([
      { type: 'tool-call', toolCallId: 's1', toolName: 'Bash', input: { c: 1 }, parkedAt },
      { type: 'tool-call', toolCallId: 's2', toolName: 'Bash', input: { c: 2 }, parkedAt },
      { type: 'tool-batch-end' },
    ]);
  });

  it('holds a call that parks before an earlier call of its batch until that one parks', async () => {
    const { cursorRun, delta } = createRun();
    delta({ type: 'tool-call-started', callId: 'a', modelCallId: 'm1', toolCall: mcpCall('Bash', { c: 1 }) });
    delta({ type: 'tool-call-started', callId: 'b', modelCallId: 'm2', toolCall: mcpCall('Bash', { c: 2 }) });
    delta({ type: 'tool-call-started', callId: 'c', modelCallId: 'm3', toolCall: mcpCall('Bash', { c: 3 }) });
    delta({ type: 'tool-requests-listed', callCount: 3 });
    cursorRun.toolCalls.parked(parkedCall('c', 'Bash', { c: 3 }));
    cursorRun.toolCalls.parked(parkedCall('b', 'Bash', { c: 2 }));
    expect(cursorRun.events.size).toBe(0);
    cursorRun.toolCalls.parked(parkedCall('a', 'Bash', { c: 1 }));
    expect(
      (await available(cursorRun, 4)).map((event) => ('toolCallId' in event ? event.toolCallId : event.type)),
    ).toEqual(['a', 'b', 'c', 'tool-batch-end']);
  });

  it('announces a held call after the quiet period (batchQuietMs 20) when the earlier call never parks', async () => {
    useFakeClock();
    const { cursorRun, delta } = createRun();
    delta({ type: 'tool-call-started', callId: 'a', modelCallId: 'm1', toolCall: mcpCall('Bash', { c: 1 }) });
    delta({ type: 'tool-call-started', callId: 'b', modelCallId: 'm2', toolCall: mcpCall('Bash', { c: 2 }) });
    cursorRun.toolCalls.parked(parkedCall('b', 'Bash', { c: 2 }));
    await advance(19);
    expect(cursorRun.events.size).toBe(0);
    await advance(1);
    expect(await available(cursorRun, 1)).toEqual([
      { type: 'tool-call', toolCallId: 'b', toolName: 'Bash', input: { c: 2 }, parkedAt },
    ]);
  });

  it('without a listing signal, ends the batch after the quiet period (batchQuietMs 20)', async () => {
    useFakeClock();
    const { cursorRun, delta } = createRun();
    delta({ type: 'tool-call-started', callId: 'a', modelCallId: 'm1', toolCall: mcpCall('Bash', {}) });
    cursorRun.toolCalls.parked(parkedCall('a', 'Bash', {}));
    expect(await available(cursorRun, 1)).toEqual([
      { type: 'tool-call', toolCallId: 'a', toolName: 'Bash', input: {}, parkedAt },
    ]);
    await advance(19);
    expect(cursorRun.events.size).toBe(0);
    await advance(1);
    expect(await available(cursorRun, 1)).toEqual([{ type: 'tool-batch-end' }]);
  });

  it('resolves parked calls through the host and reports unknown ids', () => {
    const { cursorRun, resolved } = createRun();
    cursorRun.toolCalls.parked(parkedCall('a', 'Bash', {}));
    expect(
      cursorRun.resolveToolCalls([
        { toolCallId: 'a', content: [{ type: 'text', text: 'ok' }], isError: false },
        { toolCallId: 'zzz', content: [], isError: false },
      ]),
    ).toEqual({ unknown: ['zzz'] });
    expect(resolved).toEqual(['a']);
    expect(cursorRun.pendingToolCalls()).toEqual([]);
  });

  it('maps a run failure to an error event', async () => {
    const { cursorRun, fake, delta } = createRun();
    delta({ type: 'text-delta', text: 'x' });
    fake.finish({ status: 'error', error: { message: '[unauthenticated] Invalid API key' } });
    expect((await drain(cursorRun)).at(-1)).toMatchObject({
      type: 'error',
      error: { kind: 'authentication', retryable: false },
    });
  });

  it('cancels for real: settles parked calls and ends as cancelled', async () => {
    const { cursorRun, fake, settled } = createRun();
    cursorRun.toolCalls.parked(parkedCall('a', 'Bash', {}));
    await cursorRun.cancel();
    expect(fake.cancelled).toBe(true);
    expect(settled.length).toBeGreaterThan(0);
    expect((await drain(cursorRun)).at(-1)).toEqual({ type: 'end', status: 'cancelled' });
    expect(cursorRun.pendingToolCalls()).toEqual([]);
  });

  it('ends a run silent past the first-event bound with a retryable error and cancels it', async () => {
    useFakeClock();
    const { cursorRun, fake } = createRun({ firstEventTimeoutMs: 50 });
    await advance(49);
    expect(fake.cancelled).toBe(false);
    expect(cursorRun.events.size).toBe(0);
    await advance(1);
    const events = await drain(cursorRun);
    expect(events).toEqual([
      {
        type: 'error',
        error: expect.objectContaining({
          kind: 'overloaded',
          retryable: true,
          message: expect.stringMatching(/^Cursor sent no event within 50 ms/),
        }),
      },
    ]);
    expect(fake.cancelled).toBe(true);
  });

  it('bounds the silence between events, but not while a tool call is parked', async () => {
    useFakeClock();
    const { cursorRun, fake, delta } = createRun({ firstEventTimeoutMs: 60, idleTimeoutMs: 60 });
    delta({ type: 'text-delta', text: 'a' });
    delta({
      type: 'tool-call-started',
      callId: 'a',
      toolCall: { type: 'mcp', args: { toolName: 'Bash', args: {} } },
    } as unknown as InteractionUpdate);
    cursorRun.toolCalls.parked(parkedCall('a', 'Bash', {}));
    await advance(60_000);
    expect(fake.cancelled).toBe(false);
    // The result resumes the bound: the backend owes the next event within 60 ms of it.
    cursorRun.resolveToolCalls([{ toolCallId: 'a', content: [], isError: false }]);
    await advance(59);
    expect(fake.cancelled).toBe(false);
    await advance(1);
    const events = await drain(cursorRun);
    expect(events.at(-1)).toMatchObject({
      type: 'error',
      error: { kind: 'overloaded', message: expect.stringMatching(/in the middle of the answer/) },
    });
    expect(fake.cancelled).toBe(true);
  });
});

/**
 * The SDK may keep what a run was handed — the send's options with `onDelta`, the run whose stream and
 * result the run follows — after the run ended (it keeps a run's request context while its own work on it
 * goes on). Modelled here by an SDK run whose stream never ends and, but for the case that finishes it,
 * whose result never comes, all held by the test as the SDK would hold them.
 */
describe('CursorRun release', () => {
  const ways = {
    finished: async (run: CursorRun, settle: (result: Omit<RunResult, 'id'>) => void) => {
      settle({ status: 'finished' });
      await drain(run);
    },
    cancelled: async (run: CursorRun, settle: (result: Omit<RunResult, 'id'>) => void) => {
      const cancelling = run.cancel();
      settle({ status: 'cancelled' });
      await cancelling;
    },
    'went silent past its bound': async (run: CursorRun) => {
      useFakeClock();
      await advance(50);
      await drain(run);
    },
  };

  it.each(Object.keys(ways) as Array<keyof typeof ways>)(
    'is not kept by what the SDK keeps once it %s',
    async (way) => {
      setFlagsFromString('--expose-gc');
      const gc = runInNewContext('gc') as () => void;
      const stream = new AsyncQueue<SDKMessage>();
      let settle!: (result: RunResult) => void;
      const result = new Promise<RunResult>((resolve) => (settle = resolve));
      const sdkRun = { id: 'run-1', stream: () => stream, wait: () => result, cancel: async () => {} };
      /** What the SDK keeps: the send's options and its run. */
      const kept: { onDelta?: CursorRun['onDelta']; run: typeof sdkRun } = { run: sdkRun };
      const finishOne = async (): Promise<WeakRef<CursorRun>> => {
        const run = new CursorRun({
          logger: pino({ level: 'silent' }),
          drainMs: 1,
          firstEventTimeoutMs: 50,
          toolCalls: (sink) =>
            new RunToolCalls({
              ...sink,
              batchQuietMs: 20,
              broker: { resolve: () => true, settleAll: () => {} },
            }),
        });
        kept.onDelta = run.onDelta;
        run.attach(sdkRun as unknown as Run);
        if (way !== 'went silent past its bound') run.onDelta({ update: { type: 'text-delta', text: 'a' } });
        await ways[way](run, (value) => settle({ id: 'run-1', ...value }));
        expect(run.finished).toBe(true);
        return new WeakRef(run);
      };
      const finished = await finishOne();
      vi.useRealTimers();
      // A WeakRef's target stays alive until the job that made it ended.
      await new Promise((resolve) => setImmediate(resolve));
      gc();
      expect(finished.deref()).toBeUndefined();
      // What the SDK keeps was reachable all along (and a late delta through it goes nowhere).
      kept.onDelta?.({ update: { type: 'text-delta', text: 'late' } });
      expect(kept.run.stream()).toBe(stream);
    },
  );
});

describe('CursorRun backpressure', () => {
  it('pauses the backend once the consumer is behind by the bound, and resumes when it took half of it', async () => {
    useFakeClock();
    const { cursorRun, fake, delta } = createRun({ maxPendingChars: 100, idleTimeoutMs: 50 });
    delta({ type: 'text-delta', text: 'x'.repeat(60) });
    delta({ type: 'thinking-delta', text: 'r' });
    expect(cursorRun.flow.paused).toBe(false);
    delta({ type: 'text-delta', text: 'y'.repeat(50) });
    expect(cursorRun.flow.paused).toBe(true);
    // The pause is the consumer's silence, not the backend's: the silence bound does not run.
    await advance(60_000);
    expect((await cursorRun.events.next()).value).toEqual({ type: 'text-delta', text: 'x'.repeat(60) });
    // 51 pending is still more than half of the bound.
    expect(cursorRun.flow.paused).toBe(true);
    expect((await cursorRun.events.next()).value).toEqual({ type: 'reasoning-delta', text: 'r' });
    expect(cursorRun.flow.paused).toBe(false);
    fake.finish({ status: 'finished' });
    const events = await drain(cursorRun);
    expect(events).toEqual([
      { type: 'reasoning-end' },
      { type: 'text-delta', text: 'y'.repeat(50) },
      { type: 'end', status: 'finished' },
    ]);
  });

  it('never stays paused once the run ended', async () => {
    const { cursorRun, fake, delta } = createRun({ maxPendingChars: 10 });
    delta({ type: 'text-delta', text: 'x'.repeat(11) });
    delta({ type: 'text-delta', text: 'x'.repeat(11) });
    expect(cursorRun.flow.paused).toBe(true);
    fake.finish({ status: 'finished' });
    await vi.waitFor(() => expect(cursorRun.flow.paused).toBe(false), { timeout: 30_000, interval: 10 });
  });
});
