import { afterEach, describe, expect, it, vi } from 'vitest';
import { sleep } from '../../lib/sleep.js';

/** Whether `promise` has settled once pending callbacks have run (it never rejects here). */
const settled = async (promise: Promise<void>): Promise<boolean> => {
  let done = false;
  void promise.then(() => (done = true));
  await vi.advanceTimersByTimeAsync(0);
  return done;
};

describe('sleep', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('resolves once the time has passed, not before', async () => {
    vi.useFakeTimers();
    const waiting = sleep(100);
    await vi.advanceTimersByTimeAsync(99);
    expect(await settled(waiting)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled(waiting)).toBe(true);
  });

  it('waits for a timer even at zero or less', async () => {
    vi.useFakeTimers();
    const zero = sleep(0);
    const negative = sleep(-5);
    let done = false;
    void Promise.all([zero, negative]).then(() => (done = true));
    await Promise.resolve();
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(done).toBe(true);
  });

  it('resolves (never rejects) as soon as its signal aborts, and removes its timer and listener', async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    const removed = vi.spyOn(controller.signal, 'removeEventListener');
    const waiting = sleep(10_000, { signal: controller.signal });
    await vi.advanceTimersByTimeAsync(10);
    expect(await settled(waiting)).toBe(false);
    controller.abort(new Error('closing'));
    await expect(waiting).resolves.toBeUndefined();
    expect(removed).toHaveBeenCalledWith('abort', expect.any(Function));
    expect(vi.getTimerCount()).toBe(0);
  });

  it('resolves at once, without a timer, when its signal has already aborted', async () => {
    vi.useFakeTimers();
    const waiting = sleep(10_000, { signal: AbortSignal.abort() });
    expect(vi.getTimerCount()).toBe(0);
    await expect(waiting).resolves.toBeUndefined();
  });

  it('unrefs its timer only when asked', async () => {
    const setTimer = vi.spyOn(globalThis, 'setTimeout');
    const kept = sleep(1);
    const loose = sleep(1, { unref: true });
    const timers = setTimer.mock.results.map((result) => result.value as NodeJS.Timeout);
    setTimer.mockRestore();
    expect(timers.map((timer) => timer.hasRef())).toEqual([true, false]);
    await Promise.all([kept, loose]);
  });
});
