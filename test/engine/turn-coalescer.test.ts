import { afterEach, describe, expect, it, vi } from 'vitest';
import { TurnCoalescer, type CoalescedProducer } from '../../src/engine/turn-coalescer.js';
import { BridgeError } from '../../src/turn/turn-error.js';
import { createChannel } from '../helpers/producer-channel.js';

const iterate = (iterable: AsyncIterable<number>): AsyncIterator<number> => iterable[Symbol.asyncIterator]();

const take = async (iterator: AsyncIterator<number>, count: number): Promise<number[]> => {
  const out: number[] = [];
  for (let index = 0; index < count; index += 1) {
    const result = await iterator.next();
    if (result.done === true) break;
    out.push(result.value);
  }
  return out;
};

const drain = async (iterable: AsyncIterable<number>): Promise<number[]> => {
  const out: number[] = [];
  for await (const value of iterable) out.push(value);
  return out;
};

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

/** A safety net for what the coalescer does in the background, never a speed claim. */
const eventually = { timeout: 30_000, interval: 5 };

afterEach(() => {
  vi.useRealTimers();
});

describe('identical overlapping retries share one producer', () => {
  it('starts one producer and consumes it with one iterator; a joiner replays from the start', async () => {
    const coalescer = new TurnCoalescer<number>();
    const channel = createChannel();
    const start = vi.fn(() => channel.producer);
    const first = iterate(coalescer.join('turn', start));
    channel.push(1, 2);
    expect(await take(first, 2)).toEqual([1, 2]);
    const second = iterate(coalescer.join('turn', start));
    expect(await take(second, 2)).toEqual([1, 2]);
    channel.push(3);
    channel.end();
    expect(await take(first, 5)).toEqual([3]);
    expect(await take(second, 5)).toEqual([3]);
    expect(start).toHaveBeenCalledTimes(1);
    expect(channel.stats.iterators).toBe(1);
    expect(channel.stats.cancels).toBe(0);
  });

  it('keeps different keys apart', async () => {
    const coalescer = new TurnCoalescer<number>();
    const a = createChannel();
    const b = createChannel();
    a.push(1);
    a.end();
    b.push(2);
    b.end();
    expect(await drain(coalescer.join('a', () => a.producer))).toEqual([1]);
    expect(await drain(coalescer.join('b', () => b.producer))).toEqual([2]);
  });

  it('pulls the producer only on demand', async () => {
    const coalescer = new TurnCoalescer<number>();
    const channel = createChannel();
    channel.push(1, 2, 3, 4);
    const iterator = iterate(coalescer.join('turn', () => channel.producer));
    expect(await take(iterator, 1)).toEqual([1]);
    await tick();
    expect(channel.stats.pulls).toBeLessThanOrEqual(2);
    await iterator.return?.();
  });
});

describe('the replay buffer is bounded', () => {
  it('refuses a joiner once events were dropped, but serves the ones already attached', async () => {
    const coalescer = new TurnCoalescer<number>({ maxBufferedEvents: 3 });
    const channel = createChannel();
    const start = vi.fn(() => channel.producer);
    const first = iterate(coalescer.join('turn', start));
    const early = iterate(coalescer.join('turn', start));
    channel.push(1, 2, 3);
    expect(await take(first, 3)).toEqual([1, 2, 3]);
    expect(await take(early, 3)).toEqual([1, 2, 3]);
    channel.push(4, 5);
    expect(await take(first, 2)).toEqual([4, 5]);
    const late = iterate(coalescer.join('turn', start));
    await expect(late.next()).rejects.toSatisfy(
      (error: unknown) => error instanceof BridgeError && error.turnError.kind === 'overloaded',
    );
    channel.end();
    expect(await take(early, 5)).toEqual([4, 5]);
    expect(start).toHaveBeenCalledTimes(1);
  });

  it('waits for the slowest subscriber instead of dropping its events', async () => {
    const coalescer = new TurnCoalescer<number>({ maxBufferedEvents: 2 });
    const channel = createChannel();
    const fast = iterate(coalescer.join('turn', () => channel.producer));
    channel.push(1);
    expect(await take(fast, 1)).toEqual([1]);
    const slow = iterate(coalescer.join('turn', () => channel.producer));
    channel.push(2, 3, 4, 5);
    channel.end();
    expect(await take(fast, 1)).toEqual([2]);
    let fastDone = false;
    const fastRest = take(fast, 10).finally(() => (fastDone = true));
    await tick();
    // The buffer is full and the slow subscriber has read nothing: the pump waits.
    expect(fastDone).toBe(false);
    expect(channel.stats.pulls).toBe(2);
    expect(await take(slow, 10)).toEqual([1, 2, 3, 4, 5]);
    expect(await fastRest).toEqual([3, 4, 5]);
  });
});

describe('the last subscriber stopping cancels the producer for real', () => {
  it('does not cancel while another subscriber remains', async () => {
    const coalescer = new TurnCoalescer<number>();
    const channel = createChannel();
    const first = iterate(coalescer.join('turn', () => channel.producer));
    const second = iterate(coalescer.join('turn', () => channel.producer));
    channel.push(1);
    await take(first, 1);
    await take(second, 1);
    await first.return?.();
    expect(channel.stats.cancels).toBe(0);
    channel.push(2);
    channel.end();
    expect(await take(second, 5)).toEqual([2]);
    expect(channel.stats.cancels).toBe(0);
  });

  it.each([
    {
      name: 'iterator return()',
      stop: async (iterator: AsyncIterator<number>) => void (await iterator.return?.()),
    },
    {
      name: 'abort signal',
      stop: async (_: AsyncIterator<number>, controller: AbortController) => controller.abort(),
    },
  ])('cancels on the last $name and returns the producer iterator', async ({ stop }) => {
    const coalescer = new TurnCoalescer<number>();
    const channel = createChannel();
    const controller = new AbortController();
    const iterator = iterate(coalescer.join('turn', () => channel.producer, { signal: controller.signal }));
    channel.push(1);
    await take(iterator, 1);
    const pending = iterator.next();
    await stop(iterator, controller);
    expect(await pending).toEqual({ done: true, value: undefined });
    await vi.waitFor(() => expect(channel.stats.returns).toBe(1), eventually);
    expect(channel.stats.cancels).toBe(1);
    await vi.waitFor(() => expect(coalescer.has('turn')).toBe(false), eventually);
  });

  it('a subscriber stopped while its first next() attaches leaves at once', async () => {
    const coalescer = new TurnCoalescer<number>({ busyTimeoutMs: 200 });
    const first = createChannel();
    const controller = new AbortController();
    const iterator = iterate(
      coalescer.join('turn-1', () => first.producer, { signal: controller.signal, group: 'conversation' }),
    );
    // The join subscribes inside next(); the abort lands before next() hands the subscription back.
    const pending = iterator.next();
    controller.abort();
    expect(await pending).toEqual({ done: true, value: undefined });
    await vi.waitFor(() => expect(coalescer.has('turn-1')).toBe(false), eventually);
    // The conversation's next turn is not held behind a flight nobody reads.
    const second = createChannel();
    const next = coalescer.join('turn-2', () => second.producer, { group: 'conversation' });
    second.push(7);
    second.end();
    expect(await drain(next)).toEqual([7]);
  });

  it('a replacement waits for the retirement before starting (same key or same group)', async () => {
    const coalescer = new TurnCoalescer<number>();
    const old = createChannel({ cancelDelayMs: 30 });
    const order: string[] = [];
    const oldProducer: CoalescedProducer<number> = {
      events: old.producer.events,
      cancel: async () => {
        await old.producer.cancel();
        order.push('old cancelled');
      },
    };
    const first = iterate(coalescer.join('turn', () => oldProducer, { group: 'session-1' }));
    old.push(1);
    await take(first, 1);
    await first.return?.();
    const replacement = createChannel();
    replacement.push(7);
    replacement.end();
    const sameKey = drain(
      coalescer.join('turn', () => (order.push('same key started'), replacement.producer), {
        group: 'session-1',
      }),
    );
    const other = createChannel();
    other.end();
    const sameGroup = drain(
      coalescer.join('next', () => (order.push('same group started'), other.producer), {
        group: 'session-1',
      }),
    );
    const unrelated = createChannel();
    unrelated.end();
    await drain(coalescer.join('elsewhere', () => (order.push('other group started'), unrelated.producer)));
    expect(await sameKey).toEqual([7]);
    await sameGroup;
    expect(order[0]).toBe('other group started');
    expect(order[1]).toBe('old cancelled');
    expect(order.slice(2).sort()).toEqual(['same group started', 'same key started']);
    expect(old.stats.cancels).toBe(1);
  });

  it('retirement is bounded when the producer never settles', async () => {
    const coalescer = new TurnCoalescer<number>({ retireTimeoutMs: 20 });
    const stuck = createChannel({ cancelNever: true });
    const first = iterate(coalescer.join('turn', () => stuck.producer));
    stuck.push(1);
    await take(first, 1);
    void first.next();
    await tick();
    await first.return?.();
    const replacement = createChannel();
    replacement.push(2);
    replacement.end();
    expect(await drain(coalescer.join('turn', () => replacement.producer))).toEqual([2]);
    expect(stuck.stats.cancels).toBe(1);
  });

  it('cancels a producer that was still starting when the last subscriber left', async () => {
    const coalescer = new TurnCoalescer<number>();
    const channel = createChannel();
    let release: () => void = () => {};
    const started = new Promise<void>((resolve) => (release = resolve));
    const iterator = iterate(
      coalescer.join('turn', async () => {
        await started;
        return channel.producer;
      }),
    );
    const pending = iterator.next();
    await tick();
    await iterator.return?.();
    expect(await pending).toEqual({ done: true, value: undefined });
    release();
    await vi.waitFor(() => expect(channel.stats.cancels).toBe(1), eventually);
    expect(channel.stats.iterators).toBe(0);
  });
});

describe('completion cleanup', () => {
  it('drops a completed producer; the next join starts a new one', async () => {
    const coalescer = new TurnCoalescer<number>();
    const first = createChannel();
    first.push(1);
    first.end();
    expect(await drain(coalescer.join('turn', () => first.producer))).toEqual([1]);
    expect(coalescer.has('turn')).toBe(false);
    expect(coalescer.size).toBe(0);
    const second = createChannel();
    second.push(2);
    second.end();
    expect(await drain(coalescer.join('turn', () => second.producer))).toEqual([2]);
    expect(first.stats.cancels + second.stats.cancels).toBe(0);
  });

  it('retains a completed producer for retainMs so a retry replays it without a second start', async () => {
    vi.useFakeTimers();
    const coalescer = new TurnCoalescer<number>({ retainMs: 60_000 });
    const channel = createChannel();
    const start = vi.fn(() => channel.producer);
    channel.push(1, 2);
    channel.end();
    expect(await drain(coalescer.join('turn', start))).toEqual([1, 2]);
    vi.advanceTimersByTime(59_999);
    expect(await drain(coalescer.join('turn', start))).toEqual([1, 2]);
    expect(start).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(1);
    expect(coalescer.has('turn')).toBe(false);
    const next = createChannel();
    next.end();
    const again = vi.fn(() => next.producer);
    expect(await drain(coalescer.join('turn', again))).toEqual([]);
    expect(again).toHaveBeenCalledTimes(1);
  });

  it('delivers the producer failure after its events, also to a retry that replays it', async () => {
    const coalescer = new TurnCoalescer<number>({ retainMs: 1_000 });
    const channel = createChannel();
    channel.push(1);
    channel.fail(new Error('run failed'));
    const seen: number[] = [];
    await expect(async () => {
      for await (const value of coalescer.join('turn', () => channel.producer)) seen.push(value);
    }).rejects.toThrow('run failed');
    expect(seen).toEqual([1]);
    await expect(drain(coalescer.join('turn', () => channel.producer))).rejects.toThrow('run failed');
    expect(channel.stats.iterators).toBe(1);
    await coalescer.close();
  });

  it('delivers a start failure to every subscriber', async () => {
    const coalescer = new TurnCoalescer<number>();
    const start = vi.fn(async (): Promise<CoalescedProducer<number>> => {
      await tick();
      throw new Error('no agent');
    });
    const results = await Promise.allSettled([
      drain(coalescer.join('turn', start)),
      drain(coalescer.join('turn', start)),
    ]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    expect(start).toHaveBeenCalledTimes(1);
    expect(coalescer.has('turn')).toBe(false);
  });

  it('close() cancels live producers, fails their subscribers and refuses new joins', async () => {
    const coalescer = new TurnCoalescer<number>();
    const channel = createChannel();
    const iterator = iterate(coalescer.join('turn', () => channel.producer));
    channel.push(1);
    await take(iterator, 1);
    const pending = iterator.next();
    await coalescer.close();
    await expect(pending).rejects.toBeInstanceOf(BridgeError);
    expect(channel.stats.cancels).toBe(1);
    await expect(iterate(coalescer.join('other', () => channel.producer)).next()).rejects.toThrow(
      'shutting down',
    );
  });
});

describe('one owner per rule: group serialisation and after-completion replay', () => {
  it('after a terminal event, a subscriber leaving does not cancel: the producer is read to its end and retained', async () => {
    const coalescer = new TurnCoalescer<number>({ retainMs: 60_000, isTerminal: (value) => value === 0 });
    const channel = createChannel();
    const iterator = iterate(coalescer.join('turn', () => channel.producer));
    channel.push(1, 0);
    expect(await take(iterator, 2)).toEqual([1, 0]);
    await iterator.return?.();
    channel.end();
    await vi.waitFor(() => expect(channel.stats.pulls).toBe(3), eventually);
    expect(channel.stats.cancels).toBe(0);
    const start = vi.fn(() => createChannel().producer);
    expect(await drain(coalescer.join('turn', start))).toEqual([1, 0]);
    expect(start).not.toHaveBeenCalled();
  });

  it('a different producer of a busy group waits for it, and fails with rate-limit after busyTimeoutMs', async () => {
    // The busy deadline runs on a fake clock: the test moves it.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const coalescer = new TurnCoalescer<number>({ busyTimeoutMs: 50 });
    const running = createChannel();
    const first = iterate(coalescer.join('a', () => running.producer, { group: 'g' }));
    running.push(1);
    await take(first, 1);
    const next = createChannel();
    next.push(2);
    next.end();
    const start = vi.fn(() => next.producer);
    let refusedWith: unknown;
    const refused = drain(coalescer.join('b', start, { group: 'g' })).catch((error: unknown) => {
      refusedWith = error;
    });
    await vi.advanceTimersByTimeAsync(49);
    expect(refusedWith).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    await refused;
    expect(refusedWith).toMatchObject({ turnError: { kind: 'rate-limit' } });
    expect(start).not.toHaveBeenCalled();
    const waiting = drain(coalescer.join('b', start, { group: 'g' }));
    await vi.advanceTimersByTimeAsync(49);
    expect(start).not.toHaveBeenCalled();
    running.end();
    expect(await take(first, 5)).toEqual([]);
    expect(await waiting).toEqual([2]);
    expect(start).toHaveBeenCalledTimes(1);
  });

  it('replays a finished flight only to joins that accept it, and never after a later producer of its group', async () => {
    const coalescer = new TurnCoalescer<number>({ retainMs: 60_000 });
    const channel = createChannel();
    channel.push(1);
    channel.end();
    expect(
      await drain(coalescer.join('turn', () => channel.producer, { group: 'g', tag: 'stream' })),
    ).toEqual([1]);
    const refused = createChannel();
    refused.push(2);
    refused.end();
    const seen: Array<string | undefined> = [];
    const replays = (finished: { tag: string | undefined }) => (seen.push(finished.tag), false);
    expect(await drain(coalescer.join('turn', () => refused.producer, { group: 'g', replays }))).toEqual([2]);
    expect(new Set(seen)).toEqual(new Set(['stream']));
    // `turn` now replays [2]; a later producer of the group drops it.
    const later = createChannel();
    later.end();
    await drain(coalescer.join('later', () => later.producer, { group: 'g' }));
    expect(coalescer.has('turn')).toBe(false);
    expect(coalescer.finished('later')).toMatchObject({ events: [], failed: false });
  });

  it("a group's new producer and forgetGroup drop that group's finished flights only", async () => {
    const coalescer = new TurnCoalescer<number>({ retainMs: 60_000 });
    const finish = async (key: string, group: string, value: number): Promise<void> => {
      const channel = createChannel();
      channel.push(value);
      channel.end();
      expect(await drain(coalescer.join(key, () => channel.producer, { group }))).toEqual([value]);
    };
    await finish('a1', 'a', 1);
    await finish('b1', 'b', 2);
    await finish('c1', 'c', 3);
    expect(coalescer.size).toBe(3);
    // A later turn of `a` replaces a1; b1 and c1 still replay.
    await finish('a2', 'a', 4);
    expect(['a1', 'a2', 'b1', 'c1'].map((key) => coalescer.has(key))).toEqual([false, true, true, true]);
    coalescer.forgetGroup('b');
    expect(coalescer.finished('b1')).toBeUndefined();
    expect(coalescer.finished('c1')).toMatchObject({ events: [3] });
    expect(coalescer.finished('a2')).toMatchObject({ events: [4] });
    // A key taken again after its group forgot it starts afresh, and is forgotten with its group.
    await finish('b1', 'b', 5);
    expect(coalescer.finished('b1')).toMatchObject({ events: [5] });
    coalescer.forgetGroup('b');
    expect(coalescer.size).toBe(2);
  });

  it("hands an event to a waiting subscriber's consumer in the microtask after the producer's", async () => {
    let deliver: (result: IteratorResult<number>) => void = () => {};
    const producer: CoalescedProducer<number> = {
      events: {
        [Symbol.asyncIterator]: () => ({
          next: () => new Promise<IteratorResult<number>>((resolve) => (deliver = resolve)),
        }),
      },
      cancel: async () => deliver({ done: true, value: undefined }),
    };
    const coalescer = new TurnCoalescer<number>();
    const iterator = iterate(coalescer.join('turn', () => producer));
    // The first next() also starts the producer; the second waits as every later one does.
    const started = iterator.next();
    for (let tick = 0; tick < 10; tick += 1) await Promise.resolve();
    deliver({ done: false, value: 0 });
    expect(await started).toEqual({ done: false, value: 0 });
    const first = iterator.next();
    // Let the pump hear the demand and ask the producer.
    for (let tick = 0; tick < 10; tick += 1) await Promise.resolve();
    let handedOut = false;
    void first.then(() => (handedOut = true));
    deliver({ done: false, value: 1 });
    let ticks = 0;
    while (!handedOut && ticks < 20) {
      await Promise.resolve();
      ticks += 1;
    }
    // The pump's await of the producer (one), the consumer's of the subscriber's promise (two); waking
    // the subscriber through a promise took three.
    expect(ticks).toBeLessThanOrEqual(2);
    expect(await first).toEqual({ done: false, value: 1 });
    await iterator.return?.();
  });
});
