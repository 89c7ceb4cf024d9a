/**
 * `cursor-bridge serve` as a child process — the real CLI from `dist/` on 127.0.0.1 and an ephemeral
 * port — for the tests and benches that need the bridge in a process of its own: the command line, and
 * the port read from its listening line. Callers spawn it (their environment and stdio differ) and stop
 * it by PID.
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
