/**
 * A producer the test feeds with `push`/`end`/`fail`, for the coalescer's and the flight's tests: `cancel`
 * ends a pending read (after `cancelDelayMs`, or never with `cancelNever`). `stats` records its use.
 */

import type { FlightProducer } from '../../src/engine/flight.js';

export const createChannel = (options: { cancelDelayMs?: number; cancelNever?: boolean } = {}) => {
  const queue: Array<IteratorResult<number> | { error: unknown }> = [];
  let waiting: (() => void) | undefined;
  const stats = { iterators: 0, pulls: 0, cancels: 0, returns: 0 };
  const wake = (): void => {
    waiting?.();
    waiting = undefined;
  };
  const producer: FlightProducer<number> = {
    events: {
      [Symbol.asyncIterator]: () => {
        stats.iterators += 1;
        return {
          next: async () => {
            stats.pulls += 1;
            while (queue.length === 0) await new Promise<void>((resolve) => (waiting = resolve));
            const item = queue.shift() as IteratorResult<number> | { error: unknown };
            if ('error' in item) throw item.error;
            return item;
          },
          return: async () => {
            stats.returns += 1;
            return { done: true, value: undefined };
          },
        };
      },
    },
    cancel: async () => {
      stats.cancels += 1;
      if (options.cancelNever === true) return new Promise<void>(() => {});
      if (options.cancelDelayMs !== undefined)
        await new Promise((resolve) => setTimeout(resolve, options.cancelDelayMs));
      queue.push({ done: true, value: undefined });
      wake();
    },
  };
  return {
    producer,
    stats,
    push: (...values: number[]) => {
      for (const value of values) queue.push({ done: false, value });
      wake();
    },
    end: () => {
      queue.push({ done: true, value: undefined });
      wake();
    },
    fail: (error: unknown) => {
      queue.push({ error });
      wake();
    },
  };
};
