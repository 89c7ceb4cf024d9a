/**
 * Scratch workspaces: one directory per session, `<root>/<session key>/`, holding the files rendered for
 * the mode (AGENTS.md and deny-hooks in bridge mode; only the `.git` boundary in plan and agent modes).
 * Files are rewritten only when their rendered bytes change, so an identical turn does no writes. Removal — on dispose and by the hourly sweep — only ever deletes a real directory that is a
 * direct child of the root and whose name is a session key; symlinks are never followed and nothing
 * else (a `cursorCwd`, a stray file) is touched.
 *
 * A workspace can also be reserved ahead of its session ({@link WorkspaceManager.reserveWorkspace}): a
 * directory under its own fresh key, rendered for the facts a session is expected to report, which the
 * first `ensureWorkspace` of a session may adopt. The directory keeps its name; the session's removal
 * removes it. Reserved directories are live: the sweep never touches them. A session's workspace never
 * becomes a reservation again: it is removed when its session ends.
 *
 * Lifecycle: operations on one session key run one at a time, in call order. `close()` stops the
 * sweeper and waits for in-flight work; later calls to `ensureWorkspace` reject.
 */

import { lstat, mkdir, readdir, readFile, rename, rm, utimes, writeFile } from 'node:fs/promises';
import { createHash, hash, randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { isMissingFile } from '../../lib/read-file-if-present.js';
import type { Logger } from 'pino';
import { BridgeError, createTurnError } from '../turn/turn-error.js';
import type { HostFacts } from './host-facts.js';
import { renderWorkspaceFiles, type WorkspaceFile } from './render-workspace-files.js';
import { createSessionKey, isSessionKey } from './session-key.js';
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

/** What {@link WorkspaceManager.ensureSessionWorkspace} did. */
export type EnsuredWorkspace = {
  dir: string;
  /** Whether any file was (re)written — for an adopted reservation: its render was not the session's. */
  changed: boolean;
};

/** A reserved workspace: its key names the directory. */
export type ReservedWorkspace = { key: string; dir: string };

export type SweeperOptions = {
  /** Default 1 h. */
  intervalMs?: number;
  /** Default 24 h. */
  olderThanMs?: number;
};

type LiveWorkspace = {
  /** `<root>/<name>`; the name is the session key, or the reservation key it was adopted from. */
  dir: string;
  facts: HostFacts | undefined;
  /**
   * Digest of the content last written or verified, per relative path: an identical render skips all I/O.
   * A digest, not the content: every workspace's files name its own directory, so keeping the rendered
   * strings would hold a full copy of the files (the deny-hook most of it) per live and reserved workspace.
   */
  written: Map<string, string>;
  touchedAt: number;
};

/** What {@link LiveWorkspace.written} keeps of a file's content: a one-shot SHA-256, whatever its size. */
const contentDigest = (content: string): string => hash('sha256', content, 'base64');

export class WorkspaceManager {
  readonly root: string;
  readonly #templates: TemplateStore;
  readonly #logger: Logger;
  readonly #nodePath: string;
  readonly #platform: NodeJS.Platform;
  readonly #live = new Map<string, LiveWorkspace>();
  /** Reserved workspaces not adopted yet, by reservation key. */
  readonly #reserved = new Map<string, LiveWorkspace>();
  /** Directory names of live and reserved workspaces (what the sweep must not touch). */
  readonly #liveNames = new Set<string>();
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

  /** Sessions with a workspace (created or adopted, not removed): each holds an executor. */
  get liveCount(): number {
    return this.#live.size;
  }

  /** Whether the session has a workspace in this manager (created or adopted, and not removed). */
  isLive(sessionKey: string): boolean {
    return this.#live.has(sessionKey);
  }

  /**
   * A digest of the files `facts` render to, independent of the workspace directory: two workspaces
   * rendered for facts with the same render key hold the same rules and hooks (each naming its own
   * directory). Changes when the templates do.
   */
  renderKey(facts: HostFacts | undefined): string {
    const hash = createHash('sha256');
    for (const file of this.#render(facts, '\u0000workspace'))
      hash.update(file.path).update('\u0000').update(file.content).update('\u0000');
    return hash.digest('hex');
  }

  /**
   * Create a workspace under a fresh reservation key, rendered for `facts`, for a session to adopt
   * later (see {@link ensureWorkspace}). Remove it with {@link releaseReservation} when it is not.
   */
  async reserveWorkspace(facts: HostFacts | undefined): Promise<ReservedWorkspace> {
    if (this.#closed) throw new BridgeError(createTurnError('api', 'the workspace manager is closed'));
    const key = createSessionKey();
    return this.#serialize(key, async () => {
      const reserved: LiveWorkspace = {
        dir: this.workspaceDir(key),
        facts,
        written: new Map(),
        touchedAt: 0,
      };
      this.#reserved.set(key, reserved);
      this.#liveNames.add(key);
      try {
        await this.#materialize(reserved);
      } catch (error) {
        this.#reserved.delete(key);
        this.#liveNames.delete(key);
        await this.#removeChild(key).catch(() => false);
        throw error;
      }
      return { key, dir: reserved.dir };
    });
  }

  /** Remove a reservation no session adopted. Resolves `true` when its directory was removed. */
  releaseReservation(key: string): Promise<boolean> {
    if (!this.#reserved.has(key)) return Promise.resolve(false);
    return this.#serialize(key, async () => {
      if (!this.#reserved.delete(key)) return false;
      this.#liveNames.delete(key);
      return this.#removeChild(key);
    });
  }

  /**
   * Create the session's workspace if needed and render its files for `facts` (undefined: no
   * environment reported), writing only files whose bytes differ. Resolves to the directory.
   */
  async ensureWorkspace(sessionKey: string, facts: HostFacts | undefined): Promise<string> {
    return (await this.ensureSessionWorkspace(sessionKey, facts)).dir;
  }

  /**
   * {@link ensureWorkspace}, where a new session may adopt the reservation `adopt` (an unknown or
   * already taken key is ignored): its directory becomes the session's. Says whether files changed.
   */
  async ensureSessionWorkspace(
    sessionKey: string,
    facts: HostFacts | undefined,
    adopt?: string,
  ): Promise<EnsuredWorkspace> {
    if (!isSessionKey(sessionKey)) {
      return Promise.reject(
        new BridgeError(createTurnError('api', `invalid workspace session key "${sessionKey}"`)),
      );
    }
    if (this.#closed) {
      return Promise.reject(new BridgeError(createTurnError('api', 'the workspace manager is closed')));
    }
    if (adopt !== undefined && !this.#live.has(sessionKey)) {
      // Wait for the reservation's own work (its render) before taking it over.
      await this.#queues.get(adopt);
    }
    return this.#serialize(sessionKey, async () => {
      let live = this.#live.get(sessionKey);
      if (live === undefined) {
        const reserved = adopt === undefined ? undefined : this.#reserved.get(adopt);
        if (reserved !== undefined && adopt !== undefined) this.#reserved.delete(adopt);
        live = reserved ?? {
          dir: this.workspaceDir(sessionKey),
          facts,
          written: new Map(),
          touchedAt: 0,
        };
        this.#live.set(sessionKey, live);
        this.#liveNames.add(basename(live.dir));
      }
      live.facts = facts;
      const changed = await this.#materialize(live);
      return { dir: live.dir, changed };
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
      const live = this.#live.get(sessionKey);
      this.#live.delete(sessionKey);
      const name = live === undefined ? sessionKey : basename(live.dir);
      this.#liveNames.delete(name);
      return this.#removeChild(name);
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
      if (isMissingFile(error)) return [];
      throw error;
    }
    const removed: string[] = [];
    for (const name of names) {
      if (!isSessionKey(name) || this.#liveNames.has(name) || this.#queues.has(name)) continue;
      const gone = await this.#serialize(name, async () => {
        if (this.#liveNames.has(name)) return false;
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

  #render(facts: HostFacts | undefined, workspaceDir: string): WorkspaceFile[] {
    return renderWorkspaceFiles(this.#templates, facts, {
      workspaceDir,
      nodePath: this.#nodePath,
      platform: this.#platform,
    });
  }

  /** Resolves whether a file was written. */
  async #materialize(live: LiveWorkspace): Promise<boolean> {
    await mkdir(live.dir, { recursive: true });
    const stats = await lstat(live.dir);
    if (!stats.isDirectory()) {
      throw new BridgeError(createTurnError('api', `scratch workspace ${live.dir} is not a directory`));
    }
    let changed = false;
    for (const file of this.#render(live.facts, live.dir)) {
      if (await this.#writeIfChanged(live, file)) changed = true;
    }
    const now = Date.now();
    if (now - live.touchedAt >= touchIntervalMs) {
      const seconds = now / 1000;
      await utimes(live.dir, seconds, seconds);
      live.touchedAt = now;
    }
    return changed;
  }

  /** Resolves whether the file's bytes on disk changed. */
  async #writeIfChanged(live: LiveWorkspace, file: WorkspaceFile): Promise<boolean> {
    const digest = contentDigest(file.content);
    if (live.written.get(file.path) === digest) return false;
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
    live.written.set(file.path, digest);
    return existing !== file.content;
  }

  async #removeChild(name: string): Promise<boolean> {
    const path = join(this.root, name);
    let stats;
    try {
      stats = await lstat(path);
    } catch (error) {
      if (isMissingFile(error)) return false;
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
