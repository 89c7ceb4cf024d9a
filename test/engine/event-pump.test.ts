import { describe, expect, it } from 'vitest';
import { AsyncQueue } from '../../lib/async-queue.js';
import { EventPump } from '../../src/engine/event-pump.js';
import type { TurnEvent } from '../../src/turn/turn-event.js';
import type { UpstreamEvent } from '../../src/upstream/upstream-port.js';

const queueOf = (events: UpstreamEvent[]): AsyncQueue<UpstreamEvent> => {
  const queue = new AsyncQueue<UpstreamEvent>();
  for (const event of events) queue.push(event);
  return queue;
};

const usage = { inputTokens: 1, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 0 };

describe('EventPump', () => {
  it('opens and closes blocks around deltas and ends at the tool batch, outcome set before turn-end', async () => {
    const pump = new EventPump({ tools: [] });
    const queue = queueOf([
      { type: 'reasoning-delta', text: 'think' },
      { type: 'text-delta', text: '' },
      { type: 'text-delta', text: 'a' },
      { type: 'text-delta', text: 'b' },
      { type: 'tool-call', toolCallId: 'c1', toolName: 'Bash', input: { command: 'ls' }, parkedAt: 0 },
      { type: 'usage', usage },
      { type: 'tool-batch-end' },
      { type: 'text-delta', text: 'after the boundary' },
    ]);
    const events: TurnEvent[] = [];
    for await (const event of pump.pump(queue)) {
      if (event.type === 'turn-end') expect(pump.outcome).toEqual({ kind: 'tool-use' });
      else expect(pump.outcome.kind).toBe('interrupted');
      events.push(event);
    }
    expect(events.map((event) => event.type)).toEqual([
      'reasoning-start',
      'reasoning-delta',
      'reasoning-end',
      'text-start',
      'text-delta',
      'text-delta',
      'text-end',
      'tool-input-start',
      'tool-input-delta',
      'tool-input-end',
      'tool-call',
      'usage',
      'turn-end',
    ]);
    expect(pump.output).toEqual({
      text: 'ab',
      toolCalls: [{ toolCallId: 'c1', toolName: 'Bash', input: { command: 'ls' } }],
      webSearches: [],
    });
    // Nothing past the boundary was read: the next request's response continues the same iterator.
    expect(queue.size).toBe(1);
  });

  it('reports a run that ended without a terminal event as a failure, after closing the open block', async () => {
    const pump = new EventPump({ tools: [] });
    const queue = queueOf([{ type: 'text-delta', text: 'partial' }]);
    queue.end();
    const events: TurnEvent[] = [];
    for await (const event of pump.pump(queue)) events.push(event);
    expect(events.map((event) => event.type)).toEqual(['text-start', 'text-delta', 'text-end', 'error']);
    expect(pump.outcome).toEqual({ kind: 'failed' });
  });

  it('tells of each call it forwards, and passes an upstream failure on to the consumer', async () => {
    const told: string[] = [];
    const pump = new EventPump({ tools: [], onToolCall: (call) => void told.push(call.toolCallId) });
    let reads = 0;
    const events: AsyncIterator<UpstreamEvent> = {
      next: async () => {
        reads += 1;
        if (reads === 1)
          return {
            done: false,
            value: { type: 'tool-call', toolCallId: 'c1', toolName: 'Bash', input: {}, parkedAt: 0 },
          };
        throw new Error('stream broke');
      },
    };
    const iterator = pump.pump(events);
    const types: string[] = [];
    await expect(
      (async () => {
        for (;;) {
          const next = await iterator.next();
          if (next.done === true) break;
          types.push(next.value.type);
        }
      })(),
    ).rejects.toThrow('stream broke');
    expect(types).toEqual(['tool-input-start', 'tool-input-delta', 'tool-input-end', 'tool-call']);
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
    expect(reads).toBe(2);
    expect(told).toEqual(['c1']);
    expect(pump.output.toolCalls).toMatchObject([{ toolCallId: 'c1', toolName: 'Bash' }]);
  });

  it('stops reading when the consumer stops', async () => {
    const pump = new EventPump({ tools: [] });
    const queue = queueOf([
      { type: 'text-delta', text: 'a' },
      { type: 'text-delta', text: 'b' },
    ]);
    const iterator = pump.pump(queue);
    expect(await iterator.next()).toEqual({ done: false, value: { type: 'text-start', id: 'text-0' } });
    await iterator.return?.();
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
    expect(queue.size).toBe(1);
  });

  it('hands out an event queued upstream within two microtasks', async () => {
    const pump = new EventPump({ tools: [] });
    const queue = new AsyncQueue<UpstreamEvent>();
    const iterator = pump.pump(queue);
    const first = iterator.next();
    let ticks = 0;
    let handedOut = false;
    void first.then(() => (handedOut = true));
    queue.push({ type: 'end', status: 'finished' });
    while (!handedOut && ticks < 50) {
      await Promise.resolve();
      ticks += 1;
    }
    // The queue resolves the pump's await (one), the pump's result its consumer's (two); an async generator took five.
    expect(ticks).toBeLessThanOrEqual(2);
    expect((await first).value).toMatchObject({ type: 'turn-end', stopReason: 'end' });
  });
});
