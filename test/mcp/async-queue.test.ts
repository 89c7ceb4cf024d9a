import { describe, expect, it } from 'vitest';
import { AsyncQueue } from '../../mcp/async-queue.js';

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
});
