/**
 * `cursor-bridge serve` as the benches that compare bridges start it: the config file they share, the
 * `CURSOR_BRIDGE_*` settings passed through from the bench's environment, a process per side (this
 * checkout's CLI or another built checkout's, with its own HOME), and stopping processes by PID.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { serveArgs, waitForServePort } from '../../test/helpers/serve-command-line.js';

/** Writes the benches' config file: the `composer-2` route on the `cursor` provider, logging at `warn`. */
export const writeBenchConfig = (path: string): Promise<void> =>
  writeFile(
    path,
    JSON.stringify({
      LOG_LEVEL: 'warn',
      Providers: [{ name: 'cursor', models: ['composer-2'] }],
      Router: { default: 'cursor,composer-2' },
    }),
  );

/**
 * The bridge's own settings from the bench's environment, to pass to every side
 * (`CURSOR_BRIDGE_MAX_SESSIONS=16 npm run bench …`).
 */
export const bridgeSettingsFromEnv = (): Record<string, string> =>
  Object.fromEntries(
    Object.entries(process.env).flatMap(([name, value]) =>
      name.startsWith('CURSOR_BRIDGE_') && value !== undefined ? [[name, value]] : [],
    ),
  );

export type BenchServeOptions = {
  configPath: string;
  /** The process's HOME (its scratch workspaces live under it); created when missing. */
  home: string;
  cwd: string;
  /** The whole environment but HOME (no variable of the bench's own leaks in). */
  env: Record<string, string>;
  /** Flags for node itself, before the CLI. */
  nodeArgs?: readonly string[];
  /** A built checkout whose `bin/cursor-bridge.js` runs instead of this checkout's. */
  checkout?: string;
};

/** A started `serve`: accepting requests on `port` once this resolves. */
export type BenchServe = {
  child: ChildProcess;
  port: number;
  /** ms from the spawn until its listening line. */
  readyMs: number;
  /** The last 8 kB it wrote on stderr (read all along, so a full pipe never blocks it). */
  stderrTail: () => string;
};

const stderrKept = 8_192;

/**
 * Spawns `serve` on 127.0.0.1 and an ephemeral port and resolves once it listens. When it exits first or
 * never listens, rejects with what it printed (and stops it by PID if it is still running).
 */
export const startBenchServe = async (options: BenchServeOptions): Promise<BenchServe> => {
  await mkdir(options.home, { recursive: true });
  const args = serveArgs(options.configPath, options.nodeArgs);
  if (options.checkout !== undefined) {
    args[args.findIndex((arg) => arg.endsWith(join('bin', 'cursor-bridge.js')))] = join(
      options.checkout,
      'bin',
      'cursor-bridge.js',
    );
  }
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: options.cwd,
    env: { ...options.env, HOME: options.home },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let tail = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-stderrKept);
  });
  try {
    const port = await waitForServePort(child);
    return { child, port, readyMs: performance.now() - spawnedAt, stderrTail: () => tail };
  } catch (error) {
    await stopProcesses([child]);
    throw error;
  }
};

/** SIGTERM to each (by PID), resolved when all have exited. */
export const stopProcesses = async (children: readonly ChildProcess[]): Promise<void> => {
  const running = children.filter((child) => child.exitCode === null && child.signalCode === null);
  const exited = running.map((child) => new Promise((resolve) => child.once('exit', resolve)));
  for (const child of running) child.kill('SIGTERM');
  await Promise.all(exited);
};
