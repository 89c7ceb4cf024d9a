/**
 * The CCR 3 plugin's engine across gateway reloads. CCR stops every plugin and re-imports its entry on each
 * gateway (re)start — a config save included — so the entry file holds no state; this module does (CCR's
 * fresh `import()` of the entry does not re-evaluate the modules it imports). A parked tool call lives in
 * the engine, so a reload with unchanged settings must hand the same engine to the next `setup`.
 *
 * - `acquire(key)`: the current engine when its key is equal, else a new one is built while the old one drains
 *   in the background (its backend is already closed: waiting for it would only keep CCR from routing);
 * - `release('reload')`: kept for the next `acquire`, closed if none claims it within the grace period;
 * - `release(anything else)` (`"disabled"`, `"stop"`): drained (bounded) and closed, and any earlier engine
 *   still draining is waited for.
 * Calls are serialised, so a `setup` racing a `stop` sees a consistent registry.
 */
import type { DrainResult } from '../../bridge/create-bridge.js';

/** What the registry holds: anything with the bridge's graceful stop. */
export type DrainableEngine = { drain(timeoutMs: number): Promise<DrainResult> };

export type EngineRegistryOptions = {
  /** The bound on a drain (CCR's `ccr stop` waits only 10 s for all plugins to stop). */
  drainTimeoutMs: number;
  /** How long a released-for-reload engine waits for the next `acquire` before it is closed. */
  unclaimedGraceMs: number;
  /** Told after each close (for the plugin's log). */
  onClosed?: (why: string, result: DrainResult) => void;
};

/** Default bounds: a drain well inside CCR's 10 s stop budget; a generous wait for a reload's re-import. */
export const defaultEngineRegistryOptions: EngineRegistryOptions = {
  drainTimeoutMs: 5_000,
  unclaimedGraceMs: 60_000,
};

type Entry<T> = { key: string; engine: T; unclaimed?: NodeJS.Timeout | undefined };

export class EngineRegistry<T extends DrainableEngine> {
  readonly #options: EngineRegistryOptions;
  #current: Entry<T> | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  /** Replaced engines still draining. */
  readonly #draining = new Set<Promise<void>>();

  constructor(options: Partial<EngineRegistryOptions> = {}) {
    this.#options = { ...defaultEngineRegistryOptions, ...options };
  }

  /** The engine held now, if any (tests, diagnostics). */
  get current(): T | undefined {
    return this.#current?.engine;
  }

  /** The engine for `key`: the held one if its key is equal, else a new one from `create`. */
  acquire(key: string, create: () => Promise<T>): Promise<{ engine: T; reused: boolean }> {
    return this.#serial(async () => {
      const held = this.#current;
      if (held !== undefined && held.key === key) {
        clearTimeout(held.unclaimed);
        held.unclaimed = undefined;
        return { engine: held.engine, reused: true };
      }
      if (held !== undefined) {
        const closing = this.#close(held, 'settings changed').catch(() => undefined);
        this.#draining.add(closing);
        void closing.finally(() => this.#draining.delete(closing));
      }
      const engine = await create();
      this.#current = { key, engine };
      return { engine, reused: false };
    });
  }

  /** The plugin stopped for `reason` (CCR's `stop({ reason })`). */
  release(reason: string | undefined): Promise<void> {
    return this.#serial(async () => {
      const held = this.#current;
      if (held === undefined) {
        if (reason !== 'reload') await Promise.all(this.#draining);
        return;
      }
      if (reason === 'reload') {
        clearTimeout(held.unclaimed);
        held.unclaimed = setTimeout(() => {
          void this.#serial(async () => {
            if (this.#current === held && held.unclaimed !== undefined)
              await this.#close(held, 'not claimed after a reload');
          });
        }, this.#options.unclaimedGraceMs);
        held.unclaimed.unref();
        return;
      }
      await Promise.all([this.#close(held, reason ?? 'stop'), ...this.#draining]);
    });
  }

  async #close(entry: Entry<T>, why: string): Promise<void> {
    clearTimeout(entry.unclaimed);
    entry.unclaimed = undefined;
    if (this.#current === entry) this.#current = undefined;
    const result = await entry.engine.drain(this.#options.drainTimeoutMs);
    this.#options.onClosed?.(why, result);
  }

  #serial<R>(step: () => Promise<R>): Promise<R> {
    const next = this.#queue.then(step);
    this.#queue = next.catch(() => undefined);
    return next;
  }
}
