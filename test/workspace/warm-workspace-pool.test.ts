import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { HostFacts } from '../../src/workspace/host-facts.js';
import { WarmWorkspacePool, type WarmWorkspacePoolOptions } from '../../src/workspace/warm-workspace-pool.js';
import { createCapturingLogger } from '../helpers/workspace-test-helpers.js';

/** A manager and an executor warmer that record what the pool does with them. */
const createWorld = (warmOutcome: () => Promise<void> = async () => {}) => {
  let next = 0;
  const reserved = new Map<string, HostFacts | undefined>();
  const released: string[] = [];
  const leases = new Set<string>();
  const warmed: string[] = [];
  let warmingNow = 0;
  let mostAtOnce = 0;
  const manager: WarmWorkspacePoolOptions['manager'] = {
    reserveWorkspace: async (facts) => {
      next += 1;
      const key = `${String(next).padStart(32, '0')}`;
      reserved.set(key, facts);
      return { key, dir: `/ws/${key}` };
    },
    releaseReservation: async (key) => {
      released.push(key);
      return reserved.delete(key);
    },
  };
  const warm = async (dir: string): Promise<() => Promise<void>> => {
    warmingNow += 1;
    mostAtOnce = Math.max(mostAtOnce, warmingNow);
    try {
      await warmOutcome();
    } finally {
      warmingNow -= 1;
    }
    warmed.push(dir);
    leases.add(dir);
    return async () => {
      leases.delete(dir);
    };
  };
  /** Reserved workspaces (ready in the pool, or claimed and not yet released) per host root. */
  const byRoot = (): Record<string, number> => {
    const counts: Record<string, number> = {};
    for (const facts of reserved.values())
      counts[facts?.root ?? 'none'] = (counts[facts?.root ?? 'none'] ?? 0) + 1;
    return counts;
  };
  return { manager, warm, reserved, released, leases, warmed, byRoot, mostAtOnce: () => mostAtOnce };
};

const pools: WarmWorkspacePool[] = [];

// The pool's clock and timers (quiet period, back-off, TTL, close wait) and the warm-ups'
// durations are fake: the test moves the clock, so nothing depends on how fast the machine is.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
});
afterEach(async () => {
  // Close while the clock is still fake, so that a warm-up waiting on it can end.
  const closing = Promise.all(pools.splice(0).map((pool) => pool.close()));
  await vi.runAllTimersAsync();
  await closing;
  vi.useRealTimers();
});

/** Advance the fake clock by `ms`, running the timers and promises due meanwhile. */
const advance = (ms: number) => vi.advanceTimersByTimeAsync(ms);

/** Whether `promise` settled, once the promises already due have run (no time passes). */
const settledNow = async (promise: Promise<unknown>): Promise<boolean> => {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await advance(0);
  return settled;
};

const createPool = (
  world: ReturnType<typeof createWorld>,
  options: Partial<WarmWorkspacePoolOptions> = {},
) => {
  const { logger, records } = createCapturingLogger();
  const claims: boolean[] = [];
  const pool = new WarmWorkspacePool({
    manager: world.manager,
    warm: world.warm,
    logger,
    size: 4,
    quietMs: 5,
    onClaim: (hit) => claims.push(hit),
    ...options,
  });
  pools.push(pool);
  return { pool, records, claims };
};

const alpha: HostFacts = { source: 'claude-code', facts: [], root: '/home/ada/alpha' };
const beta: HostFacts = { source: 'claude-code', facts: [], root: '/home/bob/beta' };
const gamma: HostFacts = { source: 'claude-code', facts: [], root: '/home/cy/gamma' };

/** A warm-up that takes `ms` of the fake clock. */
const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe('WarmWorkspacePool', () => {
  it("fills a key's share after its first conversation, one entry at a time; a hit hands one over and is replaced", async () => {
    const world = createWorld(() => pause(2));
    const { pool, claims } = createPool(world);
    expect(await pool.claim('alpha', alpha)).toBeUndefined();
    await advance(1_000);
    expect(pool.size).toBe(4);
    expect([...world.reserved.values()]).toEqual([alpha, alpha, alpha, alpha]);
    expect(world.mostAtOnce()).toBe(1);

    const warm = await pool.claim('alpha', alpha);
    expect(warm?.dir).toBe(world.warmed[0]);
    expect(pool.size).toBe(3);
    await advance(1_000);
    expect(pool.size).toBe(4);
    await advance(60_000);
    expect(pool.size).toBe(4);
    expect(world.warmed).toHaveLength(5);
    expect(claims).toEqual([false, true]);
    // The handed-over lease is the caller's: the pool does not release it.
    expect(world.leases.has(warm?.dir ?? '')).toBe(true);
    await warm?.release();
    expect(world.leases.has(warm?.dir ?? '')).toBe(false);
  });

  it('never hands out an entry rendered for another key', async () => {
    const world = createWorld();
    const { pool, claims } = createPool(world);
    await pool.claim('alpha', alpha);
    await advance(1_000);
    expect(pool.size).toBe(4);
    expect(await pool.claim('beta', beta)).toBeUndefined();
    expect(claims).toEqual([false, false]);
  });

  it('grows with a burst of new conversations, up to its size', async () => {
    const world = createWorld();
    const { pool } = createPool(world, { size: 5 });
    for (let index = 0; index < 10; index += 1) await pool.claim('alpha', alpha);
    await advance(1_000);
    expect(pool.size).toBe(5);
    await advance(60_000);
    expect(pool.size).toBe(5);
    expect(world.warmed).toHaveLength(5);
  });

  it('shares the cap among active keys: a new key takes the surplus of the others, never more than their share', async () => {
    const world = createWorld();
    const { pool } = createPool(world, { size: 4 });
    await pool.claim('alpha', alpha);
    await advance(1_000);
    expect(pool.size).toBe(4);
    const alphaKeys = [...world.reserved.keys()];

    await pool.claim('beta', beta);
    await advance(1_000);
    expect(world.warmed).toHaveLength(6);
    await advance(60_000);
    expect(world.warmed).toHaveLength(6);
    expect(world.byRoot()).toEqual({ '/home/ada/alpha': 2, '/home/bob/beta': 2 });
    // The oldest alpha entries made room, released with their leases.
    expect(world.released).toEqual(alphaKeys.slice(0, 2));
    expect(world.leases.size).toBe(4);

    // Three keys on four: one each, and the remainder to the most recently wanted.
    await pool.claim('gamma', gamma);
    await advance(1_000);
    expect(world.warmed).toHaveLength(8);
    await advance(60_000);
    expect(world.warmed).toHaveLength(8);
    expect(world.byRoot()).toEqual({ '/home/ada/alpha': 1, '/home/bob/beta': 1, '/home/cy/gamma': 2 });
    expect(await pool.claim('alpha', alpha)).toBeDefined();
  });

  it('serves only the most recently wanted keys when more are active than it holds entries', async () => {
    const world = createWorld();
    const { pool } = createPool(world, { size: 2 });
    for (const [key, facts] of [
      ['alpha', alpha],
      ['beta', beta],
      ['gamma', gamma],
    ] as const) {
      await pool.claim(key, facts);
      await advance(5);
      expect(world.byRoot()[facts.root ?? '']).toBe(1);
      await advance(60_000);
    }
    expect(world.byRoot()).toEqual({ '/home/bob/beta': 1, '/home/cy/gamma': 1 });
    expect(pool.size).toBe(2);
  });

  it('waits for a quiet moment: no warm-up while new conversations keep arriving', async () => {
    const world = createWorld();
    const { pool } = createPool(world, { quietMs: 60 });
    // A new conversation every 10 ms for 200 ms: never 60 ms of quiet.
    for (let index = 0; index < 20; index += 1) {
      await pool.claim('alpha', alpha);
      await advance(10);
    }
    expect(world.warmed).toHaveLength(0);
    // The last one came at 190 ms: quiet from 250 ms.
    await advance(49);
    expect(world.warmed).toHaveLength(0);
    await advance(1);
    expect(world.warmed).toHaveLength(1);
    await advance(1_000);
    expect(pool.size).toBe(4);
  });

  it('backs off after a failed warm-up, releasing the reservation and saying why, then fills the share', async () => {
    let fail = true;
    const world = createWorld(async () => {
      if (fail) throw new Error('backend down');
    });
    const { pool, records } = createPool(world, { failureBackoffMs: 150 });
    await pool.claim('alpha', alpha);
    // t = 5: the first warm-up fails; the pool backs off until t = 155.
    await advance(5);
    expect(records.filter((record) => record['level'] === 40)).toHaveLength(1);
    const warning = records.find((record) => record['level'] === 40);
    expect(warning?.['msg']).toContain('new conversations start cold');
    expect(world.reserved.size).toBe(0);
    expect(world.released).toHaveLength(1);
    // Demand during the back-off is not warmed until it passes.
    fail = false;
    await pool.claim('alpha', alpha);
    await advance(149);
    expect(pool.size).toBe(0);
    expect(world.warmed).toHaveLength(0);
    expect(records.filter((record) => record['level'] === 40)).toHaveLength(1);
    await advance(1);
    expect(world.warmed).toHaveLength(1);
    await advance(1_000);
    expect(pool.size).toBe(4);
  });

  it('releases every entry on invalidate and on close, forgets the stale keys, and warms nothing after close', async () => {
    const world = createWorld();
    const { pool } = createPool(world);
    await pool.claim('alpha', alpha);
    await advance(1_000);
    expect(pool.size).toBe(4);
    await pool.invalidate();
    expect(pool.size).toBe(0);
    expect(world.leases.size).toBe(0);
    expect(world.reserved.size).toBe(0);
    // The key rendered the old templates: nothing is warmed for it until a conversation wants it again.
    await advance(60_000);
    expect(world.warmed).toHaveLength(4);

    await pool.claim('alpha', alpha);
    await advance(1_000);
    expect(pool.size).toBe(4);
    await pool.close();
    expect(world.leases.size).toBe(0);
    expect(world.reserved.size).toBe(0);
    expect(await pool.claim('alpha', alpha)).toBeUndefined();
    await advance(60_000);
    expect(world.warmed).toHaveLength(8);
  });

  it('discards a warm-up that was in flight when the templates changed', async () => {
    let finish = (): void => {};
    const world = createWorld(() => new Promise<void>((resolve) => (finish = resolve)));
    const { pool } = createPool(world);
    await pool.claim('alpha', alpha);
    await advance(5);
    expect(world.reserved.size).toBe(1);
    await pool.invalidate();
    finish();
    await advance(0);
    expect(world.reserved.size).toBe(0);
    expect(world.leases.size).toBe(0);
    await advance(60_000);
    expect(pool.size).toBe(0);
    expect(world.warmed).toHaveLength(1);
  });

  it('is inert with size 0', async () => {
    const world = createWorld();
    const { pool, claims } = createPool(world, { size: 0 });
    expect(await pool.claim('alpha', alpha)).toBeUndefined();
    await advance(60_000);
    expect(world.warmed).toHaveLength(0);
    expect(claims).toEqual([]);
  });

  it('does not wait on close for a warm-up that hangs; its entry is discarded when it ends', async () => {
    let finish = (): void => {};
    const world = createWorld(() => new Promise<void>((resolve) => (finish = resolve)));
    const { pool } = createPool(world);
    await pool.claim('alpha', alpha);
    await advance(5);
    expect(world.reserved.size).toBe(1);
    // The warm-up never ends by itself: close waits for it 100 ms, not more.
    const closing = pool.close(100);
    await advance(99);
    expect(await settledNow(closing)).toBe(false);
    await advance(1);
    expect(await settledNow(closing)).toBe(true);
    finish();
    await advance(0);
    expect(world.reserved.size).toBe(0);
    expect(world.leases.size).toBe(0);
    expect(pool.size).toBe(0);
  });

  describe('the executor bound', () => {
    it('warms only while its entries and the executors in use stay below the limit', async () => {
      const world = createWorld();
      let inUse = 4;
      const { pool } = createPool(world, {
        size: 4,
        executorLimit: 6,
        executorsInUse: () => inUse,
      });
      await pool.claim('alpha', alpha);
      await advance(1_000);
      expect(pool.size).toBe(2);
      await advance(60_000);
      expect(pool.size).toBe(2);
      // A session ends: one more may be warmed.
      inUse = 3;
      pool.executorReleased();
      await advance(1_000);
      expect(pool.size).toBe(3);
      await advance(60_000);
      expect(pool.size).toBe(3);
      expect(world.warmed).toHaveLength(3);
    });
  });

  describe('over time', () => {
    it('gives the entries of a key gone inactive to the active ones before they expire', async () => {
      // Each warm-up takes 100 ms, so alpha's last entries are ready long after alpha was last wanted.
      const world = createWorld(() => new Promise<void>((resolve) => setTimeout(resolve, 100)));
      const { pool } = createPool(world, { size: 4, idleTtlMs: 1_000 });
      await pool.claim('alpha', alpha); // t = 0: alpha active until t = 1000
      await advance(450);
      expect(world.byRoot()).toEqual({ '/home/ada/alpha': 4 }); // ready at ≈ 105, 205, 305, 405
      await pool.claim('beta', beta); // t = 450: beta takes its share, alpha keeps its own
      await advance(400);
      expect(world.byRoot()).toEqual({ '/home/ada/alpha': 2, '/home/bob/beta': 2 });
      const releasedBefore = world.released.length;
      // t = 1000: alpha is no longer active; its entries (ready at ≈ 305 and 405, due to expire at ≈ 1305
      // and 1405) make room for beta's whole cap.
      await advance(200);
      expect(world.byRoot()).toEqual({ '/home/ada/alpha': 1, '/home/bob/beta': 3 });
      await advance(200);
      expect(world.byRoot()).toEqual({ '/home/bob/beta': 4 });
      expect(world.released.length - releasedBefore).toBe(2);
      expect(await pool.claim('beta', beta)).toBeDefined();
    });

    it('makes room from the least recently wanted key first', async () => {
      const world = createWorld(() => new Promise<void>((resolve) => setTimeout(resolve, 100)));
      const { pool } = createPool(world, { size: 4 });
      await pool.claim('alpha', alpha);
      await advance(450);
      await pool.claim('beta', beta);
      await advance(250);
      expect(world.byRoot()).toEqual({ '/home/ada/alpha': 2, '/home/bob/beta': 2 });
      // Gamma's share (2, with the remainder) comes from alpha's surplus, then from beta's.
      await pool.claim('gamma', gamma);
      await advance(50);
      expect(world.byRoot()).toEqual({ '/home/ada/alpha': 1, '/home/bob/beta': 2, '/home/cy/gamma': 1 });
      await advance(200);
      expect(world.byRoot()).toEqual({ '/home/ada/alpha': 1, '/home/bob/beta': 1, '/home/cy/gamma': 2 });
    });

    it('drains to 0 after activity stops and warms nothing more', async () => {
      const world = createWorld();
      const { pool } = createPool(world, { size: 4, idleTtlMs: 1_000 });
      await pool.claim('alpha', alpha); // t = 0
      await advance(50);
      expect(pool.size).toBe(4);
      const hit = await pool.claim('alpha', alpha); // t = 50: alpha active until t = 1050; the hit is replaced
      expect(hit).toBeDefined();
      await advance(50);
      expect(pool.size).toBe(4);
      expect(world.warmed).toHaveLength(5);
      // t ≈ 1005: the first three entries expire while alpha is still active and are warmed again.
      await advance(950);
      expect(pool.size).toBe(4);
      expect(world.warmed).toHaveLength(8);
      // t ≈ 1055: the replacement expires after alpha went inactive: not warmed again.
      await advance(50);
      expect(pool.size).toBe(3);
      // t ≈ 2005: the re-warmed ones expire too; the pool is empty, keeps no timer, and stays so.
      await advance(1_000);
      expect(pool.size).toBe(0);
      expect(vi.getTimerCount()).toBe(0);
      await advance(10 * 1_000);
      expect(world.warmed).toHaveLength(8);
      await hit?.release();
      expect(world.leases.size).toBe(0);
      expect(world.reserved.size).toBe(1); // the claimed one is its caller's to remove
    });
  });
});
