import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Result } from '../../lib/result.js';
import { findPackageRoot } from './package-info.js';

/**
 * The environment variable that tells `serve` to stop (as on SIGTERM: drain, then exit) when its stdin
 * ends. A session's serve gets it with a pipe from the command that started it, so it stops with that
 * process even when that process is killed outright and cannot stop it by PID.
 */
export const stopOnStdinEndEnv = 'CURSOR_BRIDGE_STOP_ON_STDIN_END';

/** A `cursor-bridge serve` started for one client session. */
export type SessionServe = {
  pid: number;
  /** The port it listens on, on 127.0.0.1. */
  port: number;
  /** Its stdout (the JSON log) and stderr. */
  logPath: string;
  /** Settles when the process exits. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /**
   * SIGTERM by PID (its drain is bounded by `--drain-timeout`), SIGKILL if it is still running after the
   * grace; resolves once it exited. Idempotent. Removes the log when the process exited 0 and `keepLog` is
   * false; returns whether the log was kept.
   */
  stop(keepLog: boolean): Promise<{ logKept: boolean; code: number | null }>;
};

/** Seconds the session's serve drains live turns when it is stopped (the client has exited by then). */
const drainSeconds = 5;
/** After the drain, how long a stopped serve gets before SIGKILL. */
const killGraceMs = (drainSeconds + 10) * 1_000;

const listeningLine = /cursor-bridge listening on http:\/\/127\.0\.0\.1:(\d+)/;

/**
 * Starts `cursor-bridge serve --host 127.0.0.1 --port <port>` (0: any free port) on this Node, in a process
 * group of its own (a Ctrl-C in the client's terminal is the client's, not the bridge's), with its output in
 * a fresh log file. Resolves once it listens, or with what it printed when it exited first.
 */
export const startSessionServe = async (options: {
  port: number;
  configPath?: string;
  env: Readonly<Record<string, string | undefined>>;
}): Promise<Result<SessionServe, string>> => {
  const bin = join(await findPackageRoot(), 'bin', 'cursor-bridge.js');
  const logDir = await mkdtemp(join(tmpdir(), 'cursor-bridge-session-'));
  const logPath = join(logDir, 'serve.log');
  const log = createWriteStream(logPath, { mode: 0o600 });
  await new Promise<void>((resolve, reject) => log.once('open', () => resolve()).once('error', reject));
  const args = [
    bin,
    'serve',
    '--host',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--drain-timeout',
    String(drainSeconds),
    ...(options.configPath === undefined ? [] : ['--config', options.configPath]),
  ];
  const child = spawn(process.execPath, args, {
    env: { ...options.env, [stopOnStdinEndEnv]: '1' },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  // The child's stdin stays open (and unwritten) for as long as this process lives.
  child.stdin.on('error', () => {});
  child.stdout.pipe(log, { end: false });
  let stderr = '';
  const port = await new Promise<number | undefined>((resolve) => {
    const onData = (chunk: Buffer): void => {
      log.write(chunk);
      if (stderr.length < 64_000) stderr += chunk.toString();
      const match = listeningLine.exec(stderr);
      if (match?.[1] !== undefined) resolve(Number(match[1]));
    };
    child.stderr.on('data', onData);
    child.once('error', (error) => {
      stderr += `${error.message}\n`;
      resolve(undefined);
    });
    void exited.then(() => resolve(undefined));
  });
  let stopping: Promise<{ logKept: boolean; code: number | null }> | undefined;
  const stop = (keepLog: boolean): Promise<{ logKept: boolean; code: number | null }> =>
    (stopping ??= (async () => {
      let timer: NodeJS.Timeout | undefined;
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
        child.kill('SIGTERM');
        timer = setTimeout(() => child.kill('SIGKILL'), killGraceMs);
      }
      const { code } = await exited;
      clearTimeout(timer);
      child.stdin.destroy();
      await new Promise<void>((resolve) => log.end(() => resolve()));
      const logKept = keepLog || code !== 0;
      if (!logKept) await rm(logDir, { recursive: true, force: true });
      return { logKept, code };
    })());
  if (port === undefined || child.pid === undefined) {
    await stop(true);
    return { ok: false, error: stderr.trim() === '' ? `serve did not start; see ${logPath}` : stderr.trim() };
  }
  return { ok: true, value: { pid: child.pid, port, logPath, exited, stop } };
};
