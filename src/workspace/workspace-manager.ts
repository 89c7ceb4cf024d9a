/**
 * Scratch workspaces: one directory per session, `<root>/<session key>/`, holding the rendered AGENTS.md
 * and deny-hooks. Files are rewritten only when their rendered bytes change, so an identical turn does
 * no writes. Removal — on dispose and by the hourly sweep — only ever deletes a real directory that is a
 * direct child of the root and whose name is a session key; symlinks are never followed and nothing
 * else (a `cursorCwd`, a stray file) is touched.
 *
 * Lifecycle: operations on one session key run one at a time, in call order. `close()` stops the
 * sweeper and waits for in-flight work; later calls to `ensureWorkspace` reject.
 */

import { randomBytes } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, rename, rm, utimes, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { BridgeError, createTurnError } from '../turn/turn-error.js';
import type { HostFacts } from './host-facts.js';
import { renderWorkspaceFiles, type WorkspaceFile } from './render-workspace-files.js';
import { isSessionKey } from './session-key.js';
import type { TemplateStore } from './template-store.js';

const hourMs = 60 * 60 * 1000;
/** A live workspace's directory mtime is refreshed at most this often, so other processes' sweeps skip it. */
const touchIntervalMs = 10 * 60 * 1000;

export type WorkspaceManagerOptions = {
  /** The workspace root (see `defaultWorkspaceRoot`); created on first use. */
  root: string;
  templates: TemplateStore;
  logger: Logger;
  /** The Node binary the deny-hook runs with. Default: this process's `process.execPath`. */
  nodePath?: string;
  /** Default: `process.platform`. */
  platform?: NodeJS.Platform;
};

export type SweepOptions = {
  /** Remove leftovers whose directory mtime is at least this old. Default 24 h. */
  olderThanMs?: number;
  /** The current time (ms since the epoch). Default `Date.now()`. */
  now?: number;
};

export type SweeperOptions = {
  /** Default 1 h. */
  intervalMs?: number;
  /** Default 24 h. */
  olderThanMs?: number;
};

type LiveWorkspace = {
  dir: string;
  facts: HostFacts | undefined;
  /** Content last written or verified, per relative path: an identical render skips all I/O. */
  written: Map<string, string>;
  touchedAt: number;
};

const isMissing = (error: unknown): boolean =>
  typeof error === 'object' && error !== null && 'code' in error && error.code === 'ENOENT';

export class WorkspaceManager {
  readonly root: string;
  readonly #templates: TemplateStore;
  readonly #logger: Logger;
  readonly #nodePath: string;
  readonly #platform: NodeJS.Platform;
  readonly #live = new Map<string, LiveWorkspace>();
  readonly #queues = new Map<string, Promise<unknown>>();
  #sweepTimer: NodeJS.Timeout | undefined;
  #sweeping: Promise<unknown> | undefined;
  #closed = false;

  constructor(options: WorkspaceManagerOptions) {
    this.root = options.root;
    this.#templates = options.templates;
    this.#logger = options.logger;
    this.#nodePath = options.nodePath ?? process.execPath;
    this.#platform = options.platform ?? process.platform;
  }

  /** The directory of a session's workspace (whether or not it exists). */
  workspaceDir(sessionKey: string): string {
    return join(this.root, sessionKey);
  }

  /** Session keys with a workspace created or re-rendered by this manager and not removed since. */
  liveSessionKeys(): string[] {
    return [...this.#live.keys()];
  }

  /**
   * Create the session's workspace if needed and render its files for `facts` (undefined: no
   * environment reported), writing only files whose bytes differ. Resolves to the directory.
   */
  ensureWorkspace(sessionKey: string, facts: HostFacts | undefined): Promise<string> {
    if (!isSessionKey(sessionKey)) {
      return Promise.reject(
        new BridgeError(createTurnError('api', `invalid workspace session key "${sessionKey}"`)),
      );
    }
    if (this.#closed) {
      return Promise.reject(new BridgeError(createTurnError('api', 'the workspace manager is closed')));
    }
    return this.#serialize(sessionKey, async () => {
      let live = this.#live.get(sessionKey);
      if (live === undefined) {
        live = { dir: this.workspaceDir(sessionKey), facts, written: new Map(), touchedAt: 0 };
        this.#live.set(sessionKey, live);
      }
      live.facts = facts;
      await this.#materialize(live);
      return live.dir;
    });
  }

  /** Re-render every live workspace with its latest facts (after a template change). Never rejects. */
  async rerenderAll(): Promise<void> {
    await Promise.all(
      [...this.#live.keys()].map((sessionKey) =>
        this.#serialize(sessionKey, async () => {
          const live = this.#live.get(sessionKey);
          if (live !== undefined) await this.#materialize(live);
        }).catch((error: unknown) => {
          this.#logger.warn({ err: error, session: sessionKey }, 'could not re-render scratch workspace');
        }),
      ),
    );
  }

  /**
   * Remove a session's workspace. Resolves `true` when a directory was removed; `false` when there was
   * none, or the key or the entry is not something this manager may delete (which is logged).
   */
  removeWorkspace(sessionKey: string): Promise<boolean> {
    if (!isSessionKey(sessionKey)) {
      this.#logger.warn({ session: sessionKey }, 'not removing workspace: not a session key');
      return Promise.resolve(false);
    }
    return this.#serialize(sessionKey, async () => {
      this.#live.delete(sessionKey);
      return this.#removeChild(sessionKey);
    });
  }

  /**
   * Remove leftover workspaces (from a crash or kill): direct children of the root named like a session
   * key, real directories (lstat), not live in this manager, and not modified for `olderThanMs`.
   * Resolves to the removed names.
   */
  async sweep(options: SweepOptions = {}): Promise<string[]> {
    const olderThanMs = options.olderThanMs ?? 24 * hourMs;
    const now = options.now ?? Date.now();
    let names: string[];
    try {
      names = await readdir(this.root);
    } catch (error) {
      if (isMissing(error)) return [];
      throw error;
    }
    const removed: string[] = [];
    for (const name of names) {
      if (!isSessionKey(name) || this.#live.has(name) || this.#queues.has(name)) continue;
      const gone = await this.#serialize(name, async () => {
        if (this.#live.has(name)) return false;
        const stats = await lstat(join(this.root, name)).catch(() => undefined);
        if (stats === undefined || !stats.isDirectory() || now - stats.mtimeMs < olderThanMs) return false;
        return this.#removeChild(name);
      });
      if (gone) removed.push(name);
    }
    if (removed.length > 0) this.#logger.info({ removed }, 'swept stale scratch workspaces');
    return removed;
  }

  /** Sweep now and then every `intervalMs` on an unref'd timer, until `close()`. Idempotent. */
  startSweeping(options: SweeperOptions = {}): void {
    if (this.#closed || this.#sweepTimer !== undefined) return;
    const olderThanMs = options.olderThanMs ?? 24 * hourMs;
    const tick = (): void => {
      if (this.#closed || this.#sweeping !== undefined) return;
      this.#sweeping = this.sweep({ olderThanMs })
        .catch((error: unknown) => this.#logger.warn({ err: error }, 'scratch workspace sweep failed'))
        .finally(() => {
          this.#sweeping = undefined;
        });
    };
    this.#sweepTimer = setInterval(tick, options.intervalMs ?? hourMs);
    this.#sweepTimer.unref();
    tick();
  }

  /** Stop the sweeper and wait for in-flight work. Live workspaces stay on disk (the engine disposes them). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      if (this.#sweepTimer !== undefined) clearInterval(this.#sweepTimer);
      this.#sweepTimer = undefined;
    } finally {
      await Promise.allSettled([this.#sweeping, ...this.#queues.values()]);
    }
  }

  #serialize<T>(sessionKey: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(sessionKey) ?? Promise.resolve();
    const run = previous.then(task);
    const tail = run.catch(() => undefined);
    this.#queues.set(sessionKey, tail);
    void tail.then(() => {
      if (this.#queues.get(sessionKey) === tail) this.#queues.delete(sessionKey);
    });
    return run;
  }

  async #materialize(live: LiveWorkspace): Promise<void> {
    await mkdir(live.dir, { recursive: true });
    const stats = await lstat(live.dir);
    if (!stats.isDirectory()) {
      throw new BridgeError(createTurnError('api', `scratch workspace ${live.dir} is not a directory`));
    }
    const files = renderWorkspaceFiles(this.#templates, live.facts, {
      workspaceDir: live.dir,
      nodePath: this.#nodePath,
      platform: this.#platform,
    });
    for (const file of files) await this.#writeIfChanged(live, file);
    const now = Date.now();
    if (now - live.touchedAt >= touchIntervalMs) {
      const seconds = now / 1000;
      await utimes(live.dir, seconds, seconds);
      live.touchedAt = now;
    }
  }

  async #writeIfChanged(live: LiveWorkspace, file: WorkspaceFile): Promise<void> {
    if (live.written.get(file.path) === file.content) return;
    const target = join(live.dir, ...file.path.split('/'));
    const existing = await readFile(target, 'utf8').catch(() => undefined);
    if (existing !== file.content) {
      await mkdir(dirname(target), { recursive: true });
      const temporary = `${target}.${randomBytes(6).toString('hex')}.tmp`;
      try {
        await writeFile(temporary, file.content);
        await rename(temporary, target);
      } catch (error) {
        await rm(temporary, { force: true });
        throw error;
      }
    }
    live.written.set(file.path, file.content);
  }

  async #removeChild(name: string): Promise<boolean> {
    const path = join(this.root, name);
    let stats;
    try {
      stats = await lstat(path);
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
    if (!stats.isDirectory()) {
      this.#logger.warn({ path }, 'not removing workspace entry: not a real directory');
      return false;
    }
    await rm(path, { recursive: true, force: true });
    return true;
  }
}
