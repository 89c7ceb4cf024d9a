/**
 * The real HAProxy (Debian package `haproxy`, 2.6) running the project's own `deploy/haproxy/haproxy.cfg`
 * on loopback, its addresses given through the environment exactly as in production. Installed from
 * Debian when missing (`apt-get update`, `apt-get install -y haproxy`, serialised by a lock so parallel
 * test files do not race for dpkg); when that is impossible the caller's test fails with the reason.
 * HAProxy runs in the foreground (`-db`) and is stopped by its PID.
 */

import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findFreePort } from '../free-port.js';
import { repoRoot } from '../repo-root.js';
import { errorMessage } from '../../../lib/error-message.js';
import { sleep } from '../../../lib/sleep.js';

const execFileAsync = promisify(execFile);

/** The file under test. */
export const haproxyConfigPath = join(repoRoot, 'deploy', 'haproxy', 'haproxy.cfg');

const installTimeoutMs = 5 * 60_000;
/** A safety net for HAProxy to see its servers in a state, not a speed claim. */
const startTimeoutMs = 60_000;

let installed: Promise<string> | undefined;

/**
 * The path of the `haproxy` binary, installing the Debian package first when it is not on PATH. Rejects
 * with a plain explanation when it is missing and cannot be installed (no root, no apt, no mirror).
 */
export const ensureHaproxy = (): Promise<string> =>
  (installed ??= (async () => {
    const script =
      'command -v haproxy >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy; } >&2; command -v haproxy';
    try {
      const { stdout } = await execFileAsync(
        'flock',
        ['/tmp/cursor-bridge-haproxy-install.lock', 'sh', '-c', script],
        { timeout: installTimeoutMs },
      );
      const path = stdout.trim();
      if (path === '') throw new Error('haproxy is still not on PATH after apt-get install');
      return path;
    } catch (error) {
      const detail = errorMessage(error);
      throw new Error(
        `HAProxy is not installed and could not be installed from Debian (apt-get install -y haproxy, as root): ${detail}. ` +
          'This test needs the real haproxy; install it and run again.',
        { cause: error },
      );
    }
  })());

/** A server's state as HAProxy's stats report it: `UP`, `DOWN`, `NOLB`, `MAINT`, `UP 1/2`, … */
export type ServerStates = Record<string, string>;

export type HaproxyLb = {
  /** The port of `CURSOR_BRIDGE_LB_BIND` (127.0.0.1). */
  port: number;
  pid: number;
  /** State of each `server` line of the `bridges` backend (`bridge1` …), from `/stats;csv`. */
  serverStates(): Promise<ServerStates>;
  /** Polls {@link serverStates} until `accept` holds; rejects after `timeoutMs` with the last states. */
  waitForStates(accept: (states: ServerStates) => boolean, timeoutMs?: number): Promise<ServerStates>;
  output(): string;
  close(): Promise<void>;
};

/** Attempts at starting HAProxy when another process took one of its ports first. */
const bindAttempts = 3;

/**
 * Start HAProxy with `deploy/haproxy/haproxy.cfg` in front of the bridges on `backendPorts` (127.0.0.1). Its
 * two ports are found free and released before HAProxy binds them, so another process may take one in
 * between: HAProxy then exits saying it cannot bind, and it is started again on other ports.
 */
export const startHaproxy = async (backendPorts: readonly number[], attempt = 1): Promise<HaproxyLb> => {
  const binary = await ensureHaproxy();
  const [port, statsPort] = [await findFreePort(), await findFreePort()];
  const env: Record<string, string> = {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    CURSOR_BRIDGE_LB_BIND: `127.0.0.1:${port}`,
    CURSOR_BRIDGE_LB_STATS_BIND: `127.0.0.1:${statsPort}`,
  };
  for (const [index, backendPort] of backendPorts.entries())
    env[`CURSOR_BRIDGE_BACKEND_${index + 1}`] = `127.0.0.1:${backendPort}`;
  let output = '';
  const child = spawn(binary, ['-db', '-f', haproxyConfigPath], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const serverStates = async (): Promise<ServerStates> => {
    const response = await fetch(`http://127.0.0.1:${statsPort}/stats;csv`);
    const [header = '', ...rows] = (await response.text()).trim().split('\n');
    const columns = header.replace(/^# /, '').split(',');
    const name = columns.indexOf('svname');
    const proxy = columns.indexOf('pxname');
    const status = columns.indexOf('status');
    const states: ServerStates = {};
    for (const row of rows) {
      const cells = row.split(',');
      const server = cells[name] ?? '';
      if (cells[proxy] === 'bridges' && server !== 'BACKEND') states[server] = cells[status] ?? '';
    }
    return states;
  };

  const waitForStates = async (
    accept: (states: ServerStates) => boolean,
    timeoutMs = startTimeoutMs,
  ): Promise<ServerStates> => {
    const deadline = Date.now() + timeoutMs;
    let last: ServerStates | string;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`haproxy exited (${child.exitCode}):\n${output}`);
      try {
        const states = await serverStates();
        if (accept(states)) return states;
        last = states;
      } catch (error) {
        last = errorMessage(error);
      }
      if (Date.now() > deadline)
        throw new Error(`haproxy: servers not in the expected state: ${JSON.stringify(last)}\n${output}`);
      await sleep(100);
    }
  };

  const close = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
    process.kill(child.pid, 'SIGTERM');
    const timer = setTimeout(() => {
      if (child.exitCode === null && child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
    }, 5_000);
    await exited;
    clearTimeout(timer);
  };

  try {
    const expected = backendPorts.length;
    await waitForStates(
      (states) => Object.values(states).filter((state) => state === 'UP').length === expected,
    );
  } catch (error) {
    await close();
    if (attempt < bindAttempts && /cannot bind socket/i.test(output)) {
      return startHaproxy(backendPorts, attempt + 1);
    }
    throw error;
  }
  return { port, pid: child.pid ?? -1, serverStates, waitForStates, output: () => output, close };
};
