/**
 * Watches the template directories (the only chokidar importer) and calls `onChange` — reload the
 * store, re-render live workspaces — once per burst of edits, debounced. Missing directories are watched
 * through their nearest existing ancestor, so creating the override directory later is noticed.
 *
 * Ordering: `onChange` never overlaps itself; edits that arrive while it runs schedule exactly one more
 * call. After `close()` starts, no further call begins.
 */

import { watch, type FSWatcher } from 'chokidar';
import { resolve, sep } from 'node:path';
import type { Logger } from 'pino';

export type TemplateWatcherOptions = {
  dirs: readonly string[];
  onChange: () => void | Promise<void>;
  logger: Logger;
  /** Quiet period after the last event before `onChange` runs. Default 100 ms. */
  debounceMs?: number;
  /** How the debounce waits: tests pass a fake one. Default an unref'd `setTimeout`. */
  timers?: DebounceTimers;
};

/** Arms and disarms the debounce: `clear` cancels a handle from `set` whose `run` has not run yet. */
export type DebounceTimers = {
  set: (run: () => void, delayMs: number) => unknown;
  clear: (handle: unknown) => void;
};

const realTimers: DebounceTimers = {
  set: (run, delayMs) => setTimeout(run, delayMs).unref(),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface TemplateWatcher {
  /** Stop watching; resolves after an in-flight `onChange` settles. Idempotent. */
  close(): Promise<void>;
}

/**
 * Whether a path matters to a watcher of `dirs`: one of them, inside one, or an ancestor leading to one.
 *
 * A missing directory is watched through its nearest existing ancestor, and chokidar then follows
 * everything below that ancestor: with the default layout that is `~/.claude-code-router`, whose
 * `cursor-sdk-workspaces/` changes on every new conversation, so without this filter every conversation
 * would cost watcher events and CPU that no template change caused. Everything else is ignored.
 */
export const templatePathFilter = (dirs: readonly string[]): ((path: string) => boolean) => {
  const absoluteDirs = dirs.map((dir) => resolve(dir));
  return (path) => {
    const absolute = resolve(path);
    const asAncestor = absolute.endsWith(sep) ? absolute : absolute + sep;
    return absoluteDirs.some(
      (dir) => absolute === dir || absolute.startsWith(dir + sep) || dir.startsWith(asAncestor),
    );
  };
};

/** Start watching; resolves once the initial scan is done (edits after that are reported). */
export const createTemplateWatcher = async (options: TemplateWatcherOptions): Promise<TemplateWatcher> => {
  const debounceMs = options.debounceMs ?? 100;
  const timers = options.timers ?? realTimers;
  let closed = false;
  let timer: unknown;
  let running: Promise<void> | undefined;
  let pending = false;

  const run = (): void => {
    timer = undefined;
    if (closed) return;
    if (running !== undefined) {
      pending = true;
      return;
    }
    running = (async () => {
      try {
        await options.onChange();
      } catch (error) {
        options.logger.warn({ err: error }, 'template reload failed');
      }
    })().finally(() => {
      running = undefined;
      if (pending && !closed) {
        pending = false;
        schedule();
      }
    });
  };
  const schedule = (): void => {
    if (closed) return;
    if (timer !== undefined) timers.clear(timer);
    timer = timers.set(run, debounceMs);
  };

  const dirs = options.dirs.map((dir) => resolve(dir));
  const relevant = templatePathFilter(dirs);
  const watcher: FSWatcher = watch(dirs, {
    ignoreInitial: true,
    persistent: false,
    ignored: (path) => !relevant(path),
  });
  watcher.on('all', schedule);
  watcher.on('error', (error) => options.logger.warn({ err: error }, 'template watcher error'));
  await new Promise<void>((resolve) => watcher.once('ready', resolve));

  return {
    close: async () => {
      if (closed) return;
      closed = true;
      try {
        if (timer !== undefined) timers.clear(timer);
        timer = undefined;
        await watcher.close();
      } finally {
        await running;
      }
    },
  };
};
