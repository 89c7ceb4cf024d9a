/**
 * Pre-warmed scratch workspaces: a new conversation's first turn otherwise pays, on its request path,
 * for a fresh SDK executor over its new directory — project settings, rules and hooks loaded, and four
 * `git` forks of this (large) process that block the event loop. The pool does that ahead of demand:
 * each entry is a reserved workspace (rendered by the {@link WorkspaceManager}) plus a lease on an
 * executor built for it (the SDK's public `prewarmLocalWorkspace`, through {@link WarmExecutor}).
 *
 * A warm-up talks to Cursor: every new executor fetches the team's admin settings, and the SDK reports its
 * startup (see `CursorUpstream.prewarm`). So the pool warms only for demand it has seen — a new
 * conversation that wanted a key — never on its own, and only as much as that demand needs.
 *
 * Entries are keyed by the exact files they render to ({@link WorkspaceManager.renderKey}): an executor
 * keeps the rules it loaded, so an entry only serves a conversation whose AGENTS.md and hooks are
 * byte-identical (each naming its own directory). Rewriting the files and reloading the executor is no
 * cheaper than a cold start, so a mismatch is simply a miss.
 *
 * Sizing: a key is *active* while a new conversation wanted it (hit or miss) within `idleTtlMs`; inactive
 * keys target no entry. An active key's *demand* is one entry plus one per miss it had within
 * `demandWindowMs` while already active — a conversation that found nothing ready because conversations
 * came faster than the pool refilled (a key's first conversation is its activation, not a miss that
 * counts). `size` is a cap, not a target: when the active keys' demands add up to more, it is shared
 * max-min fairly (a key demanding less than an even share gets its demand, the others split the rest
 * evenly, the remainder to the most recently wanted; with more active keys than `size`, only the `size`
 * most recently wanted are served). A key's first conversation thus warms one entry, every hit is
 * replaced, and a burst that outran the pool raises the target for the next burst; as its misses age out
 * of the window the target falls back, and entries above their key's target are released at once.
 *
 * When: warm-ups never compete with live turns. The pool warms one entry at a time, only once no new
 * conversation has started for `quietMs`, and only while no turn is in flight (`turnsInFlight`: a request
 * admitted or a run streaming; a run parked on a host tool call waits on its client, not on this process);
 * while turns are in flight it checks again every `busyRecheckMs` and starts nothing. A warm-up already
 * running when a turn arrives is not interrupted (it is one SDK call), but no other starts after it.
 * Nothing is warmed before the first conversation, so the first request after start never waits for
 * warm-up work it did not cause. A new conversation that arrives while an entry for its key is being warmed
 * takes that entry when the warm-up ends (one conversation per warm-up): the rest of a warm-up under way
 * is shorter than a cold start beside it, which would also compete with it for the CPU.
 *
 * Every entry is released `idleTtlMs` after it was warmed and re-warmed only while its key is still
 * active, and a key going inactive releases its entries: a server left idle warms nothing, and holds
 * nothing, one TTL after its last new conversation. A failed warm-up is logged and backs the pool off
 * (`failureBackoffMs`): warming is an optimisation, a conversation without an entry starts cold exactly
 * as before.
 *
 * Bound: the pool's own warm-ups run only while its entries plus the executors live sessions hold
 * (`executorsInUse`) stay below `executorLimit` (the session cap plus a few): a bridge at the cap would
 * otherwise hold an idle executor per session and per entry. There, a session's removal releases its
 * executor ({@link WarmWorkspacePool.executorReleased}), which makes room for one more entry.
 *
 * Every entry is a new reservation (a new directory under a new key) with an executor warmed for it:
 * nothing of a disposed session — its directory, its executor — ever comes back to the pool.
 *
 * Cost: an entry holds a directory and an idle executor for up to `idleTtlMs`, and each warm-up spends
 * CPU off the request path (while no turn is in flight) and the backend calls above; `size` 0 trades that
 * for cold starts. Measured figures: bench/results/warm-workspaces.md.
 */

import type { Logger } from 'pino';
import type { HostFacts } from './host-facts.js';
import type { WorkspaceManager } from './workspace-manager.js';

/** Builds an executor for a workspace directory ahead of its first agent; resolves to its release. */
export type WarmExecutor = (workspaceDir: string) => Promise<() => Promise<void>>;

/** A warm workspace handed to a new session: adopt `key`, hold `release` until the session ends. */
export type WarmWorkspace = { key: string; dir: string; release: () => Promise<void> };

/**
 * What {@link WarmWorkspacePool.claim} gives a new conversation: a ready entry; the entry being warmed
 * for its key right now (`warming`: the warm-up's outcome, undefined when it failed or was dropped), so
 * that the conversation waits for the rest of that warm-up instead of starting a second executor beside
 * it; or undefined (start cold).
 */
export type WarmClaim = WarmWorkspace | { warming: Promise<WarmWorkspace | undefined> } | undefined;

/**
 * What the pool is doing: `warming` an entry; `waiting` with work it may have to do (a quiet period,
 * turns in flight, a back-off, or a claim not yet looked at); `idle`: every active key is at its target
 * (or the executor bound holds), and it starts nothing until a claim, a released executor, an expiry or
 * a demand ageing out.
 */
export type WarmPoolState = 'idle' | 'waiting' | 'warming';

export type WarmWorkspacePoolOptions = {
  manager: Pick<WorkspaceManager, 'reserveWorkspace' | 'releaseReservation'>;
  warm: WarmExecutor;
  logger: Logger;
  /** The most entries kept, over all keys: a cap, not a target; 0 disables the pool. */
  size: number;
  /** An entry unused this long is released; a key not wanted this long is inactive. Default 10 minutes. */
  idleTtlMs?: number;
  /** A key's misses count towards its demand for this long. Default 5 minutes. */
  demandWindowMs?: number;
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
  /**
   * Turns in flight on the engine, read before each warm-up: none starts while it is above 0. Default:
   * none are ever in flight.
   */
  turnsInFlight?: () => number | Promise<number>;
  /** While turns are in flight, look again after this long. Default 200 ms. */
  busyRecheckMs?: number;
};

/** A warm-up under way: its key, and the conversation that claimed its entry, if one did. */
type InFlight = { renderKey: string; claimedBy?: (entry: WarmWorkspace | undefined) => void };

/** Distinct keys whose demand is remembered (one per host environment; oldest forgotten first). */
const maxWantedKeys = 256;

/** `renderKey`: what it was warmed for. */
type Entry = WarmWorkspace & { renderKey: string; readyAt: number };

/** `misses`: when it was claimed while active and nothing was ready (within `demandWindowMs`, oldest first). */
type Wanted = { facts: HostFacts | undefined; lastWantedAt: number; misses: number[] };

export class WarmWorkspacePool {
  readonly #options: WarmWorkspacePoolOptions;
  readonly #idleTtlMs: number;
  readonly #demandWindowMs: number;
  readonly #quietMs: number;
  readonly #failureBackoffMs: number;
  readonly #busyRecheckMs: number;
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
  /** A look at what to do (and the warm-up it starts), one at a time. */
  #cycle: Promise<void> | undefined;
  #warmingNow = false;
  #inFlight: InFlight | undefined;
  /** Something may be below its target: cleared by a cycle that finds nothing to warm. */
  #pending = false;
  #closed = false;

  constructor(options: WarmWorkspacePoolOptions) {
    this.#options = options;
    this.#idleTtlMs = options.idleTtlMs ?? 10 * 60_000;
    this.#demandWindowMs = options.demandWindowMs ?? 5 * 60_000;
    this.#quietMs = options.quietMs ?? 50;
    this.#failureBackoffMs = options.failureBackoffMs ?? 60_000;
    this.#busyRecheckMs = options.busyRecheckMs ?? 200;
  }

  /** Ready entries. */
  get size(): number {
    return this.#entries.length;
  }

  get state(): WarmPoolState {
    if (this.#warmingNow) return 'warming';
    return this.#pending && !this.#closed ? 'waiting' : 'idle';
  }

  /**
   * For a new conversation whose files render to `renderKey`: a ready entry of that key (removed from the
   * pool; the caller owns its reservation and release), else the entry being warmed for that key if no
   * other conversation claimed it (see {@link WarmClaim}), else undefined. Either way the key is active
   * for `idleTtlMs` from now; a miss of an already active key raises its demand. The pool tops the key up
   * to its target once quiet and no turn is in flight.
   */
  claim(renderKey: string, facts: HostFacts | undefined): WarmClaim {
    if (this.#closed || this.#options.size <= 0) return undefined;
    const now = Date.now();
    this.#expire(now);
    const index = this.#entries.findIndex((entry) => entry.renderKey === renderKey);
    const entry = index < 0 ? undefined : this.#entries.splice(index, 1)[0];
    const inFlight = this.#inFlight;
    const joined =
      entry === undefined && inFlight?.renderKey === renderKey && inFlight.claimedBy === undefined
        ? new Promise<WarmWorkspace | undefined>((resolve) => (inFlight.claimedBy = resolve))
        : undefined;
    this.#options.onClaim?.(entry !== undefined || joined !== undefined);
    this.#lastDemandAt = now;
    const previous = this.#wanted.get(renderKey); // active: `#expire` forgot the others
    const misses = previous?.misses ?? [];
    if (entry === undefined && joined === undefined && previous !== undefined) {
      misses.push(now);
      if (misses.length > this.#options.size) misses.shift(); // demand is capped at `size` anyway
    }
    this.#wanted.delete(renderKey);
    this.#wanted.set(renderKey, { facts, lastWantedAt: now, misses }); // most recently wanted last
    if (this.#wanted.size > maxWantedKeys) this.#wanted.delete(this.#wanted.keys().next().value as string);
    this.#pending = true;
    this.#schedule(this.#quietMs);
    if (joined !== undefined) return { warming: joined };
    return entry === undefined ? undefined : { key: entry.key, dir: entry.dir, release: entry.release };
  }

  /** A live session's executor was released: the executor bound may let the pool warm again. */
  executorReleased(): void {
    if (this.#options.executorLimit === undefined) return;
    this.#pending = true;
    this.#schedule(this.#quietMs);
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
    if (this.#cycle !== undefined) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.#cycle,
        new Promise((resolve) => {
          timer = setTimeout(resolve, closeWaitMs);
        }),
      ]);
      clearTimeout(timer);
    }
    await this.invalidate();
  }

  /** Tick in `delayMs`, unless a tick is due sooner or a cycle runs (it schedules the next when done). */
  #schedule(delayMs: number): void {
    if (this.#closed || this.#cycle !== undefined) return;
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
    this.#cycle = this.#runCycle()
      .catch((error: unknown) => {
        this.#failed(error, 'pre-warming failed unexpectedly');
        return this.#failureBackoffMs;
      })
      .then((nextInMs) => {
        this.#cycle = undefined;
        if (nextInMs !== undefined) this.#schedule(nextInMs);
      });
  }

  /**
   * One look at what to do: wait for turns in flight, the quiet period and the back-off; release entries
   * above their key's target; warm one entry for the most recently wanted key below its target. Resolves
   * to when to look again, or undefined when only a claim or a released executor can change anything.
   */
  async #runCycle(): Promise<number | undefined> {
    // First, so that what follows sees the state after the await.
    if (await this.#turnsInFlight()) return this.#busyRecheckMs;
    if (this.#closed) return undefined;
    const now = Date.now();
    this.#expire(now);
    const waitFor = Math.max(this.#lastDemandAt + this.#quietMs, this.#backoffUntil) - now;
    if (waitFor > 0) return waitFor;
    const targets = this.#targets(now);
    this.#releaseSurplus(targets);
    const next = this.#belowExecutorLimit() ? this.#nextToWarm(targets) : undefined;
    if (next === undefined) {
      // Nothing below its target (or the executor bound reached): the next change is an entry expiring,
      // a key going inactive (which raises the others' shares), or a miss ageing out of the window (which
      // lowers its key's target), or a claim or a released executor (which schedule their own tick).
      this.#pending = false;
      const changes = [
        ...this.#entries.map((entry) => entry.readyAt + this.#idleTtlMs),
        ...[...this.#wanted.values()].flatMap((wanted) => [
          wanted.lastWantedAt + this.#idleTtlMs,
          ...wanted.misses.map((missedAt) => missedAt + this.#demandWindowMs),
        ]),
      ];
      return changes.length > 0 ? Math.max(0, Math.min(...changes) - now) : undefined;
    }
    this.#warmingNow = true;
    try {
      await this.#warmOne(next.renderKey, next.wanted);
    } finally {
      this.#warmingNow = false;
    }
    return 0;
  }

  /** Whether a turn is in flight; a failure to tell backs the pool off, as a failed warm-up does. */
  async #turnsInFlight(): Promise<boolean> {
    const read = this.#options.turnsInFlight;
    if (read === undefined) return false;
    try {
      return (await read()) > 0;
    } catch (error) {
      this.#failed(error, 'could not read the turns in flight; not pre-warming for now');
      return false;
    }
  }

  /**
   * Each active key's target, most recently wanted first: its demand, with the cap shared max-min fairly
   * when the demands add up to more (keys demanding less than an even share keep their demand, the others
   * split the rest evenly, the remainder to the most recently wanted), at most `size` keys served (the
   * most recently wanted). Decided only between warm-ups (one at a time), so no entry is in flight then.
   */
  #targets(now: number): Map<string, number> {
    const active = [...this.#wanted]
      .filter(([, wanted]) => this.#isActive(wanted, now))
      .reverse()
      .slice(0, this.#options.size);
    // Smallest demand first; among equal demands the most recently wanted last, so it gets the remainder.
    const byDemand = active
      .map(([renderKey, wanted], rank) => ({ renderKey, rank, demand: this.#demand(wanted) }))
      .sort((left, right) => left.demand - right.demand || right.rank - left.rank);
    const shares = new Map<string, number>();
    let remaining = this.#options.size;
    byDemand.forEach(({ renderKey, demand }, index) => {
      const share = Math.min(demand, Math.floor(remaining / (byDemand.length - index)));
      shares.set(renderKey, share);
      remaining -= share;
    });
    return new Map(active.map(([renderKey]) => [renderKey, shares.get(renderKey) ?? 0]));
  }

  /** One entry, plus one per miss within the demand window, up to the cap. */
  #demand(wanted: Wanted): number {
    return Math.min(this.#options.size, 1 + wanted.misses.length);
  }

  /** Release the oldest entries of every key holding more than its target (inactive keys: target 0). */
  #releaseSurplus(targets: Map<string, number>): void {
    const kept = new Map<string, number>();
    const surplus: Entry[] = [];
    // Newest first, so that a key's oldest entries are the ones over its target.
    for (const entry of [...this.#entries].reverse()) {
      const count = kept.get(entry.renderKey) ?? 0;
      if (count < (targets.get(entry.renderKey) ?? 0)) kept.set(entry.renderKey, count + 1);
      else surplus.push(entry);
    }
    if (surplus.length === 0) return;
    this.#entries = this.#entries.filter((entry) => !surplus.includes(entry));
    this.#options.logger.debug(
      { workspaces: surplus.map((entry) => entry.key), ready: this.#entries.length },
      "released pre-warmed workspaces above their environment's demand",
    );
    void this.#discardAll(surplus);
  }

  /**
   * The most recently wanted key below its target. After {@link #releaseSurplus} every key is at or
   * below its target and the targets add up to at most `size`, so there is room for it.
   */
  #nextToWarm(targets: Map<string, number>): { renderKey: string; wanted: Wanted } | undefined {
    const counts = new Map<string, number>();
    for (const entry of this.#entries) counts.set(entry.renderKey, (counts.get(entry.renderKey) ?? 0) + 1);
    for (const [renderKey, target] of targets) {
      const wanted = this.#wanted.get(renderKey);
      if (wanted !== undefined && (counts.get(renderKey) ?? 0) < target) return { renderKey, wanted };
    }
    return undefined;
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

  /** Warms one entry for `renderKey`; a conversation that claimed it meanwhile gets it, else the pool. */
  async #warmOne(renderKey: string, wanted: Wanted): Promise<void> {
    const inFlight: InFlight = { renderKey };
    this.#inFlight = inFlight;
    let handedOver = false;
    try {
      handedOver = await this.#warmEntry(renderKey, wanted, (entry) => {
        if (inFlight.claimedBy === undefined) return false;
        inFlight.claimedBy({ key: entry.key, dir: entry.dir, release: entry.release });
        return true;
      });
    } finally {
      this.#inFlight = undefined;
      if (!handedOver) inFlight.claimedBy?.(undefined);
    }
  }

  /** Resolves to whether `handOver` took the entry; an entry it did not take joins the pool. */
  async #warmEntry(renderKey: string, wanted: Wanted, handOver: (entry: Entry) => boolean): Promise<boolean> {
    const { manager, logger } = this.#options;
    const generation = this.#generation;
    let reserved;
    try {
      reserved = await manager.reserveWorkspace(wanted.facts);
    } catch (error) {
      this.#failed(error, 'could not reserve a scratch workspace to pre-warm');
      return false;
    }
    try {
      const release = await this.#options.warm(reserved.dir);
      const entry: Entry = { ...reserved, release, renderKey, readyAt: Date.now() };
      if (this.#closed || generation !== this.#generation) {
        await this.#discard(entry);
        return false;
      }
      if (handOver(entry)) {
        logger.debug(
          { workspace: reserved.key },
          'handed a pre-warmed workspace to the conversation waiting',
        );
        return true;
      }
      this.#entries.push(entry);
      logger.debug(
        { workspace: reserved.key, ready: this.#entries.length },
        'pre-warmed a scratch workspace',
      );
      return false;
    } catch (error) {
      await manager.releaseReservation(reserved.key).catch(() => false);
      this.#failed(error, 'could not pre-warm a Cursor executor; new conversations start cold');
      return false;
    }
  }

  #failed(error: unknown, message: string): void {
    this.#backoffUntil = Date.now() + this.#failureBackoffMs;
    this.#options.logger.warn({ err: error, retryInMs: this.#failureBackoffMs }, message);
  }

  /**
   * Release entries warmed `idleTtlMs` ago, forget keys no longer active and misses older than the
   * demand window.
   */
  #expire(now: number): void {
    const expired = this.#entries.filter((entry) => now - entry.readyAt >= this.#idleTtlMs);
    if (expired.length > 0) {
      this.#entries = this.#entries.filter((entry) => now - entry.readyAt < this.#idleTtlMs);
      void this.#discardAll(expired);
    }
    for (const [renderKey, wanted] of this.#wanted) {
      if (!this.#isActive(wanted, now)) this.#wanted.delete(renderKey);
      else wanted.misses = wanted.misses.filter((missedAt) => now - missedAt < this.#demandWindowMs);
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
