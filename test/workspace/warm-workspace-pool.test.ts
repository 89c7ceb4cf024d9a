import { afterEach, describe, expect, it } from 'vitest';
import type { HostFacts } from '../../src/workspace/host-facts.js';
import { WarmWorkspacePool, type WarmWorkspacePoolOptions } from '../../src/workspace/warm-workspace-pool.js';
import { createCapturingLogger, waitFor } from './workspace-test-helpers.js';

/** A manager and an executor warmer that record what the pool does with them. */
const createWorld = (warmOutcome: () => Promise<void> = async () => {}) => {
  let next = 0;
  const reserved = new Map<string, HostFacts | undefined>();
  const released: string[] = [];
  const leases = new Set<string>();
  const warmed: string[] = [];
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
    await warmOutcome();
    warmed.push(dir);
    leases.add(dir);
    return async () => {
      leases.delete(dir);
    };
  };
  return { manager, warm, reserved, released, leases, warmed };
};

const pools: WarmWorkspacePool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

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

describe('WarmWorkspacePool', () => {
  it('after a miss warms two entries of the key, one at a time; a hit hands one over and asks for its replacement', async () => {
    const world = createWorld();
    const { pool, claims } = createPool(world);
    expect(pool.claim('alpha', alpha)).toBeUndefined();
    await waitFor(() => pool.size === 2);
    expect(world.reserved.size).toBe(2);
    expect([...world.reserved.values()]).toEqual([alpha, alpha]);

    const warm = pool.claim('alpha', alpha);
    expect(warm?.dir).toBe(world.warmed[0]);
    expect(pool.size).toBe(1);
    await waitFor(() => pool.size === 2);
    expect(claims).toEqual([false, true]);
    // The handed-over lease is the caller's: the pool does not release it.
    expect(world.leases.has(warm?.dir ?? '')).toBe(true);
    await warm?.release();
    expect(world.leases.has(warm?.dir ?? '')).toBe(false);
  });

  it('never hands out an entry rendered for another key', async () => {
    const world = createWorld();
    const { pool, claims } = createPool(world);
    pool.claim('alpha', alpha);
    await waitFor(() => pool.size === 2);
    expect(pool.claim('beta', { ...alpha, root: '/home/bob/beta' })).toBeUndefined();
    expect(claims).toEqual([false, false]);
  });

  it('grows with a burst of new conversations, up to its size', async () => {
    const world = createWorld();
    const { pool } = createPool(world, { size: 5 });
    for (let index = 0; index < 10; index += 1) pool.claim('alpha', alpha);
    await waitFor(() => pool.size === 5);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(pool.size).toBe(5);
    expect(world.warmed).toHaveLength(5);
  });

  it('waits for a quiet moment: no warm-up while new conversations keep arriving', async () => {
    const world = createWorld();
    const { pool } = createPool(world, { quietMs: 60 });
    const until = Date.now() + 200;
    while (Date.now() < until) {
      pool.claim('alpha', alpha);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(world.warmed).toHaveLength(0);
    await waitFor(() => pool.size > 0);
  });

  it('when full, lets an entry of the least recently wanted other key make room', async () => {
    const world = createWorld();
    const { pool } = createPool(world, { size: 2 });
    pool.claim('alpha', alpha);
    await waitFor(() => pool.size === 2);
    const alphaDirs = [...world.warmed];
    pool.claim('beta', undefined);
    await waitFor(() => world.warmed.length === 4);
    expect(pool.size).toBe(2);
    // Both alpha entries gave way (released and removed) to beta's two.
    expect(world.released).toEqual(alphaDirs.map((dir) => dir.slice('/ws/'.length)));
    for (const dir of alphaDirs) expect(world.leases.has(dir)).toBe(false);
    expect(pool.claim('beta', undefined)).toBeDefined();
    expect(pool.claim('alpha', alpha)).toBeUndefined();
  });

  it('releases entries left unused for idleTtlMs', async () => {
    const world = createWorld();
    const { pool } = createPool(world, { idleTtlMs: 80 });
    pool.claim('alpha', alpha);
    await waitFor(() => pool.size === 2);
    await waitFor(() => pool.size === 0 && world.leases.size === 0, 2_000);
    expect(world.reserved.size).toBe(0);
  });

  it('backs off after a failed warm-up, releasing the reservation and saying why', async () => {
    let fail = true;
    const world = createWorld(async () => {
      if (fail) throw new Error('backend down');
    });
    const { pool, records } = createPool(world, { failureBackoffMs: 150 });
    pool.claim('alpha', alpha);
    await waitFor(() => records.some((record) => record['level'] === 40));
    const warning = records.find((record) => record['level'] === 40);
    expect(warning?.['msg']).toContain('new conversations start cold');
    expect(world.reserved.size).toBe(0);
    expect(world.released).toHaveLength(1);
    // Demand during the back-off is not warmed until it passes.
    fail = false;
    pool.claim('alpha', alpha);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(pool.size).toBe(0);
    await waitFor(() => pool.size === 2, 2_000);
  });

  it('releases every entry on invalidate and on close, and warms nothing after close', async () => {
    const world = createWorld();
    const { pool } = createPool(world);
    pool.claim('alpha', alpha);
    await waitFor(() => pool.size === 2);
    await pool.invalidate();
    expect(pool.size).toBe(0);
    expect(world.leases.size).toBe(0);
    expect(world.reserved.size).toBe(0);

    pool.claim('alpha', alpha);
    await waitFor(() => pool.size === 2);
    await pool.close();
    expect(world.leases.size).toBe(0);
    expect(world.reserved.size).toBe(0);
    expect(pool.claim('alpha', alpha)).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(world.warmed).toHaveLength(4);
  });

  it('is inert with size 0', async () => {
    const world = createWorld();
    const { pool, claims } = createPool(world, { size: 0 });
    expect(pool.claim('alpha', alpha)).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(world.warmed).toHaveLength(0);
    expect(claims).toEqual([]);
  });

  it('does not wait on close for a warm-up that hangs; its entry is discarded when it ends', async () => {
    let finish = (): void => {};
    const world = createWorld(() => new Promise<void>((resolve) => (finish = resolve)));
    const { pool } = createPool(world);
    pool.claim('alpha', alpha);
    await waitFor(() => world.reserved.size === 1);
    const started = Date.now();
    await pool.close(100);
    expect(Date.now() - started).toBeLessThan(1_000);
    finish();
    await waitFor(() => world.reserved.size === 0 && world.leases.size === 0);
    expect(pool.size).toBe(0);
  });
});
