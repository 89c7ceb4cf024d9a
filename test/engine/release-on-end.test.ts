import { describe, expect, it } from 'vitest';
import { releaseOnEnd } from '../../src/engine/release-on-end.js';

async function* items(values: number[], failAt?: number): AsyncGenerator<number> {
  for (const [index, value] of values.entries()) {
    if (index === failAt) throw new Error('boom');
    yield value;
  }
}

const recorder = () => {
  const calls: boolean[] = [];
  return { calls, release: (served: boolean) => void calls.push(served) };
};

describe('releaseOnEnd', () => {
  it('hands out every event and releases once, served, before the consumer sees the end', async () => {
    const { calls, release } = recorder();
    const seen: number[] = [];
    for await (const value of releaseOnEnd(items([1, 2, 3]), release)) {
      seen.push(value);
      expect(calls).toEqual([]);
    }
    expect(seen).toEqual([1, 2, 3]);
    expect(calls).toEqual([true]);
  });

  it('releases unserved when the iteration ends without an event', async () => {
    const { calls, release } = recorder();
    for await (const _ of releaseOnEnd(items([]), release)) throw new Error('no event expected');
    expect(calls).toEqual([false]);
  });

  it('releases when a next() rejects, and passes the error on', async () => {
    const { calls, release } = recorder();
    const seen: number[] = [];
    await expect(async () => {
      for await (const value of releaseOnEnd(items([1, 2], 1), release)) seen.push(value);
    }).rejects.toThrow('boom');
    expect(seen).toEqual([1]);
    expect(calls).toEqual([true]);
  });

  it('releases when the consumer stops, after stopping the source', async () => {
    const order: string[] = [];
    const source: AsyncIterable<number> = {
      [Symbol.asyncIterator]: () => ({
        next: async () => ({ done: false, value: 1 }),
        return: async () => {
          order.push('source stopped');
          return { done: true, value: undefined };
        },
      }),
    };
    for await (const _ of releaseOnEnd(source, (served) => void order.push(`released ${served}`))) break;
    expect(order).toEqual(['source stopped', 'released true']);
  });

  it('starts the source on the first next(), and releases a consumer that stops before it', async () => {
    let started = 0;
    const source: AsyncIterable<number> = {
      [Symbol.asyncIterator]: () => {
        started += 1;
        return items([1])[Symbol.asyncIterator]();
      },
    };
    const { calls, release } = recorder();
    const iterator = releaseOnEnd(source, release)[Symbol.asyncIterator]();
    expect(started).toBe(0);
    await iterator.return?.();
    expect(started).toBe(0);
    expect(calls).toEqual([false]);
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
    expect(calls).toEqual([false]);
  });

  it("returns the source's own promise: no microtask per event", async () => {
    const pending = Promise.resolve({ done: false as const, value: 7 });
    const source: AsyncIterable<number> = { [Symbol.asyncIterator]: () => ({ next: () => pending }) };
    const iterator = releaseOnEnd(source, () => {})[Symbol.asyncIterator]();
    expect(iterator.next()).toBe(pending);
  });
});
