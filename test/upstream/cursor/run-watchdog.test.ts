import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RunWatchdog } from '../../../src/upstream/cursor/run-watchdog.js';

/** One real turn of the event loop's check phase (`setImmediate` is left real on purpose, see below). */
const checkPhase = () => new Promise((resolve) => setImmediate(resolve));

const watch = (firstEventMs: number, idleMs: number) => {
  const expired: Array<{ phase: string; afterMs: number }> = [];
  const watchdog = new RunWatchdog({ firstEventMs, idleMs, onExpired: (event) => expired.push(event) });
  return { watchdog, expired };
};

/** Advance the fake clock by `ms`, then let the watchdog's (real) `setImmediate` recheck run. */
const advance = async (ms: number) => {
  vi.advanceTimersByTime(ms);
  await checkPhase();
};

describe('RunWatchdog', () => {
  // The clock and the timers are fake; `setImmediate` stays real, so the test decides what runs between
  // the timer that sees the bound passed and the recheck that follows the I/O poll.
  beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] }));
  afterEach(() => vi.useRealTimers());

  it('expires once when no first event arrives, at the bound and not before', async () => {
    const { expired } = watch(40, 1000);
    await advance(39);
    expect(expired).toEqual([]);
    await advance(1);
    expect(expired).toEqual([{ phase: 'first-event', afterMs: 40 }]);
    await advance(5_000);
    expect(expired).toHaveLength(1);
  });

  it('never expires while events keep coming, then expires after the idle bound measured from the last event', async () => {
    const { watchdog, expired } = watch(200, 200);
    for (let index = 0; index < 10; index += 1) {
      watchdog.activity();
      await advance(20);
    }
    // Now 200 ms since the start, 20 ms since the last event (at 180 ms): a bound measured from the start
    // would have expired already.
    expect(expired).toEqual([]);
    await advance(179);
    expect(expired).toEqual([]);
    await advance(1);
    expect(expired).toEqual([{ phase: 'idle', afterMs: 200 }]);
  });

  it('does not count suspended time, and restarts the idle period on resume', async () => {
    const { watchdog, expired } = watch(150, 150);
    watchdog.activity();
    watchdog.setSuspended(true);
    await advance(10_000);
    expect(expired).toEqual([]);
    watchdog.setSuspended(false);
    await advance(149);
    expect(expired).toEqual([]);
    await advance(1);
    expect(expired).toMatchObject([{ phase: 'idle' }]);
  });

  it('is disabled by 0 and silenced by stop()', async () => {
    const disabled = watch(0, 0);
    const stopped = watch(30, 30);
    stopped.watchdog.stop();
    disabled.watchdog.activity();
    await advance(60_000);
    expect(disabled.expired).toEqual([]);
    expect(stopped.expired).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('an event loop starved past the bound still takes the I/O that arrived meanwhile before expiring', async () => {
    const { watchdog, expired } = watch(1000, 50);
    watchdog.activity();
    // A starved loop (a GC, a CPU-bound burst) runs its overdue timer first: the clock says the bound passed.
    vi.advanceTimersByTime(100);
    expect(expired).toEqual([]);
    // The backend's event that arrived meanwhile is delivered in the poll phase, before the check phase.
    watchdog.activity();
    await checkPhase();
    expect(expired).toEqual([]);
    // A real silence still ends it.
    await advance(49);
    expect(expired).toEqual([]);
    await advance(1);
    expect(expired).toEqual([{ phase: 'idle', afterMs: 50 }]);
  });
});
