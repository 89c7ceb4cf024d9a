/**
 * Pre-warmed scratch workspaces: a new conversation's first turn otherwise pays, on its request path,
 * for a fresh SDK executor over its new directory — project settings, rules and hooks loaded, and four
 * `git` forks of this (large) process that block the event loop. The pool does that ahead of demand:
 * each entry is a reserved workspace (rendered by the {@link WorkspaceManager}) plus a lease on an
 * executor built for it (the SDK's public `prewarmLocalWorkspace`, through {@link WarmExecutor}).
 *
 * Entries are keyed by the exact files they render to ({@link WorkspaceManager.renderKey}): an executor
 * keeps the rules it loaded, so an entry only serves a conversation whose AGENTS.md and hooks are
 * byte-identical (each naming its own directory). Rewriting the files and reloading the executor is no
 * cheaper than a cold start, so a mismatch is simply a miss.
 *
 * Sizing: a key is *active* while a new conversation wanted it (hit or miss) within `idleTtlMs`. The
 * cap (`size`) is shared fairly among the active keys: each gets `floor(size / active)` entries, and the
 * most recently wanted one also the remainder, so the targets add up to `size` exactly; with more active
 * keys than `size`, the `size` most recently wanted get one each and the others none. Inactive keys
 * target none. The pool warms, for the most recently wanted key below its target, one entry at a time
 * and only once no new conversation has started for `quietMs` (so it never competes with a burst it is
 * refilling for): the first conversation of a key fills the key's share, and every hit is replaced, so
 * a burst finds what the previous conversations left. When full, an entry of a key above its target
 * makes room — inactive keys first, then the least recently wanted — never one of a key at or below its
 * target. Every entry is released `idleTtlMs` after it was warmed and re-warmed only while its key is
 * still active: a server left idle stops warming one TTL after its last new conversation and holds
 * nothing one TTL later. A failed warm-up is logged and backs the pool off (`failureBackoffMs`):
 * warming is an optimisation, a conversation without an entry starts cold exactly as before.
 *
 * Bound: the pool's own warm-ups run only while its entries plus the executors live sessions hold
 * (`executorsInUse`) stay below `executorLimit` (the session cap plus a few): a bridge below its cap
 * keeps its burst share warm, a bridge at the cap would otherwise hold an idle executor per session and
 * per entry. There, a session's removal releases its executor ({@link WarmWorkspacePool.executorReleased}),
 * which makes room for one more entry.
 *
 * Every entry is a new reservation (a new directory under a new key) with an executor warmed for it:
 * nothing of a disposed session — its directory, its executor — ever comes back to the pool.
 *
 * Cost: an entry holds a directory and an idle executor for up to `idleTtlMs`, and each warm-up spends
 * CPU off the request path but on the same cores as live turns. One key alone fills `size` entries, once
 * per key per TTL while it stays in use, plus one warm-up per hit; `size` 0 trades that memory and CPU
 * back for cold starts. Measured figures: bench/results/warm-workspaces.md.
 */

import type { Logger } from 'pino';
import type { HostFacts } from './host-facts.js';
import type { WorkspaceManager } from './workspace-manager.js';

/** Builds an executor for a workspace directory ahead of its first agent; resolves to its release. */
export type WarmExecutor = (workspaceDir: string) => Promise<() => Promise<void>>;

/** A warm workspace handed to a new session: adopt `key`, hold `release` until the session ends. */
export type WarmWorkspace = { key: string; dir: string; release: () => Promise<void> };

export type WarmWorkspacePoolOptions = {
  manager: Pick<WorkspaceManager, 'reserveWorkspace' | 'releaseReservation'>;
  warm: WarmExecutor;
  logger: Logger;
  /** Most entries kept, over all keys; 0 disables the pool. */
  size: number;
  /** An entry unused this long is released. Default 10 minutes. */
  idleTtlMs?: number;
  /** Warm only after this long without a new conversation. Default 50 ms. */
  quietMs?: number;
  /** After a failed warm-up, no warming for this long. Default 60 s. */
  failureBackoffMs?: number;
  /** Counts claims (hit or miss), for the metrics. */
  onClaim?: (hit: boolean) => void;
  /**
   * Executors held by live sessions (their workspaces); with `executorLimit`, the pool warms only while
   * `size + executorsInUse() < executorLimit`.
   */
  executorsInUse?: () => number;
  /** See `executorsInUse`. Default: no bound. */
  executorLimit?: number;
};

/** Distinct keys whose demand is remembered (one per host environment; oldest forgotten first). */
const maxWantedKeys = 256;

/** `renderKey`: what it was warmed for. */
type Entry = WarmWorkspace & { renderKey: string; readyAt: number };

type Wanted = { facts: HostFacts | undefined; lastWantedAt: number };

export class WarmWorkspacePool {
  readonly #options: WarmWorkspacePoolOptions;
  readonly #idleTtlMs: number;
  readonly #quietMs: number;
  readonly #failureBackoffMs: number;
  /** Ready entries, oldest first. */
  #entries: Entry[] = [];
  /** Keys by when a new conversation last wanted them, least recently first. */
  readonly #wanted = new Map<string, Wanted>();
  /** Bumped by `invalidate`: a warm-up started before it renders what sessions no longer would. */
  #generation = 0;
  #lastDemandAt = 0;
  #backoffUntil = 0;
  #timer: NodeJS.Timeout | undefined;
  #timerAt = 0;
  #warming: Promise<void> | undefined;
  #closed = false;

  constructor(options: WarmWorkspacePoolOptions) {
    this.#options = options;
    this.#idleTtlMs = options.idleTtlMs ?? 10 * 60_000;
    this.#quietMs = options.quietMs ?? 50;
    this.#failureBackoffMs = options.failureBackoffMs ?? 60_000;
  }

  /** Ready entries. */
  get size(): number {
    return this.#entries.length;
  }

  /**
   * For a new conversation whose files render to `renderKey`: a ready entry of that key (removed from the
   * pool; the caller owns its reservation and release), or undefined. Either way the key is active for
   * `idleTtlMs` from now, and the pool tops it up to its share once quiet.
   */
  claim(renderKey: string, facts: HostFacts | undefined): WarmWorkspace | undefined {
    if (this.#closed || this.#options.size <= 0) return undefined;
    const now = Date.now();
    this.#expire(now);
    const index = this.#entries.findIndex((entry) => entry.renderKey === renderKey);
    const entry = index < 0 ? undefined : this.#entries.splice(index, 1)[0];
    this.#options.onClaim?.(entry !== undefined);
    this.#lastDemandAt = now;
    this.#wanted.delete(renderKey);
    this.#wanted.set(renderKey, { facts, lastWantedAt: now }); // most recently wanted last
    if (this.#wanted.size > maxWantedKeys) this.#wanted.delete(this.#wanted.keys().next().value as string);
    this.#schedule(this.#quietMs);
    return entry === undefined ? undefined : { key: entry.key, dir: entry.dir, release: entry.release };
  }

  /** A live session's executor was released: the executor bound may let the pool warm again. */
  executorReleased(): void {
    if (this.#options.executorLimit !== undefined) this.#schedule(this.#quietMs);
  }

  /** Release a claimed entry that could not be used (its lease, and its reservation if not adopted). */
  async discard(warm: WarmWorkspace): Promise<void> {
    await this.#discard(warm);
  }

  /**
   * Release every entry (templates changed: their files are no longer what a session would render) and
   * forget which keys were wanted, since those keys no longer name what a session renders; the next new
   * conversation of each environment makes its new key active.
   */
  invalidate(): Promise<void> {
    const entries = this.#entries;
    this.#entries = [];
    this.#wanted.clear();
    this.#generation += 1;
    return this.#discardAll(entries);
  }

  /**
   * Stop warming and release every entry. A warm-up in flight is waited for at most `closeWaitMs`
   * (default 2 s: on a dead backend the SDK may take minutes); it discards its entry when it ends.
   * Idempotent.
   */
  async close(closeWaitMs = 2_000): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#warming !== undefined) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.#warming,
        new Promise((resolve) => {
          timer = setTimeout(resolve, closeWaitMs);
        }),
      ]);
      clearTimeout(timer);
    }
    await this.invalidate();
  }

  /** Tick in `delayMs`, unless a tick is due sooner or a warm-up runs (it ticks when done). */
  #schedule(delayMs: number): void {
    if (this.#closed || this.#warming !== undefined) return;
    const at = Date.now() + delayMs;
    if (this.#timer !== undefined) {
      if (this.#timerAt <= at) return;
      clearTimeout(this.#timer);
    }
    this.#timerAt = at;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#tick();
    }, delayMs);
    this.#timer.unref();
  }

  #tick(): void {
    const now = Date.now();
    this.#expire(now);
    const waitFor = Math.max(this.#lastDemandAt + this.#quietMs, this.#backoffUntil) - now;
    if (waitFor > 0) {
      this.#schedule(waitFor);
      return;
    }
    const next = this.#belowExecutorLimit() ? this.#nextToWarm(now) : undefined;
    if (next === undefined) {
      // Nothing below its target (or the executor bound reached): the next change is an entry expiring
      // or a key going inactive (which raises the others' shares), or a claim or a released executor
      // (which schedule their own tick). With none, the pool is idle and keeps no timer.
      const changes = [
        ...this.#entries.map((entry) => entry.readyAt),
        ...[...this.#wanted.values()].map((wanted) => wanted.lastWantedAt),
      ];
      if (changes.length > 0) this.#schedule(Math.min(...changes) + this.#idleTtlMs - now);
      return;
    }
    this.#warming = this.#warmOne(next.renderKey, next.wanted).finally(() => {
      this.#warming = undefined;
      this.#schedule(0);
    });
  }

  /**
   * Each active key's target, most recently wanted first: the cap shared evenly, the remainder to the
   * most recently wanted key, at most `size` keys served (the most recently wanted). Decisions are made
   * only between warm-ups (one at a time), so no entry is in flight when they are.
   */
  #targets(now: number): Map<string, number> {
    const active = [...this.#wanted]
      .filter(([, wanted]) => this.#isActive(wanted, now))
      .map(([renderKey]) => renderKey)
      .reverse()
      .slice(0, this.#options.size);
    const targets = new Map<string, number>();
    if (active.length === 0) return targets;
    const share = Math.floor(this.#options.size / active.length);
    const remainder = this.#options.size - share * active.length;
    active.forEach((renderKey, rank) => targets.set(renderKey, share + (rank === 0 ? remainder : 0)));
    return targets;
  }

  /** The most recently wanted key below its target, once there is room for it (making room if needed). */
  #nextToWarm(now: number): { renderKey: string; wanted: Wanted } | undefined {
    const targets = this.#targets(now);
    const counts = new Map<string, number>();
    for (const entry of this.#entries) counts.set(entry.renderKey, (counts.get(entry.renderKey) ?? 0) + 1);
    for (const [renderKey, target] of targets) {
      const wanted = this.#wanted.get(renderKey);
      if (wanted === undefined || (counts.get(renderKey) ?? 0) >= target) continue;
      if (this.#entries.length >= this.#options.size) {
        // The targets add up to `size`, so a full pool with a key below its target has one above.
        const victim = this.#surplusEntry(targets, counts);
        if (victim === undefined) continue;
        this.#entries = this.#entries.filter((entry) => entry !== victim);
        this.#options.logger.debug(
          { workspace: victim.key, environment: renderKey.slice(0, 12) },
          'released a pre-warmed workspace to make room for a busier environment',
        );
        void this.#discard(victim);
      }
      return { renderKey, wanted };
    }
    return undefined;
  }

  /**
   * The oldest entry of a key holding more than its target: keys no longer active first (`#expire` has
   * forgotten them; target 0), then the least recently wanted active key.
   */
  #surplusEntry(targets: Map<string, number>, counts: Map<string, number>): Entry | undefined {
    const recency = [...this.#wanted.keys()]; // -1 for a forgotten key
    const over = [...counts]
      .filter(([renderKey, count]) => count > (targets.get(renderKey) ?? 0))
      .map(([renderKey]) => renderKey)
      .sort((left, right) => recency.indexOf(left) - recency.indexOf(right));
    const renderKey = over[0];
    return renderKey === undefined ? undefined : this.#entries.find((entry) => entry.renderKey === renderKey);
  }

  /** Whether the pool's own warm-ups may add an executor (see `executorsInUse`). */
  #belowExecutorLimit(): boolean {
    const { executorLimit, executorsInUse } = this.#options;
    if (executorLimit === undefined) return true;
    return this.#entries.length + (executorsInUse?.() ?? 0) < executorLimit;
  }

  #isActive(wanted: Wanted, now: number): boolean {
    return now - wanted.lastWantedAt < this.#idleTtlMs;
  }

  async #warmOne(renderKey: string, wanted: Wanted): Promise<void> {
    const { manager, logger } = this.#options;
    const generation = this.#generation;
    let reserved;
    try {
      reserved = await manager.reserveWorkspace(wanted.facts);
    } catch (error) {
      this.#failed(error, 'could not reserve a scratch workspace to pre-warm');
      return;
    }
    try {
      const release = await this.#options.warm(reserved.dir);
      const entry: Entry = { ...reserved, release, renderKey, readyAt: Date.now() };
      if (this.#closed || generation !== this.#generation) {
        await this.#discard(entry);
        return;
      }
      this.#entries.push(entry);
      logger.debug(
        { workspace: reserved.key, ready: this.#entries.length },
        'pre-warmed a scratch workspace',
      );
    } catch (error) {
      await manager.releaseReservation(reserved.key).catch(() => false);
      this.#failed(error, 'could not pre-warm a Cursor executor; new conversations start cold');
    }
  }

  #failed(error: unknown, message: string): void {
    this.#backoffUntil = Date.now() + this.#failureBackoffMs;
    this.#options.logger.warn({ err: error, retryInMs: this.#failureBackoffMs }, message);
  }

  /** Release entries warmed `idleTtlMs` ago and forget keys no longer active. */
  #expire(now: number): void {
    const expired = this.#entries.filter((entry) => now - entry.readyAt >= this.#idleTtlMs);
    if (expired.length > 0) {
      this.#entries = this.#entries.filter((entry) => now - entry.readyAt < this.#idleTtlMs);
      void this.#discardAll(expired);
    }
    for (const [renderKey, wanted] of this.#wanted) {
      if (!this.#isActive(wanted, now)) this.#wanted.delete(renderKey);
    }
  }

  async #discardAll(entries: Entry[]): Promise<void> {
    await Promise.all(entries.map((entry) => this.#discard(entry)));
  }

  async #discard(entry: WarmWorkspace): Promise<void> {
    try {
      await entry.release();
    } catch (error) {
      this.#options.logger.debug({ err: error }, 'releasing a pre-warmed executor failed');
    }
    await this.#options.manager.releaseReservation(entry.key).catch((error: unknown) => {
      this.#options.logger.warn(
        { err: error, workspace: entry.key },
        'could not remove a pre-warmed workspace',
      );
    });
  }
}
