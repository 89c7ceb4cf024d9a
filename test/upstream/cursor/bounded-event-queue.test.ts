import { describe, expect, it } from 'vitest';
import { BoundedEventQueue } from '../../../src/upstream/cursor/bounded-event-queue.js';

const settled = async (promise: Promise<void> | undefined): Promise<boolean> => {
  if (promise === undefined) return true;
  let done = false;
  void promise.then(() => (done = true));
  await new Promise((resolve) => setTimeout(resolve, 10));
  return done;
};

describe('BoundedEventQueue', () => {
  it('holds the producer above the high-water mark in events until the consumer is back below half', async () => {
    const queue = new BoundedEventQueue({ highWaterEvents: 4 });
    for (let index = 0; index < 4; index += 1) queue.push({ type: 'text-delta', text: 'x' });
    expect(queue.room()).toBeUndefined();
    queue.push({ type: 'text-delta', text: 'x' });
    const room = queue.room();
    expect(await settled(room)).toBe(false);
    await queue.next();
    await queue.next();
    expect(await settled(room)).toBe(false);
    await queue.next();
    expect(queue.pending).toBe(2);
    expect(await settled(room)).toBe(true);
  });

  it('bounds bytes of text too, and releases a held producer when the queue ends (run cancelled, consumer gone)', async () => {
    const queue = new BoundedEventQueue({ highWaterBytes: 1_000 });
    queue.push({ type: 'text-delta', text: 'y'.repeat(1_001) });
    const room = queue.room();
    expect(await settled(room)).toBe(false);
    await queue.return();
    expect(await settled(room)).toBe(true);
    expect(queue.room()).toBeUndefined();
  });
});
