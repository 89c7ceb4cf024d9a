import { describe, expect, it } from 'vitest';
import { AsyncQueue } from '../../lib/async-queue.js';

describe('AsyncQueue', () => {
  it('delivers buffered and later items in order, then drains and ends', async () => {
    const queue = new AsyncQueue<number>();
    queue.push(1);
    const waiting = queue.next();
    queue.push(2);
    queue.push(3);
    queue.end();
    queue.push(4);
    const seen: number[] = [];
    expect(await waiting).toEqual({ value: 1, done: false });
    for await (const item of queue) seen.push(item);
    expect(seen).toEqual([2, 3]);
  });

  it('releases a waiting consumer on end and runs onReturn once', async () => {
    let returned = 0;
    const queue = new AsyncQueue<string>(() => (returned += 1));
    const waiting = queue.next();
    queue.end();
    queue.end();
    expect(await waiting).toEqual({ value: undefined, done: true });
    expect(returned).toBe(1);
  });

  it('drops buffered items when the consumer returns early', async () => {
    let returned = 0;
    const queue = new AsyncQueue<number>(() => (returned += 1));
    queue.push(1);
    queue.push(2);
    for await (const item of queue) {
      expect(item).toBe(1);
      break;
    }
    expect(returned).toBe(1);
    expect(await queue.next()).toEqual({ value: undefined, done: true });
  });

  it('keeps order and its size through a large buffer drained while it is refilled', async () => {
    const queue = new AsyncQueue<number>();
    let pushed = 0;
    let taken = 0;
    for (let round = 0; round < 5; round += 1) {
      for (let index = 0; index < 3_000; index += 1) queue.push(pushed++);
      expect(queue.size).toBe(pushed - taken);
      for (let index = 0; index < 2_500; index += 1) {
        expect(await queue.next()).toEqual({ value: taken++, done: false });
      }
      expect(queue.size).toBe(pushed - taken);
    }
    queue.end();
    const rest: number[] = [];
    for await (const item of queue) rest.push(item);
    expect(rest).toEqual(Array.from({ length: pushed - taken }, (_, index) => taken + index));
    expect(queue.size).toBe(0);
  });
});
