/**
 * Runs a real client binary the way a user would, but hermetically: a minimal `env -i`-style
 * environment (PATH, a fresh HOME, TERM=dumb, plus the client's offline settings), cwd = a fresh project
 * directory, stdin `/dev/null` or a given prompt, inside a private network namespace (see
 * `network-isolation.ts`), and killed as a process group when it outlives its timeout.
 */

import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClientEndpoint } from './network-isolation.js';

/** A fresh HOME and project directory; reuse it for a second turn of the same conversation. */
export type ClientSandbox = {
  root: string;
  home: string;
  /** The client's working directory: the "user's project". */
  project: string;
  remove(): Promise<void>;
};

export const createClientSandbox = async (label: string): Promise<ClientSandbox> => {
  // realpath: clients report their cwd resolved, and the assertions compare paths.
  const root = await realpath(await mkdtemp(join(tmpdir(), `cb-e2e-${label}-`)));
  const home = join(root, 'home');
  const project = join(root, 'project');
  await mkdir(home, { recursive: true });
  await mkdir(project, { recursive: true });
  // Retried (Node's own back-off on ENOTEMPTY/EBUSY): when the test removes the sandbox, a killed client's
  // processes (still exiting, or outside the group that was killed) may still be writing into its HOME.
  const remove = (): Promise<void> =>
    rm(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  return { root, home, project, remove };
};

/** The PATH every client gets: system directories only (no node_modules/.bin, no Node 22). */
export const clientPath = '/usr/local/bin:/usr/bin:/bin';

export type RunClientOptions = {
  binaryPath: string;
  args: readonly string[];
  sandbox: ClientSandbox;
  endpoint: ClientEndpoint;
  /** Added to PATH, HOME and TERM. */
  env?: Readonly<Record<string, string>>;
  /** Piped to the client's stdin; `/dev/null` when absent. */
  stdin?: string;
  timeoutMs: number;
};

export type ClientRun = {
  command: string[];
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  durationMs: number;
};

/** Run the client to completion (or its timeout). Never rejects for a failing client; check `exitCode`. */
export const runClient = (options: RunClientOptions): Promise<ClientRun> => {
  const env: Record<string, string> = {
    PATH: clientPath,
    HOME: options.sandbox.home,
    TERM: 'dumb',
    ...options.env,
  };
  const wrapped = options.endpoint.wrap(options.binaryPath, options.args);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(wrapped.command, wrapped.args, {
      cwd: options.sandbox.project,
      env,
      stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      // Its own process group, so a timeout kills the client and everything it started.
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    if (options.stdin !== undefined) {
      child.stdin?.on('error', () => {});
      child.stdin?.end(options.stdin);
    }
    const killGroup = (): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, options.timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (exitCode, signal) => {
      clearTimeout(timer);
      // Helpers the client left behind (a shell it spawned) must not outlive the test.
      killGroup();
      resolve({
        command: [wrapped.command, ...wrapped.args],
        exitCode,
        signal,
        stdout,
        stderr,
        timedOut,
        durationMs: Date.now() - started,
      });
    });
  });
};
