/**
 * `cursor-bridge serve`'s command line — the real CLI from `dist/` on 127.0.0.1 and an ephemeral port —
 * and the port read from its listening line: the one place that knows them, for the starters that run
 * `serve` as a child process (`bridge-process.ts`, `e2e/serve-bridge.ts`) and the benches. Callers spawn
 * it (their environment and stdio differ); `stopProcess` stops it by PID.
 */

import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from './repo-root.js';

const listeningLine = /listening on http:\/\/127\.0\.0\.1:(\d+)/;

/**
 * The arguments for `process.execPath`: `nodeArgs` (flags for node itself), then `serve` with `configPath`,
 * on `port` (default 0: an ephemeral one; a restarted member of a cluster takes its old port again).
 */
export const serveArgs = (configPath: string, nodeArgs: readonly string[] = [], port = 0): string[] => [
  ...nodeArgs,
  join(repoRoot, 'bin', 'cursor-bridge.js'),
  'serve',
  '--host',
  '127.0.0.1',
  '--port',
  String(port),
  '--config',
  configPath,
];

/**
 * The port from `serve`'s listening line on the child's stderr (which must be piped). Rejects, with what
 * the child printed, when it exits first or prints no such line within `timeoutMs` (default 30 s: it
 * loads the SDK before it listens, ≈ 1 s idle).
 */
export const waitForServePort = (child: ChildProcess, timeoutMs = 30_000): Promise<number> =>
  new Promise((resolve, reject) => {
    let stderr = '';
    const cleanup = (): void => {
      clearTimeout(timer);
      child.stderr?.off('data', onData);
      child.off('exit', onExit);
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`cursor-bridge serve printed no listening line in ${timeoutMs} ms:\n${stderr}`));
    }, timeoutMs);
    const onData = (chunk: Buffer): void => {
      stderr += chunk.toString();
      const match = listeningLine.exec(stderr);
      if (match?.[1] === undefined) return;
      cleanup();
      resolve(Number(match[1]));
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      cleanup();
      reject(
        new Error(
          `cursor-bridge serve exited before listening (exit ${String(code)}, signal ${String(signal)}):\n${stderr}`,
        ),
      );
    };
    child.stderr?.on('data', onData);
    child.once('exit', onExit);
  });

/** How long a stopped process gets to exit after SIGTERM before it is killed. */
const stopGraceMs = 5_000;

/** SIGTERM the process, SIGKILL it after {@link stopGraceMs}; resolves once it exited. */
export const stopProcess = async (child: ChildProcess): Promise<void> => {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  process.kill(child.pid, 'SIGTERM');
  const timer = setTimeout(() => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      process.kill(child.pid, 'SIGKILL');
    }
  }, stopGraceMs);
  await exited;
  clearTimeout(timer);
};
