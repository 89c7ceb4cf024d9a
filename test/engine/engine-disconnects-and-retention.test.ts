import { afterEach, describe, expect, it, vi } from 'vitest';
import { pino } from 'pino';
import { TurnCoalescer } from '../../src/engine/turn-coalescer.js';
import type { TurnEvent } from '../../src/turn/turn-event.js';
import type { UpstreamSessionOptions } from '../../src/upstream/upstream-port.js';
import { createGate, never as neverSettles } from '../helpers/gate.js';
import {
  assistant,
  collect,
  createTestEngine,
  never,
  readUntil,
  request,
  sleep,
  textOf,
  toolResult,
  user,
  withId,
} from '../helpers/engine-helpers.js';

/** The engine's clock and timers (and the scripts' delays) are fake here; the test moves them. */
const useFakeClock = () =>
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });

/** Advance the fake clock by `ms`, then let every promise that became due run (`setImmediate` is real). */
const advance = async (ms: number): Promise<void> => {
  await vi.advanceTimersByTimeAsync(ms);
  await new Promise((resolve) => setImmediate(resolve));
};

/** A safety net for what the engine does after the client left, never a speed claim. */
const eventually = { timeout: 30_000, interval: 10 };

afterEach(() => {
  vi.useRealTimers();
});

const toolCallIds = (events: TurnEvent[]): string[] =>
  events.flatMap((event) => (event.type === 'tool-call' ? [event.toolCallId] : []));

/** A run that emits one tool call, ends its batch 300 ms later, then echoes the result. */
const toolRun = () =>
  createTestEngine([
    { type: 'tool-call', toolCallId: 'call-1', toolName: 'Bash', input: { command: 'ls' } },
    { type: 'delay', ms: 300 },
    { type: 'tool-batch-end' },
    { type: 'await-tool-results' },
    {
      type: 'emit',
      events: ({ toolResults }) => [
        { type: 'text-delta', text: `got ${toolResults.map((r) => r.toolCallId).join(',')}` },
        { type: 'end', status: 'finished' },
      ],
    },
  ]);

describe('a stream cut after a tool call keeps the call', () => {
  it('the parked run survives the disconnect; the retry replays the same id; the result resumes the run', async () => {
    useFakeClock();
    const { engine, upstream } = toolRun();
    const opening = () => request([user('list files')], withId('s-7'));
    const abort = new AbortController();
    const cut = await readUntil(
      await engine.handleTurn(opening(), abort.signal),
      abort,
      (event) => event.type === 'tool-call',
    );
    expect(toolCallIds(cut)).toEqual(['call-1']);
    // The batch ends after the cut: the run is not cancelled, it parks.
    await advance(300);
    expect(upstream.calls[0]?.cancelled).toBe(false);
    const retry = await collect(await engine.handleTurn(opening(), never));
    expect(toolCallIds(retry)).toEqual(['call-1']);
    expect(retry.at(-1)).toMatchObject({ type: 'turn-end', stopReason: 'tool-use' });
    expect(upstream.calls).toHaveLength(1);
    const resumed = await collect(
      await engine.handleTurn(
        request(
          [user('list files'), assistant('', [{ id: 'call-1', name: 'Bash' }]), toolResult('call-1', 'a b')],
          withId('s-7'),
        ),
        never,
      ),
    );
    expect(textOf(resumed)).toBe('got call-1');
    expect(upstream.calls).toHaveLength(1);
    expect(upstream.calls[0]?.toolResults.map((result) => result.toolCallId)).toEqual(['call-1']);
    expect(await engine.metrics()).toMatchObject({ failedTurns: 0 });
    await engine.close();
  });

  it('an identical re-send after a complete tool-call answer replays the same id (the tool runs once)', async () => {
    const { engine, upstream } = toolRun();
    const opening = () => request([user('list files')], withId('s-7b'));
    const first = await collect(await engine.handleTurn(opening(), never));
    const again = await collect(await engine.handleTurn(opening(), never));
    expect(toolCallIds(first)).toEqual(['call-1']);
    expect(again).toEqual(first);
    expect(upstream.calls).toHaveLength(1);
    await engine.close();
  });

  it('a cut before any tool call still cancels the run', async () => {
    const { engine, upstream } = createTestEngine([
      { type: 'text-delta', text: 'thinking about it' },
      // Only the cancel ends this wait.
      { type: 'wait', until: neverSettles },
      { type: 'tool-call', toolCallId: 'call-1', toolName: 'Bash', input: {} },
      { type: 'tool-batch-end' },
    ]);
    const abort = new AbortController();
    await readUntil(
      await engine.handleTurn(request([user('q')], withId('s-7c')), abort.signal),
      abort,
      (event) => event.type === 'text-delta',
    );
    await expect.poll(() => upstream.calls[0]?.cancelled, eventually).toBe(true);
    await engine.close();
  });
});

describe('a dropped streaming turn does not poison its non-streaming retry', () => {
  it('a client gone while the agent is created → the non-streaming retry 1 s later gets the answer', async () => {
    const { engine, upstream } = createTestEngine([
      { type: 'text-delta', text: 'fine' },
      { type: 'end', status: 'finished' },
    ]);
    // The agent is created once the client is gone.
    const creating = createGate();
    const created = createGate();
    const create = upstream.createSession.bind(upstream);
    upstream.createSession = async (options: UpstreamSessionOptions) => {
      creating.open();
      await created.opened;
      return create(options);
    };
    const abort = new AbortController();
    const dropped = await engine.handleTurn(request([user('hello')], withId('s-5')), abort.signal);
    const reading = collect(dropped);
    await creating.opened;
    abort.abort();
    created.open();
    expect(await reading).toEqual([]);
    useFakeClock();
    await advance(1_000);
    const retry = await collect(
      await engine.handleTurn(request([user('hello')], { ...withId('s-5'), stream: false }), never),
    );
    expect(retry.some((event) => event.type === 'error')).toBe(false);
    expect(textOf(retry)).toBe('fine');
    expect(await engine.metrics()).toMatchObject({ failedTurns: 0 });
    await engine.close();
  });
});

describe('the session cap is configurable and its evictions are visible', () => {
  const finished = [
    { type: 'text-delta' as const, text: 'ok' },
    { type: 'end' as const, status: 'finished' as const },
  ];

  it('50 conversations round-robin under a cap of 50 evict nothing; under 32, each eviction with history is logged once at info', async () => {
    const lines: Array<{ level: number; msg: string; session?: string; reason?: string }> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    for (const maxSessions of [50, 32]) {
      lines.length = 0;
      const { engine } = createTestEngine(finished, { maxSessions, logger });
      for (let round = 0; round < 2; round += 1) {
        for (let index = 0; index < 50; index += 1) {
          const history =
            round === 0 ? [user(`q${index}`)] : [user(`q${index}`), assistant('ok'), user('more')];
          await collect(await engine.handleTurn(request(history, withId(`c-${index}`)), never));
        }
      }
      const evictions = lines.filter((line) => line.msg.startsWith('evicted'));
      const { evicted } = await engine.metrics();
      if (maxSessions === 50) {
        expect(evicted).toBe(0);
        expect(evictions).toEqual([]);
      } else {
        // 18 over the cap in round one, then every turn of round two evicts one.
        expect(evicted).toBe(18 + 50);
        expect(evictions).toHaveLength(evicted);
        expect(new Set(evictions.map((line) => line.session)).size).toBe(evictions.length);
        expect(evictions.every((line) => line.level === 30 && line.reason === 'cap')).toBe(true);
      }
      await engine.close();
    }
  });
});

describe('the coalescer keeps committed work and bounds what it retains', () => {
  type Event = { kind: 'text' | 'call' | 'end'; text?: string };
  const producer = (events: Event[], gapMs: number) => {
    let cancelled = false;
    let pulled = 0;
    return {
      state: () => ({ cancelled, pulled }),
      start: () => ({
        events: (async function* () {
          for (const event of events) {
            if (cancelled) return;
            await sleep(gapMs);
            pulled += 1;
            yield event;
          }
        })(),
        cancel: async () => {
          cancelled = true;
        },
      }),
    };
  };
  const drain = async (events: AsyncIterable<Event>): Promise<Event[]> => {
    const out: Event[] = [];
    for await (const event of events) out.push(event);
    return out;
  };
  const options = {
    retainMs: 1_000,
    isTerminal: (event: Event) => event.kind === 'end',
    isCommitted: (event: Event) => event.kind === 'call',
    sizeOf: (event: Event) => event.text?.length ?? 0,
  };

  it('a committed flight is read to its end without subscribers and replayed; an orphan past its deadline is cancelled', async () => {
    useFakeClock();
    const coalescer = new TurnCoalescer<Event>({ ...options, orphanTimeoutMs: 150 });
    const work = producer([{ kind: 'call' }, { kind: 'text', text: 'x' }, { kind: 'end' }], 20);
    const first = coalescer.join('k', work.start)[Symbol.asyncIterator]();
    const firstEvent = first.next();
    await advance(20);
    expect((await firstEvent).value).toEqual({ kind: 'call' });
    await first.return?.();
    // Its last two events come 20 ms apart, well within the orphan deadline (150 ms after the leave).
    await advance(40);
    expect(work.state()).toEqual({ cancelled: false, pulled: 3 });
    // Past the orphan deadline (t = 170), within the replay window (1 s from its end at t = 60).
    await advance(200);
    expect(work.state()).toEqual({ cancelled: false, pulled: 3 });
    expect(await drain(coalescer.join('k', () => producer([], 0).start()))).toHaveLength(3);

    const stuck = producer([{ kind: 'call' }, { kind: 'text', text: 'late' }, { kind: 'end' }], 400);
    const second = coalescer.join('s', stuck.start)[Symbol.asyncIterator]();
    const secondEvent = second.next();
    await advance(400);
    await secondEvent;
    await second.return?.();
    await advance(149);
    expect(stuck.state()).toEqual({ cancelled: false, pulled: 1 });
    await advance(1);
    expect(stuck.state()).toEqual({ cancelled: true, pulled: 1 });
    const closing = coalescer.close();
    await advance(10_000);
    await closing;
  });

  it('a finished flight over the byte bound is not retained for replay', async () => {
    const coalescer = new TurnCoalescer<Event>({ ...options, maxBufferedBytes: 1_000 });
    const big = producer([{ kind: 'text', text: 'y'.repeat(1_500) }, { kind: 'end' }], 0);
    await drain(coalescer.join('big', big.start));
    expect(coalescer.finished('big')).toBeUndefined();
    const small = producer([{ kind: 'text', text: 'y'.repeat(500) }, { kind: 'end' }], 0);
    await drain(coalescer.join('small', small.start));
    expect(coalescer.finished('small')?.events).toHaveLength(2);
    await coalescer.close();
  });
});
