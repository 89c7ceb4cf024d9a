import { afterEach, describe, expect, it, vi } from 'vitest';
import { EngineRegistry } from '../../../src/hosts/ccr/ccr3-engine-registry.js';

/** A fake engine that records its drains. */
const fakeEngine = (name: string) => {
  const drains: number[] = [];
  return {
    name,
    drains,
    drain: async (timeoutMs: number) => (drains.push(timeoutMs), { finished: true, abandoned: 0 }),
  };
};

afterEach(() => {
  vi.useRealTimers();
});

describe('EngineRegistry', () => {
  it('hands the held engine to an acquire with an equal key, and builds a new one for another key', async () => {
    const closed: string[] = [];
    const registry = new EngineRegistry<ReturnType<typeof fakeEngine>>({
      onClosed: (why) => closed.push(why),
    });
    const a = fakeEngine('a');
    expect(await registry.acquire('k1', async () => a)).toEqual({ engine: a, reused: false });
    await registry.release('reload');
    expect(await registry.acquire('k1', async () => fakeEngine('never'))).toEqual({
      engine: a,
      reused: true,
    });

    const b = fakeEngine('b');
    expect(await registry.acquire('k2', async () => b)).toEqual({ engine: b, reused: false });
    expect(a.drains).toEqual([5_000]);
    expect(closed).toEqual(['settings changed']);
  });

  it('builds the new engine without waiting for the replaced one to drain; stop waits for that drain', async () => {
    let finishOldDrain: () => void = () => undefined;
    const old = {
      drains: 0,
      drain: () =>
        new Promise<{ finished: boolean; abandoned: number }>((resolve) => {
          old.drains += 1;
          finishOldDrain = () => resolve({ finished: false, abandoned: 1 });
        }),
    };
    const registry = new EngineRegistry<{ drain: typeof old.drain }>();
    await registry.acquire('k1', async () => old);
    const next = { drain: async () => ({ finished: true, abandoned: 0 }) };
    expect(await registry.acquire('k2', async () => next)).toEqual({ engine: next, reused: false });
    expect(old.drains).toBe(1);

    let stopped = false;
    const stopping = registry.release('stop').then(() => (stopped = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(stopped).toBe(false);
    finishOldDrain();
    await stopping;
    expect(stopped).toBe(true);
  });

  it('drains on stop and disabled, with the bound it was given', async () => {
    const registry = new EngineRegistry<ReturnType<typeof fakeEngine>>({ drainTimeoutMs: 1234 });
    const a = fakeEngine('a');
    await registry.acquire('k', async () => a);
    await registry.release('stop');
    expect(a.drains).toEqual([1234]);
    expect(registry.current).toBeUndefined();
    const b = fakeEngine('b');
    await registry.acquire('k', async () => b);
    await registry.release('disabled');
    expect(b.drains).toEqual([1234]);
  });

  it('closes an engine released for a reload that no setup claims within the grace period', async () => {
    vi.useFakeTimers();
    const registry = new EngineRegistry<ReturnType<typeof fakeEngine>>({ unclaimedGraceMs: 60_000 });
    const a = fakeEngine('a');
    await registry.acquire('k', async () => a);
    await registry.release('reload');
    await vi.advanceTimersByTimeAsync(59_999);
    expect(a.drains).toEqual([]);
    expect(registry.current).toBe(a);
    await vi.advanceTimersByTimeAsync(1);
    expect(a.drains).toHaveLength(1);
    expect(registry.current).toBeUndefined();
  });

  it('a claimed engine is not closed when the grace period would have ended', async () => {
    vi.useFakeTimers();
    const registry = new EngineRegistry<ReturnType<typeof fakeEngine>>({ unclaimedGraceMs: 1_000 });
    const a = fakeEngine('a');
    await registry.acquire('k', async () => a);
    await registry.release('reload');
    await registry.acquire('k', async () => fakeEngine('never'));
    await vi.advanceTimersByTimeAsync(5_000);
    expect(a.drains).toEqual([]);
  });

  it('a failed build leaves nothing held, and the next acquire builds again', async () => {
    const registry = new EngineRegistry<ReturnType<typeof fakeEngine>>();
    await expect(registry.acquire('k', () => Promise.reject(new Error('no')))).rejects.toThrow('no');
    expect(registry.current).toBeUndefined();
    const a = fakeEngine('a');
    expect(await registry.acquire('k', async () => a)).toEqual({ engine: a, reused: false });
  });
});
