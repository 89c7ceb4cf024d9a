/**
 * Spawning the real `cursor-bridge` entry point (`node bin/cursor-bridge.js …`) or `npm start`, with a
 * clean environment (no inherited CURSOR_* / config variables), output capture, and cleanup by PID.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { delimiter, join } from 'node:path';

import { repoRoot } from '../repo-root.js';

export const binPath = join(repoRoot, 'bin', 'cursor-bridge.js');

/** Node >= package.json `engines.node` runs the CLI; vitest started through npm / node_modules/.bin runs on the pinned Node 22. */
export const nodeBinary = process.execPath;

/** A minimal child environment: Node 22 first on PATH, the given HOME, npm kept offline and quiet. */
export const createChildEnv = (home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  PATH: [join(repoRoot, 'node_modules', '.bin'), process.env['PATH'] ?? ''].join(delimiter),
  HOME: home,
  TMPDIR: process.env['TMPDIR'] ?? '/tmp',
  LANG: 'C.UTF-8',
  npm_config_update_notifier: 'false',
  npm_config_fund: 'false',
  npm_config_audit: 'false',
  npm_config_offline: 'true',
  ...extra,
});

export type CliExit = { code: number | null; signal: NodeJS.Signals | null };

export type CliChild = {
  child: ChildProcess;
  pid: number;
  /** Leads its own process group (signals go to the whole group). */
  group: boolean;
  /** True once the child has exited (it is then never signalled: its PID may be reused). */
  hasExited: () => boolean;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<CliExit>;
  /** Resolves with the first match of `pattern` in the stream; rejects on exit or timeout. */
  waitFor: (stream: 'stdout' | 'stderr', pattern: RegExp, timeoutMs?: number) => Promise<RegExpMatchArray>;
};

const started = new Set<CliChild>();

export type StartOptions = {
  env: NodeJS.ProcessEnv;
  cwd?: string;
  /** The executable (default: Node 22) and arguments before `args` (default: the bin script). */
  command?: string;
  prefix?: readonly string[];
  /** Own process group, so `stopChild` reaches grandchildren (npm → sh → node). */
  group?: boolean;
};

/** Spawn `node bin/cursor-bridge.js ...args` (or `command ...prefix ...args`). */
export const startCli = (args: readonly string[], options: StartOptions): CliChild => {
  const command = options.command ?? nodeBinary;
  const prefix = options.prefix ?? [binPath];
  const child = spawn(command, [...prefix, ...args], {
    cwd: options.cwd ?? repoRoot,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.group === true,
  });
  if (child.pid === undefined) throw new Error(`could not spawn ${command}`);
  const output = { stdout: '', stderr: '' };
  const listeners = new Set<() => void>();
  const notify = (): void => {
    for (const listener of listeners) listener();
  };
  child.stdout?.on('data', (chunk: Buffer) => {
    output.stdout += chunk.toString();
    notify();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output.stderr += chunk.toString();
    notify();
  });
  const exited = new Promise<CliExit>((resolve) => {
    child.on('close', (code, signal) => {
      resolve({ code, signal });
      notify();
    });
  });
  let done = false;
  void exited.then(() => (done = true));
  const handle: CliChild = {
    child,
    pid: child.pid,
    group: options.group === true,
    hasExited: () => done,
    stdout: () => output.stdout,
    stderr: () => output.stderr,
    exited,
    waitFor: (stream, pattern, timeoutMs = 20_000) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const match = output[stream].match(pattern);
          if (match !== null) finish(() => resolve(match));
          else if (done)
            finish(() => reject(new Error(`exited before ${stream} matched ${pattern}:\n${describe()}`)));
        };
        const timer = setTimeout(
          () =>
            finish(() => reject(new Error(`timed out waiting for ${pattern} on ${stream}:\n${describe()}`))),
          timeoutMs,
        );
        const finish = (settle: () => void): void => {
          clearTimeout(timer);
          listeners.delete(check);
          settle();
        };
        listeners.add(check);
        check();
      }),
  };
  const describe = (): string => `--- stdout\n${output.stdout}\n--- stderr\n${output.stderr}`;
  started.add(handle);
  return handle;
};

const signalChild = (handle: CliChild, signal: NodeJS.Signals): void => {
  // A group outlives its leader only while a member lives, and Linux never hands out a live group's id
  // as a new PID, so a group may still be signalled after the leader exited; a lone child may not.
  if (!handle.group && handle.hasExited()) return;
  try {
    // A negative PID signals the process group the child leads (its own PID), never anything by name.
    process.kill(handle.group ? -handle.pid : handle.pid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
};

/** Send `signal` (to the group for `group` children) and wait; SIGKILL after `timeoutMs`. */
export const stopChild = async (
  handle: CliChild,
  signal: NodeJS.Signals = 'SIGTERM',
  timeoutMs = 10_000,
): Promise<CliExit> => {
  signalChild(handle, signal);
  const timer = setTimeout(() => signalChild(handle, 'SIGKILL'), timeoutMs);
  try {
    return await handle.exited;
  } finally {
    clearTimeout(timer);
  }
};

/** SIGKILL whatever a test left running, process groups included (afterEach). */
export const killLeftoverChildren = async (): Promise<void> => {
  const handles = [...started];
  started.clear();
  await Promise.all(handles.map((handle) => stopChild(handle, 'SIGKILL')));
};

/** Run the CLI to completion (SIGKILL after `timeoutMs`). */
export const runCli = async (
  args: readonly string[],
  options: StartOptions & { timeoutMs?: number },
): Promise<{ code: number | null; stdout: string; stderr: string }> => {
  const handle = startCli(args, options);
  const timer = setTimeout(() => void stopChild(handle, 'SIGKILL'), options.timeoutMs ?? 30_000);
  const { code } = await handle.exited;
  clearTimeout(timer);
  return { code, stdout: handle.stdout(), stderr: handle.stderr() };
};

export { findFreePort } from '../free-port.js';
