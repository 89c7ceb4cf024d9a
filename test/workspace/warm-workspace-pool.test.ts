import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { HostFacts } from '../../src/workspace/host-facts.js';
import {
  WarmWorkspacePool,
  type WarmClaim,
  type WarmWorkspace,
  type WarmWorkspacePoolOptions,
} from '../../src/workspace/warm-workspace-pool.js';
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

/** A claim's ready entry, or undefined; a claim that joined a warm-up in flight fails the test. */
const readyEntry = (claim: WarmClaim): WarmWorkspace | undefined => {
  if (claim !== undefined && 'warming' in claim) throw new Error('the claim joined a warm-up in flight');
  return claim;
};

/** `count` new conversations of one key at the same moment: the first activates it, the others miss. */
const burst = (pool: WarmWorkspacePool, key: string, facts: HostFacts, count: number) =>
  Array.from({ length: count }, () => readyEntry(pool.claim(key, facts)));

describe('WarmWorkspacePool', () => {
  it('warms nothing before the first conversation and keeps no timer', async () => {
    const world = createWorld();
    const { pool } = createPool(world);
    await advance(60_000);
    expect(world.warmed).toHaveLength(0);
    expect(pool.state).toBe('idle');
    expect(vi.getTimerCount()).toBe(0);
  });

  it("warms one entry after a key's first conversation, not the cap; a hit hands it over and is replaced", async () => {
    const world = createWorld(() => pause(2));
    const { pool, claims } = createPool(world, { size: 4 });
    expect(pool.claim('alpha', alpha)).toBeUndefined();
    await advance(1_000);
    expect(pool.size).toBe(1);
    expect([...world.reserved.values()]).toEqual([alpha]);

    const warm = readyEntry(pool.claim('alpha', alpha));
    expect(warm?.dir).toBe(world.warmed[0]);
    expect(pool.size).toBe(0);
    await advance(1_000);
    expect(pool.size).toBe(1);
    await advance(60_000);
    expect(pool.size).toBe(1);
    expect(world.warmed).toHaveLength(2);
    expect(claims).toEqual([false, true]);
    expect(world.mostAtOnce()).toBe(1);
    // The handed-over lease is the caller's: the pool does not release it.
    expect(world.leases.has(warm?.dir ?? '')).toBe(true);
    await warm?.release();
    expect(world.leases.has(warm?.dir ?? '')).toBe(false);
  });

  it('never hands out an entry rendered for another key', async () => {
    const world = createWorld();
    const { pool, claims } = createPool(world);
    pool.claim('alpha', alpha);
    await advance(1_000);
    expect(pool.size).toBe(1);
    expect(pool.claim('beta', beta)).toBeUndefined();
    expect(claims).toEqual([false, false]);
  });

  it("raises a key's target by the conversations that found nothing ready: the next burst of that size is served", async () => {
    const world = createWorld(() => pause(2));
    const { pool, claims } = createPool(world, { size: 5 });
    burst(pool, 'alpha', alpha, 3);
    await advance(1_000);
    expect(pool.size).toBe(3);
    expect(world.mostAtOnce()).toBe(1);
    expect(burst(pool, 'alpha', alpha, 3).every((warm) => warm !== undefined)).toBe(true);
    expect(claims).toEqual([false, false, false, true, true, true]);
    await advance(1_000);
    expect(pool.size).toBe(3);
  });

  it('grows with a burst of new conversations up to its size, never beyond', async () => {
    const world = createWorld();
    const { pool } = createPool(world, { size: 5 });
    burst(pool, 'alpha', alpha, 10);
    await advance(1_000);
    expect(pool.size).toBe(5);
    await advance(60_000);
    expect(pool.size).toBe(5);
    expect(world.warmed).toHaveLength(5);
  });

  it('falls back to one entry as the misses age out of the demand window, releasing the surplus', async () => {
    const world = createWorld();
    const { pool } = createPool(world, { size: 5, demandWindowMs: 1_000, idleTtlMs: 60_000 });
    burst(pool, 'alpha', alpha, 3); // t = 0: two misses, until t = 1000
    await advance(500);
    expect(pool.size).toBe(3);
    expect(pool.claim('alpha', alpha)).toBeDefined(); // t = 500: a hit, replaced; no miss
    await advance(499);
    expect(pool.size).toBe(3);
    await advance(1);
    expect(pool.size).toBe(1);
    expect(world.leases.size).toBe(2); // the entry left, and the one handed over
    expect(world.released).toHaveLength(2);
    await advance(30_000);
    expect(pool.size).toBe(1);
    expect(world.warmed).toHaveLength(4);
  });

  it('shares the cap max-min fairly among active keys: less than a share keeps its demand, the remainder goes to the most recently wanted', async () => {
    const world = createWorld();
    const { pool } = createPool(world, { size: 4 });
    /** New conversations whose sessions end at once: what they took leaves the pool for good. */
    const conversations = (key: string, facts: HostFacts, count: number) =>
      Promise.all(burst(pool, key, facts, count).map((warm) => warm && pool.discard(warm)));
    await conversations('alpha', alpha, 4); // demand 4
    await advance(1_000);
    expect(world.byRoot()).toEqual({ '/home/ada/alpha': 4 });
    const alphaKeys = [...world.reserved.keys()];

    // Beta demands one: alpha keeps the other three; its oldest entry is released.
    await conversations('beta', beta, 1);
    await advance(1_000);
    expect(world.byRoot()).toEqual({ '/home/ada/alpha': 3, '/home/bob/beta': 1 });
    expect(world.released).toEqual(alphaKeys.slice(0, 1));

    // Beta demands three (a hit, then two misses): more than a share each, so the cap is split evenly.
    await conversations('beta', beta, 3);
    await advance(1_000);
    expect(world.byRoot()).toEqual({ '/home/ada/alpha': 2, '/home/bob/beta': 2 });

    // Gamma demands four: beta (three) and alpha (four) are both above a share of four among three;
    // one each, the remainder to gamma.
    await conversations('gamma', gamma, 4);
    await advance(1_000);
    expect(world.byRoot()).toEqual({ '/home/ada/alpha': 1, '/home/bob/beta': 1, '/home/cy/gamma': 2 });
    expect(world.leases.size).toBe(4);
    await advance(60_000);
    expect(world.leases.size).toBe(4);
  });

  it('serves only the most recently wanted keys when more are active than it holds entries', async () => {
    const world = createWorld();
    const { pool } = createPool(world, { size: 2 });
    for (const [key, facts] of [
      ['alpha', alpha],
      ['beta', beta],
      ['gamma', gamma],
    ] as const) {
      pool.claim(key, facts);
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
      pool.claim('alpha', alpha);
      await advance(10);
    }
    expect(world.warmed).toHaveLength(0);
    expect(pool.state).toBe('waiting');
    // The last one came at 190 ms: quiet from 250 ms.
    await advance(49);
    expect(world.warmed).toHaveLength(0);
    await advance(1);
    expect(world.warmed).toHaveLength(1);
    await advance(1_000);
    expect(pool.size).toBe(4);
  });

  describe('live turns', () => {
    it('starts no warm-up while a turn is in flight, and warms once the last one ends', async () => {
      const world = createWorld();
      let inFlight = 1;
      const { pool } = createPool(world, { turnsInFlight: async () => inFlight, busyRecheckMs: 100 });
      pool.claim('alpha', alpha); // the conversation's own turn is the one in flight
      // Quiet from t = 5; looked at again every 100 ms: at t = 60 005 next.
      await advance(60_000);
      expect(world.warmed).toHaveLength(0);
      expect(pool.state).toBe('waiting');
      inFlight = 0;
      await advance(4);
      expect(world.warmed).toHaveLength(0);
      await advance(1);
      expect(world.warmed).toHaveLength(1);
      await advance(1_000);
      expect(pool.state).toBe('idle');
    });

    it('lets a warm-up under way finish but starts no other while a turn is in flight', async () => {
      let finish = (): void => {};
      const world = createWorld(() => new Promise<void>((resolve) => (finish = resolve)));
      let inFlight = 0;
      const { pool } = createPool(world, { turnsInFlight: () => inFlight, busyRecheckMs: 100 });
      burst(pool, 'alpha', alpha, 3); // demand 3
      await advance(5);
      expect(pool.state).toBe('warming');
      inFlight = 2; // two turns start while the first entry is warmed
      finish();
      await advance(10_000);
      expect(world.warmed).toHaveLength(1);
      expect(world.reserved.size).toBe(1);
      inFlight = 1;
      await advance(10_000);
      expect(world.reserved.size).toBe(1);
      inFlight = 0;
      await advance(100);
      expect(world.reserved.size).toBe(2);
      expect(world.mostAtOnce()).toBe(1);
    });

    it('backs off when it cannot tell whether turns are in flight', async () => {
      const world = createWorld();
      const { pool, records } = createPool(world, {
        failureBackoffMs: 150,
        turnsInFlight: () => {
          throw new Error('no engine');
        },
      });
      pool.claim('alpha', alpha);
      await advance(1_000);
      expect(world.warmed).toHaveLength(0);
      expect(records.some((record) => record['level'] === 40)).toBe(true);
    });
  });

  it('backs off after a failed warm-up, releasing the reservation and saying why, then meets the demand', async () => {
    let fail = true;
    const world = createWorld(async () => {
      if (fail) throw new Error('backend down');
    });
    const { pool, records } = createPool(world, { failureBackoffMs: 150 });
    pool.claim('alpha', alpha);
    // t = 5: the first warm-up fails; the pool backs off until t = 155.
    await advance(5);
    expect(records.filter((record) => record['level'] === 40)).toHaveLength(1);
    const warning = records.find((record) => record['level'] === 40);
    expect(warning?.['msg']).toContain('new conversations start cold');
    expect(world.reserved.size).toBe(0);
    expect(world.released).toHaveLength(1);
    // Demand during the back-off (a miss: demand 2) is not warmed until it passes.
    fail = false;
    pool.claim('alpha', alpha);
    await advance(149);
    expect(pool.size).toBe(0);
    expect(world.warmed).toHaveLength(0);
    expect(records.filter((record) => record['level'] === 40)).toHaveLength(1);
    await advance(1);
    expect(world.warmed).toHaveLength(1);
    await advance(1_000);
    expect(pool.size).toBe(2);
  });

  it('releases every entry on invalidate and on close, forgets the stale keys, and warms nothing after close', async () => {
    const world = createWorld();
    const { pool } = createPool(world);
    burst(pool, 'alpha', alpha, 2);
    await advance(1_000);
    expect(pool.size).toBe(2);
    await pool.invalidate();
    expect(pool.size).toBe(0);
    expect(world.leases.size).toBe(0);
    expect(world.reserved.size).toBe(0);
    // The key rendered the old templates: nothing is warmed for it until a conversation wants it again.
    await advance(60_000);
    expect(world.warmed).toHaveLength(2);

    // Wanted again, it starts over from one entry (its misses were forgotten with it).
    pool.claim('alpha', alpha);
    await advance(1_000);
    expect(pool.size).toBe(1);
    await pool.close();
    expect(pool.state).toBe('idle');
    expect(world.leases.size).toBe(0);
    expect(world.reserved.size).toBe(0);
    expect(pool.claim('alpha', alpha)).toBeUndefined();
    await advance(60_000);
    expect(world.warmed).toHaveLength(3);
  });

  it('discards a warm-up that was in flight when the templates changed', async () => {
    let finish = (): void => {};
    const world = createWorld(() => new Promise<void>((resolve) => (finish = resolve)));
    const { pool } = createPool(world);
    pool.claim('alpha', alpha);
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

  describe('a conversation that arrives while its key is being warmed', () => {
    /** A world whose warm-ups end when the test says, and a pool whose first warm-up for alpha is under way. */
    const warmingAlpha = async (outcome: 'ok' | 'fail' = 'ok') => {
      let finish = (): void => {};
      const world = createWorld(
        () =>
          new Promise<void>((resolve, reject) => {
            finish = () => (outcome === 'ok' ? resolve() : reject(new Error('backend down')));
          }),
      );
      const created = createPool(world);
      expect(created.pool.claim('alpha', alpha)).toBeUndefined();
      await advance(5);
      expect(created.pool.state).toBe('warming');
      return { world, ...created, finish: () => finish() };
    };

    it('waits for that warm-up and gets its entry: no second executor, a hit, the demand unchanged', async () => {
      const { world, pool, claims, finish } = await warmingAlpha();
      const claim = pool.claim('alpha', alpha);
      expect(claim !== undefined && 'warming' in claim).toBe(true);
      const warming = (claim as { warming: Promise<WarmWorkspace | undefined> }).warming;
      expect(await settledNow(warming)).toBe(false);
      finish();
      const warm = await warming;
      expect(warm?.dir).toBe(world.warmed[0]);
      expect(world.leases.has(warm?.dir ?? '')).toBe(true);
      expect(pool.size).toBe(0);
      expect(claims).toEqual([false, true]);
      // The key's demand is still one entry: one replacement is warmed, not two.
      await advance(1_000);
      finish();
      await advance(1_000);
      expect(pool.size).toBe(1);
      expect(world.warmed).toHaveLength(2);
    });

    it('lets only one conversation wait for it: the next one misses', async () => {
      const { pool, claims, finish } = await warmingAlpha();
      const first = pool.claim('alpha', alpha);
      expect(first !== undefined && 'warming' in first).toBe(true);
      expect(pool.claim('alpha', alpha)).toBeUndefined();
      expect(pool.claim('beta', beta)).toBeUndefined();
      expect(claims).toEqual([false, true, false, false]);
      finish();
    });

    it('gives the waiting conversation nothing when the warm-up fails, so it starts cold', async () => {
      const { world, pool, finish } = await warmingAlpha('fail');
      const claim = pool.claim('alpha', alpha) as { warming: Promise<WarmWorkspace | undefined> };
      finish();
      expect(await claim.warming).toBeUndefined();
      expect(world.reserved.size).toBe(0);
    });

    it('gives the waiting conversation nothing when the templates changed meanwhile', async () => {
      const { world, pool, finish } = await warmingAlpha();
      const claim = pool.claim('alpha', alpha) as { warming: Promise<WarmWorkspace | undefined> };
      await pool.invalidate();
      finish();
      expect(await claim.warming).toBeUndefined();
      expect(world.reserved.size).toBe(0);
      expect(world.leases.size).toBe(0);
    });
  });

  it('is inert with size 0', async () => {
    const world = createWorld();
    const { pool, claims } = createPool(world, { size: 0 });
    expect(pool.claim('alpha', alpha)).toBeUndefined();
    await advance(60_000);
    expect(world.warmed).toHaveLength(0);
    expect(claims).toEqual([]);
  });

  it('does not wait on close for a warm-up that hangs; its entry is discarded when it ends', async () => {
    let finish = (): void => {};
    const world = createWorld(() => new Promise<void>((resolve) => (finish = resolve)));
    const { pool } = createPool(world);
    pool.claim('alpha', alpha);
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
      burst(pool, 'alpha', alpha, 4); // demand 4
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
    it("releases a key's entries when it goes inactive; the others keep their demand, not the cap", async () => {
      // Each warm-up takes 100 ms of the fake clock.
      const world = createWorld(() => new Promise<void>((resolve) => setTimeout(resolve, 100)));
      const { pool } = createPool(world, { size: 4, idleTtlMs: 1_000 });
      burst(pool, 'alpha', alpha, 4); // t = 0: alpha active until t = 1000, demand 4
      await advance(450);
      expect(world.byRoot()).toEqual({ '/home/ada/alpha': 4 }); // ready at ≈ 105, 205, 305, 405
      burst(pool, 'beta', beta, 2); // t = 450: beta demands 2, alpha keeps the other 2
      await advance(400);
      expect(world.byRoot()).toEqual({ '/home/ada/alpha': 2, '/home/bob/beta': 2 });
      // t = 1000: alpha is no longer active; its entries go, beta stays at its demand.
      await advance(200);
      expect(world.byRoot()).toEqual({ '/home/bob/beta': 2 });
      await advance(300);
      expect(world.byRoot()).toEqual({ '/home/bob/beta': 2 });
      expect(world.warmed).toHaveLength(6);
      expect(pool.claim('beta', beta)).toBeDefined();
    });

    it('re-warms an expired entry only while its key is active, and holds nothing once the key is inactive', async () => {
      const world = createWorld();
      const { pool } = createPool(world, { size: 4, idleTtlMs: 1_000 });
      burst(pool, 'alpha', alpha, 2); // t = 0: demand 2, entries ready at ≈ 5
      await advance(50);
      expect(pool.size).toBe(2);
      await advance(450);
      const hit = readyEntry(pool.claim('alpha', alpha)); // t = 500: alpha active until t = 1500; the hit is replaced
      expect(hit).toBeDefined();
      await advance(50);
      expect(pool.size).toBe(2);
      expect(world.warmed).toHaveLength(3);
      // t ≈ 1005: the entry left from the burst expires while alpha is active and is warmed again.
      await advance(500);
      expect(pool.size).toBe(2);
      expect(world.warmed).toHaveLength(4);
      // t = 1500: alpha goes inactive; its entries are released (not warmed again), the pool keeps no
      // timer, and stays empty.
      await advance(449);
      expect(pool.size).toBe(2);
      await advance(1);
      expect(pool.size).toBe(0);
      expect(pool.state).toBe('idle');
      expect(vi.getTimerCount()).toBe(0);
      await advance(10 * 1_000);
      expect(world.warmed).toHaveLength(4);
      await hit?.release();
      expect(world.leases.size).toBe(0);
      expect(world.reserved.size).toBe(1); // the claimed one is its caller's to remove
    });
  });
});
