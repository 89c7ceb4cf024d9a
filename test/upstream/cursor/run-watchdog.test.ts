import { createServer, connect, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { RunWatchdog } from '../../../src/upstream/cursor/run-watchdog.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const watch = (firstEventMs: number, idleMs: number) => {
  const expired: Array<{ phase: string; afterMs: number; at: number }> = [];
  const started = Date.now();
  const watchdog = new RunWatchdog({
    firstEventMs,
    idleMs,
    onExpired: (event) => expired.push({ ...event, at: Date.now() - started }),
  });
  return { watchdog, expired };
};

describe('RunWatchdog', () => {
  it('expires once when no first event arrives', async () => {
    const { expired } = watch(40, 1000);
    await sleep(120);
    expect(expired).toEqual([{ phase: 'first-event', afterMs: 40, at: expect.any(Number) }]);
    expect(expired[0]?.at).toBeGreaterThanOrEqual(39);
  });

  it('never expires while events keep coming, then expires after the idle bound', async () => {
    const { watchdog, expired } = watch(200, 200);
    for (let index = 0; index < 10; index += 1) {
      watchdog.activity();
      await sleep(20);
    }
    expect(expired).toEqual([]);
    await sleep(450);
    // The last event came at ≥180 ms: expiry is measured from it, not from the start.
    expect(expired).toMatchObject([{ phase: 'idle', afterMs: 200 }]);
    expect(expired[0]?.at).toBeGreaterThanOrEqual(370);
  });

  it('does not count suspended time, and restarts the idle period on resume', async () => {
    const { watchdog, expired } = watch(150, 150);
    watchdog.activity();
    watchdog.setSuspended(true);
    await sleep(300);
    expect(expired).toEqual([]);
    watchdog.setSuspended(false);
    await sleep(20);
    expect(expired).toEqual([]);
    await sleep(300);
    expect(expired).toMatchObject([{ phase: 'idle' }]);
  });

  it('is disabled by 0 and silenced by stop()', async () => {
    const disabled = watch(0, 0);
    const stopped = watch(30, 30);
    stopped.watchdog.stop();
    await sleep(80);
    expect(disabled.expired).toEqual([]);
    expect(stopped.expired).toEqual([]);
  });

  it('an event loop starved past the bound still takes the I/O that arrived meanwhile before expiring', async () => {
    const { watchdog, expired } = watch(1000, 50);
    watchdog.activity();
    const server = createServer((socket) => socket.on('data', () => watchdog.activity()));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
    await new Promise((resolve) => client.once('connect', resolve));
    await sleep(20);
    try {
      // The backend's event arrives while the loop is busy for twice the bound (a GC, a CPU-bound burst).
      // Busy in the check phase, so the next loop iteration runs its due timers before the poll for I/O.
      await new Promise<void>((resolve) =>
        setImmediate(() => {
          client.write('event');
          const busyUntil = Date.now() + 100;
          while (Date.now() < busyUntil);
          resolve();
        }),
      );
      await sleep(20);
      expect(expired).toEqual([]);
      // A real silence still ends it.
      await sleep(150);
      expect(expired).toMatchObject([{ phase: 'idle', afterMs: 50 }]);
    } finally {
      client.destroy();
      server.close();
    }
  });
});
