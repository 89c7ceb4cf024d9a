/**
 * Pre-warmed scratch workspaces: a new conversation's first turn otherwise pays, on its request path,
 * for a fresh SDK executor over its new directory — project settings, rules and hooks loaded, and four
 * `git` forks of this (large) process that block the event loop. The pool does that ahead of demand:
 * each entry is a reserved workspace (rendered by the {@link WorkspaceManager}) plus a lease on an
 * executor built for it (the SDK's public `prewarmLocalWorkspace`, through {@link WarmExecutor}).
 *
 * Entries are keyed by the exact files they render to ({@link WorkspaceManager.renderKey}): an executor
 * keeps the rules it loaded, so an entry only serves a conversation whose AGENTS.md and hooks are
 * byte-identical (each naming its own directory). Rewriting the files and reloading the executor costs
 * as much as a cold start (measured), so a mismatch is simply a miss.
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
 * per entry. There, new conversations are served by the executors of the sessions they evict:
 *
 * Recycling: a session that adopted an entry gives its workspace and executor back when it is evicted
 * ({@link WarmWorkspacePool.expectRecycle} at the start of its removal, then the ticket's `offer` once
 * its agent is disposed and its directory is verified to be exactly a fresh render). An offer is taken
 * while its key is active and below its target and the pool below `size` (the executor bound does not
 * apply: it replaces the session's executor), and restarts the TTL. A claim finding no ready entry of
 * its key waits (at most `recycleWaitMs`) for one recycle of that key in flight, since at the cap the
 * new conversation's admission evicts a session whose disposal is still under way; one claim per
 * recycle in flight waits, the others miss.
 *
 * Cost (measured on the fake backend, heap snapshots): an entry holds ≈ 0.56 MB live (a directory and an
 * idle executor: ≈ 0.49 MB of V8 heap, half of it lru-cache slot arrays the SDK's ignore service
 * allocates at their maximum size, and ≈ 0.07 MB of buffers), more in RSS through the heap growth it
 * causes, and a warm-up allocates ≈ 2.6 MB and costs ≈ 20–40 ms of CPU, off the request path but on the
 * same cores as live turns. One key alone fills `size` entries (32 by default: ≈ 18 MB live and ≈ 1 s of
 * CPU), once per key per TTL while it stays in use, plus one warm-up per hit below the session cap.
 */

import type { Logger } from 'pino';
import type { HostFacts } from './host-facts.js';
import type { WorkspaceManager } from './workspace-manager.js';

/** Builds an executor for a workspace directory ahead of its first agent; resolves to its release. */
export type WarmExecutor = (workspaceDir: string) => Promise<() => Promise<void>>;

/**
 * A warm workspace handed to a new session: adopt `key`, hold `release` until the session ends.
 * `renderKey` and `generation` say what it was warmed for (see {@link WarmWorkspacePool.expectRecycle}).
 */
export type WarmWorkspace = {
  key: string;
  dir: string;
  release: () => Promise<void>;
  renderKey: string;
  generation: number;
};

/** A workspace given back by a session: a reservation again (same directory) and its executor lease. */
export type RecycledWorkspace = { key: string; dir: string; release: () => Promise<void> };

/**
 * A recycle in flight (from {@link WarmWorkspacePool.expectRecycle}): settle it exactly once, with
 * `offer` (resolves whether the pool took the workspace; if not, the caller still owns it) or `cancel`
 * (the workspace could not be recycled). Later calls do nothing.
 */
export type RecycleTicket = {
  offer(workspace: RecycledWorkspace): boolean;
  cancel(): void;
};

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
  /** Counts recycled workspaces the pool took (to a waiting claim or as an entry). */
  onRecycled?: () => void;
  /**
   * Executors held by live sessions (their workspaces); with `executorLimit`, the pool's own warm-ups
   * run only while `size + executorsInUse() < executorLimit`. Recycled offers are not bound by it.
   */
  executorsInUse?: () => number;
  /** See `executorsInUse`. Default: no bound. */
  executorLimit?: number;
  /** How long a claim with no ready entry waits for a recycle of its key in flight. Default 250 ms. */
  recycleWaitMs?: number;
};

/** Distinct keys whose demand is remembered (one per host environment; oldest forgotten first). */
const maxWantedKeys = 256;

type Entry = WarmWorkspace & { readyAt: number };

/** A recycle in flight; `waiter`: the one claim waiting for it. */
type Pending = {
  renderKey: string;
  waiter: ((entry: WarmWorkspace | undefined) => void) | undefined;
  /** When the recycle was announced (its session's removal started). */
  since: number;
};

type Wanted = { facts: HostFacts | undefined; lastWantedAt: number };

export class WarmWorkspacePool {
  readonly #options: WarmWorkspacePoolOptions;
  readonly #idleTtlMs: number;
  readonly #quietMs: number;
  readonly #failureBackoffMs: number;
  readonly #recycleWaitMs: number;
  /** Ready entries, oldest first. */
  #entries: Entry[] = [];
  /** Recycles in flight, oldest first. */
  #pending: Pending[] = [];
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
    this.#recycleWaitMs = options.recycleWaitMs ?? 250;
  }

  /** Ready entries. */
  get size(): number {
    return this.#entries.length;
  }

  /**
   * For a new conversation whose files render to `renderKey`: a ready entry of that key (removed from the
   * pool; the caller owns its reservation and release), else the next recycle of that key in flight that
   * no other claim waits for (at most `recycleWaitMs`), else undefined. Either way the key is active for
   * `idleTtlMs` from now (marked synchronously), and the pool tops it up to its share once quiet.
   */
  async claim(renderKey: string, facts: HostFacts | undefined): Promise<WarmWorkspace | undefined> {
    if (this.#closed || this.#options.size <= 0) return undefined;
    const now = Date.now();
    this.#expire(now);
    const index = this.#entries.findIndex((entry) => entry.renderKey === renderKey);
    const entry = index < 0 ? undefined : this.#entries.splice(index, 1)[0];
    this.#lastDemandAt = now;
    this.#wanted.delete(renderKey);
    this.#wanted.set(renderKey, { facts, lastWantedAt: now }); // most recently wanted last
    if (this.#wanted.size > maxWantedKeys) this.#wanted.delete(this.#wanted.keys().next().value as string);
    this.#schedule(this.#quietMs);
    const pending =
      entry === undefined
        ? this.#pending.find(
            (candidate) => candidate.renderKey === renderKey && candidate.waiter === undefined,
          )
        : undefined;
    const claimed = entry ?? (pending === undefined ? undefined : await this.#waitFor(pending));
    this.#options.onClaim?.(claimed !== undefined);
    return claimed === undefined ? undefined : this.#handOut(claimed);
  }

  /**
   * A session holding a workspace warmed for `renderKey` in `generation` is being removed: whether the
   * pool would take it back now (open, same templates, its key active and below its target counting the
   * recycles already in flight). If so, the returned ticket makes claims of the key wait for it; settle
   * it once the session's agent is disposed and its directory verified. Undefined: remove it as usual.
   */
  expectRecycle(renderKey: string, generation: number): RecycleTicket | undefined {
    if (!this.#accepts(renderKey, generation)) return undefined;
    const pending: Pending = { renderKey, waiter: undefined, since: Date.now() };
    this.#pending.push(pending);
    let settled = false;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      this.#pending = this.#pending.filter((candidate) => candidate !== pending);
      return true;
    };
    return {
      offer: (workspace) => {
        if (!settle()) return false;
        const entry: Entry = { ...workspace, renderKey, generation, readyAt: Date.now() };
        const waiter = pending.waiter;
        const taken =
          !this.#closed &&
          generation === this.#generation &&
          (waiter !== undefined || this.#accepts(renderKey, generation));
        if (taken) {
          if (waiter !== undefined) waiter(entry);
          else this.#entries.push(entry);
          this.#options.onRecycled?.();
          this.#options.logger.debug(
            {
              workspace: workspace.key,
              toClaim: waiter !== undefined,
              ready: this.#entries.length,
              ms: Date.now() - pending.since,
            },
            "recycled an evicted conversation's scratch workspace and executor",
          );
        } else {
          waiter?.(undefined);
          this.#options.logger.debug(
            { workspace: workspace.key, ms: Date.now() - pending.since },
            'not recycling a scratch workspace: the pool no longer wants it',
          );
        }
        this.#schedule(this.#quietMs);
        return taken;
      },
      cancel: () => {
        if (!settle()) return;
        pending.waiter?.(undefined);
        this.#schedule(this.#quietMs);
      },
    };
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
    // Recycles in flight were warmed for the old templates: their offers are refused (generation).
    for (const pending of this.#pending.splice(0)) pending.waiter?.(undefined);
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

  /**
   * Whether one more workspace of `renderKey` (besides the entries and the other recycles in flight)
   * would be taken: the pool open, the same templates, the key active and below its target, room.
   */
  #accepts(renderKey: string, generation: number): boolean {
    if (this.#closed || this.#options.size <= 0 || generation !== this.#generation) return false;
    const now = Date.now();
    this.#expire(now);
    const target = this.#targets(now).get(renderKey) ?? 0;
    const held = this.#entries.filter((entry) => entry.renderKey === renderKey).length;
    const pending = this.#pending.filter((candidate) => candidate.renderKey === renderKey).length;
    return held + pending < target && this.#entries.length + this.#pending.length < this.#options.size;
  }

  /** Wait for a recycle in flight, at most `recycleWaitMs`; undefined when it fails or is late. */
  #waitFor(pending: Pending): Promise<WarmWorkspace | undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        pending.waiter = undefined;
        this.#options.logger.debug(
          { waitedMs: this.#recycleWaitMs, sinceEvictionMs: Date.now() - pending.since },
          'a recycled scratch workspace was not ready in time; the new conversation starts cold',
        );
        resolve(undefined);
      }, this.#recycleWaitMs);
      pending.waiter = (entry) => {
        clearTimeout(timer);
        pending.waiter = undefined;
        resolve(entry);
      };
    });
  }

  #handOut(entry: WarmWorkspace): WarmWorkspace {
    const { key, dir, release, renderKey, generation } = entry;
    return { key, dir, release, renderKey, generation };
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
      // or a key going inactive (which raises the others' shares), or a claim, a recycle or a released
      // executor (which schedule their own tick). With none, the pool is idle and keeps no timer.
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
    // A recycle in flight will be an entry: warming for it would only get the offer refused.
    const withPending = new Map(counts);
    for (const pending of this.#pending)
      withPending.set(pending.renderKey, (withPending.get(pending.renderKey) ?? 0) + 1);
    for (const [renderKey, target] of targets) {
      const wanted = this.#wanted.get(renderKey);
      if (wanted === undefined || (withPending.get(renderKey) ?? 0) >= target) continue;
      if (this.#entries.length + this.#pending.length >= this.#options.size) {
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
      const entry: Entry = { ...reserved, release, renderKey, generation, readyAt: Date.now() };
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
