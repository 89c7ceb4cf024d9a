/**
 * Pre-warmed scratch workspaces, so that a new conversation's first turn finds its executor already built:
 * each entry is a reserved workspace (rendered by the {@link WorkspaceManager}) plus a lease on an executor
 * built for it (the SDK's public `prewarmLocalWorkspace`, through {@link WarmExecutor}). Which key gets how
 * many entries, when a warm-up may start and what is released are decided in `warm-pool-policy.ts`; this
 * class applies those decisions: it records each new conversation's claim, looks again on a timer, and
 * builds, hands over and releases entries.
 *
 * It warms one entry at a time, only for keys new conversations wanted: nothing before the first one. A
 * warm-up already running when a turn arrives is not interrupted (it is one SDK call), but no other starts
 * after it. A conversation that claims the key being warmed gets that entry when the warm-up ends (one
 * conversation per warm-up). A failed warm-up is logged and backs the pool off (`failureBackoffMs`): a
 * conversation without an entry starts cold. A session's removal releases its executor
 * ({@link WarmWorkspacePool.executorReleased}), which may make room under `executorLimit`.
 *
 * Every entry is a new reservation (a new directory under a new key) with an executor warmed for it:
 * nothing of a disposed session — its directory, its executor — ever comes back to the pool.
 */

import type { Logger } from 'pino';
import type { HostFacts } from './host-facts.js';
import {
  belowExecutorLimit,
  demandAfterClaim,
  forgetInactive,
  isEntryExpired,
  joinsWarmUp,
  nextChangeInMs,
  nextKeyToWarm,
  readyEntryIndex,
  rememberWanted,
  surplusEntries,
  targets,
  turnsHoldWarmUps,
  waitBeforeWarmUpMs,
  type KeyDemand,
  type WarmPoolLimits,
} from './warm-pool-policy.js';
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

/** `renderKey`: what it was warmed for. */
type Entry = WarmWorkspace & { renderKey: string; readyAt: number };

/** A wanted key's demand, and the host facts its entries are rendered with. */
type Wanted = KeyDemand & { facts: HostFacts | undefined };

export class WarmWorkspacePool {
  readonly #options: WarmWorkspacePoolOptions;
  readonly #limits: WarmPoolLimits;
  readonly #quietMs: number;
  readonly #failureBackoffMs: number;
  readonly #busyRecheckMs: number;
  /** Ready entries, oldest first. */
  #entries: Entry[] = [];
  /** Keys by when a new conversation last wanted them, least recently first. */
  #wanted = new Map<string, Wanted>();
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
    this.#limits = {
      size: options.size,
      idleTtlMs: options.idleTtlMs ?? 10 * 60_000,
      demandWindowMs: options.demandWindowMs ?? 5 * 60_000,
    };
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
    const index = readyEntryIndex(this.#entries, renderKey);
    const entry = index < 0 ? undefined : this.#entries.splice(index, 1)[0];
    const inFlight = this.#inFlight;
    const joined =
      entry === undefined &&
      inFlight !== undefined &&
      joinsWarmUp({ renderKey: inFlight.renderKey, claimed: inFlight.claimedBy !== undefined }, renderKey)
        ? new Promise<WarmWorkspace | undefined>((resolve) => (inFlight.claimedBy = resolve))
        : undefined;
    const hit = entry !== undefined || joined !== undefined;
    this.#options.onClaim?.(hit);
    this.#lastDemandAt = now;
    const previous = this.#wanted.get(renderKey); // active: `#expire` forgot the others
    const demand = demandAfterClaim(previous, hit, now, this.#options.size);
    this.#wanted = rememberWanted(this.#wanted, renderKey, { facts, ...demand });
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
    this.#wanted = new Map();
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
    const waitFor = waitBeforeWarmUpMs({
      now,
      lastDemandAt: this.#lastDemandAt,
      quietMs: this.#quietMs,
      backoffUntil: this.#backoffUntil,
    });
    if (waitFor > 0) return waitFor;
    // Decided only between warm-ups (one at a time), so no entry is in flight then.
    const keyTargets = targets(this.#wanted, now, this.#limits);
    this.#releaseSurplus(keyTargets);
    const renderKey = this.#belowExecutorLimit() ? nextKeyToWarm(this.#entries, keyTargets) : undefined;
    const wanted = renderKey === undefined ? undefined : this.#wanted.get(renderKey);
    if (renderKey === undefined || wanted === undefined) {
      // Nothing below its target (or the executor bound reached): a claim or a released executor
      // schedules its own tick; otherwise look again when a target may change on its own.
      this.#pending = false;
      return nextChangeInMs(this.#entries, this.#wanted.values(), now, this.#limits);
    }
    this.#warmingNow = true;
    try {
      await this.#warmOne(renderKey, wanted);
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
      return turnsHoldWarmUps(await read());
    } catch (error) {
      this.#failed(error, 'could not read the turns in flight; not pre-warming for now');
      return false;
    }
  }

  /** Release the oldest entries of every key holding more than its target (inactive keys: target 0). */
  #releaseSurplus(keyTargets: ReadonlyMap<string, number>): void {
    const surplus = surplusEntries(this.#entries, keyTargets);
    if (surplus.length === 0) return;
    this.#entries = this.#entries.filter((entry) => !surplus.includes(entry));
    this.#options.logger.debug(
      { workspaces: surplus.map((entry) => entry.key), ready: this.#entries.length },
      "released pre-warmed workspaces above their environment's demand",
    );
    void this.#discardAll(surplus);
  }

  /** Whether the pool's own warm-ups may add an executor (see `executorsInUse`). */
  #belowExecutorLimit(): boolean {
    const { executorLimit, executorsInUse } = this.#options;
    if (executorLimit === undefined) return true;
    return belowExecutorLimit(this.#entries.length, executorsInUse?.() ?? 0, executorLimit);
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
    const expired = this.#entries.filter((entry) => isEntryExpired(entry, now, this.#limits));
    if (expired.length > 0) {
      this.#entries = this.#entries.filter((entry) => !isEntryExpired(entry, now, this.#limits));
      void this.#discardAll(expired);
    }
    this.#wanted = forgetInactive(this.#wanted, now, this.#limits);
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
