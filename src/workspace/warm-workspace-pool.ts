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
 * Sizing follows demand: a new conversation that found an entry asks for its replacement, one that found
 * none for two entries of its key, up to `size` entries in all — so one client opening conversations one
 * after another keeps about two ready, and a burst of N new conversations leaves up to 2N (at most
 * `size`) for the next burst. When full, an entry of the least recently wanted other key makes
 * room; an entry unused for `idleTtlMs` is released. Warming runs one entry at a time and only once no
 * new conversation has started for `quietMs`, so it never competes with a burst it is refilling for.
 * A failed warm-up is logged and backs the pool off (`failureBackoffMs`): warming is an optimisation,
 * a conversation without an entry starts cold exactly as before.
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
};

/** Distinct keys whose demand is remembered (one per host environment; oldest forgotten first). */
const maxWantedKeys = 256;

type Entry = WarmWorkspace & { renderKey: string; readyAt: number };

type Wanted = { facts: HostFacts | undefined; pending: number; lastWantedAt: number };

export class WarmWorkspacePool {
  readonly #options: WarmWorkspacePoolOptions;
  readonly #idleTtlMs: number;
  readonly #quietMs: number;
  readonly #failureBackoffMs: number;
  /** Ready entries, oldest first. */
  #entries: Entry[] = [];
  readonly #wanted = new Map<string, Wanted>();
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
   * pool; the caller owns its reservation and release), or undefined. Either way one entry of the key is
   * wanted again, warmed once the pool is quiet.
   */
  claim(renderKey: string, facts: HostFacts | undefined): WarmWorkspace | undefined {
    if (this.#closed || this.#options.size <= 0) return undefined;
    const now = Date.now();
    this.#expire(now);
    const index = this.#entries.findIndex((entry) => entry.renderKey === renderKey);
    const entry = index < 0 ? undefined : this.#entries.splice(index, 1)[0];
    this.#options.onClaim?.(entry !== undefined);
    this.#lastDemandAt = now;
    const wanted = this.#wanted.get(renderKey) ?? { facts, pending: 0, lastWantedAt: now };
    wanted.facts = facts;
    wanted.lastWantedAt = now;
    // A hit asks for its replacement; a miss for one entry more, so a client that opens conversations
    // back to back (Claude Code's subagents, a retry) finds one ready while the other is being built.
    wanted.pending = Math.min(this.#options.size, wanted.pending + (entry === undefined ? 2 : 1));
    this.#wanted.delete(renderKey);
    this.#wanted.set(renderKey, wanted); // most recently wanted last
    if (this.#wanted.size > maxWantedKeys) this.#wanted.delete(this.#wanted.keys().next().value as string);
    this.#schedule(this.#quietMs);
    return entry === undefined ? undefined : { key: entry.key, dir: entry.dir, release: entry.release };
  }

  /** Release a claimed entry that could not be used (its lease, and its reservation if not adopted). */
  async discard(warm: WarmWorkspace): Promise<void> {
    await this.#discard(warm);
  }

  /** Release every entry (templates changed: their files are no longer what a session would render). */
  invalidate(): Promise<void> {
    const entries = this.#entries;
    this.#entries = [];
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
    const next = this.#nextWanted();
    if (next === undefined) {
      if (this.#entries.length > 0) this.#schedule(this.#idleTtlMs);
      return;
    }
    this.#warming = this.#warmOne(next.renderKey, next.wanted).finally(() => {
      this.#warming = undefined;
      this.#schedule(0);
    });
  }

  /** The most recently wanted key with pending demand, once there is room for it (making room if needed). */
  #nextWanted(): { renderKey: string; wanted: Wanted } | undefined {
    const keys = [...this.#wanted.keys()].reverse();
    for (const renderKey of keys) {
      const wanted = this.#wanted.get(renderKey);
      if (wanted === undefined || wanted.pending <= 0) continue;
      if (this.#entries.length < this.#options.size) return { renderKey, wanted };
      // Full: an entry of the least recently wanted other key makes room.
      const victim = this.#leastWantedEntryOtherThan(renderKey);
      if (victim === undefined) {
        wanted.pending = 0;
        continue;
      }
      this.#entries = this.#entries.filter((entry) => entry !== victim);
      void this.#discard(victim);
      return { renderKey, wanted };
    }
    return undefined;
  }

  #leastWantedEntryOtherThan(renderKey: string): Entry | undefined {
    for (const key of this.#wanted.keys()) {
      if (key === renderKey) continue;
      const entry = this.#entries.find((candidate) => candidate.renderKey === key);
      if (entry !== undefined) return entry;
    }
    return this.#entries.find((entry) => entry.renderKey !== renderKey && !this.#wanted.has(entry.renderKey));
  }

  async #warmOne(renderKey: string, wanted: Wanted): Promise<void> {
    wanted.pending -= 1;
    const { manager, logger } = this.#options;
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
      if (this.#closed) {
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
    for (const wanted of this.#wanted.values()) wanted.pending = 0;
    this.#options.logger.warn({ err: error, retryInMs: this.#failureBackoffMs }, message);
  }

  #expire(now: number): void {
    const expired = this.#entries.filter((entry) => now - entry.readyAt >= this.#idleTtlMs);
    if (expired.length === 0) return;
    this.#entries = this.#entries.filter((entry) => now - entry.readyAt < this.#idleTtlMs);
    void this.#discardAll(expired);
    for (const [key, wanted] of this.#wanted) {
      if (wanted.pending <= 0 && now - wanted.lastWantedAt >= this.#idleTtlMs) this.#wanted.delete(key);
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
