/**
 * Claude Code Router 3.1.1 (from npm) in a private network namespace, with the project's fake Cursor
 * backend reachable inside it. CCR 3 binds fixed ports (gateway 3456, admin/UI 3458) and the plugin's
 * backend takes 3460, so each test file gets its own namespace and the files still run in parallel.
 *
 * - a holder process (`unshare -n` → `netns-relay.ts` → `sleep`) owns the namespace: `lo` up, and
 *   `127.0.0.1:<backend port>` inside relayed to a unix socket that leads to the fake backend on the
 *   host's loopback (so `CURSOR_BACKEND_URL` is the same string inside and out);
 * - every command of the test (`ccr start`, `cursor-bridge ccr install`, Claude Code, `ccr stop`, admin RPC
 *   calls) runs in that namespace through `nsenter -t <holder pid> -n`;
 * - teardown stops, by PID, every process whose network namespace is the holder's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readlink, readdir, realpath, rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeCursorBackend, type FakeCursorBackend } from '../../fakes/cursor-backend/index.js';
import { ensureBuilt } from '../ensure-built.js';
import { repoRoot } from '../repo-root.js';
import { ensureCcr3, pinnedNodeBin, type InstalledCcr3 } from './install-ccr3.js';
import type { ClientEndpoint } from './network-isolation.js';
import { headAndTail } from './serve-bridge.js';
import { isProcessAlive } from '../../../lib/is-process-alive.js';
import { sleep } from '../../../lib/sleep.js';

export type CommandOutcome = { exitCode: number | null; stdout: string; stderr: string; timedOut: boolean };

export type Ccr3Host = {
  ccr: InstalledCcr3;
  backend: FakeCursorBackend;
  root: string;
  /** CCR's HOME: `~/.claude-code-router` is CCR 3's directory. */
  home: string;
  /** The environment CCR and `cursor-bridge` commands run with. */
  env: Record<string, string>;
  /** Runs `command` inside the namespace (never rejects for a failing command). */
  run(
    command: string,
    args: readonly string[],
    options?: { env?: Record<string, string>; timeoutMs?: number },
  ): Promise<CommandOutcome>;
  /** CCR's CLI (`dist/main/cli.js`), for a command that needs its own environment. */
  ccrCli: string;
  /** `ccr <args>` with CCR's environment. */
  ccrCommand(args: readonly string[]): Promise<CommandOutcome>;
  /** An admin RPC call made from inside the namespace: the `value` of `{ ok: true, value }`. */
  rpc(method: string, args?: unknown[]): Promise<unknown>;
  /** The command line of the RPC script (for a Bash command Claude Code runs). */
  rpcCommand(method: string, args?: unknown[]): string;
  /** For `runClient`: `http://127.0.0.1:3456` is CCR's gateway, reached inside the namespace. */
  endpoint: ClientEndpoint;
  describe(): string;
  close(): Promise<void>;
};

const relayScript = fileURLToPath(new URL('./netns-relay.ts', import.meta.url));
const unshare = ['/usr/bin/unshare', '/bin/unshare'].find((path) => existsSync(path));
const nsenter = ['/usr/bin/nsenter', '/bin/nsenter'].find((path) => existsSync(path));
const ip = ['/usr/sbin/ip', '/sbin/ip', '/usr/bin/ip', '/bin/ip'].find((path) => existsSync(path));

/** Reads `HOME/.claude-code-router/service.json` and makes one admin call; prints the value as JSON. */
const rpcScript = `
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
const [home, method, args = '[]'] = process.argv.slice(2);
const service = JSON.parse(readFileSync(join(home, '.claude-code-router', 'service.json'), 'utf8'));
const url = new URL(service.url);
const response = await fetch(new URL('/api/ccr/rpc', url.origin), {
  method: 'POST',
  headers: { 'content-type': 'application/json', 'x-ccr-web-auth': url.searchParams.get('ccr_web_token') },
  body: JSON.stringify({ method, args: JSON.parse(args) }),
});
const body = await response.json();
if (!body.ok) { process.stderr.write(method + ': ' + response.status + ' ' + JSON.stringify(body) + '\\n'); process.exit(1); }
process.stdout.write(JSON.stringify(body.value ?? null) + '\\n');
`;

const collect = (child: ChildProcess, timeoutMs: number): Promise<CommandOutcome> =>
  new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (exitCode) => {
      clearTimeout(timer);
      resolve({ exitCode, stdout, stderr, timedOut });
    });
  });

/** Pids of every process in the network namespace `nsLink` (`net:[…]`), the holder included. */
const processesInNamespace = async (nsLink: string): Promise<number[]> => {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const link = await readlink(`/proc/${entry}/ns/net`).catch(() => undefined);
    if (link === nsLink) pids.push(Number(entry));
  }
  return pids;
};

export const startCcr3Host = async (): Promise<Ccr3Host> => {
  if (unshare === undefined || nsenter === undefined || ip === undefined || process.getuid?.() !== 0)
    throw new Error('e2e: CCR 3 runs in its own network namespace: needs root with unshare, nsenter and ip');
  const [ccr] = await Promise.all([ensureCcr3(), ensureBuilt()]);
  const root = await realpath(await mkdtemp(join(tmpdir(), 'cb-e2e-ccr3-')));
  const home = join(root, 'home');
  await mkdir(home, { recursive: true });
  const rpcPath = join(root, 'rpc.mjs');
  await writeFile(rpcPath, rpcScript);

  const backend = await startFakeCursorBackend();
  const backendPort = Number(new URL(backend.url).port);
  const backendSocket = join(root, 'backend.sock');
  const forwarder: Server = createServer((client) => {
    const upstream = connect(backendPort, '127.0.0.1');
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => forwarder.listen(backendSocket, resolve));

  const holder = spawn(
    unshare,
    [
      '-n',
      '--',
      process.execPath,
      relayScript,
      ip,
      backendSocket,
      String(backendPort),
      '--',
      '/bin/sh',
      '-c',
      'echo ready; exec sleep 86400',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let holderOutput = '';
  holder.stderr?.on('data', (chunk: Buffer) => (holderOutput += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    holder.stdout?.on('data', (chunk: Buffer) => {
      holderOutput += chunk.toString();
      if (holderOutput.includes('ready')) resolve();
    });
    holder.on('exit', (code) =>
      reject(new Error(`e2e: namespace holder exited (${String(code)}): ${holderOutput}`)),
    );
  });
  const holderPid = holder.pid ?? -1;
  const nsLink = await readlink(`/proc/${holderPid}/ns/net`);

  const env: Record<string, string> = {
    PATH: `${pinnedNodeBin}:/usr/local/bin:/usr/bin:/bin`,
    HOME: home,
    CURSOR_API_KEY: 'crsr_test',
    CURSOR_BACKEND_URL: backend.url,
  };
  const log: string[] = [];
  const run: Ccr3Host['run'] = async (command, args, options = {}) => {
    const child = spawn(nsenter, ['-t', String(holderPid), '-n', '--', command, ...args], {
      cwd: root,
      env: options.env ?? env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const outcome = await collect(child, options.timeoutMs ?? 120_000);
    log.push(
      `--- ${[command, ...args].join(' ')} → exit ${String(outcome.exitCode)}${outcome.timedOut ? ' (timed out)' : ''}\nstdout:\n${headAndTail(outcome.stdout, 4_000)}\nstderr:\n${headAndTail(outcome.stderr, 4_000)}`,
    );
    return outcome;
  };
  const rpcArgs = (method: string, args: unknown[] = []) => [rpcPath, home, method, JSON.stringify(args)];
  const rpc: Ccr3Host['rpc'] = async (method, args = []) => {
    const outcome = await run(process.execPath, rpcArgs(method, args), { timeoutMs: 60_000 });
    if (outcome.exitCode !== 0) throw new Error(`e2e: CCR rpc ${method} failed: ${outcome.stderr}`);
    return JSON.parse(outcome.stdout) as unknown;
  };

  const close = async (): Promise<void> => {
    try {
      for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
        const pids = await processesInNamespace(nsLink);
        for (const pid of pids) {
          try {
            process.kill(pid, signal);
          } catch {
            // gone already
          }
        }
        for (let waited = 0; waited < 5_000 && pids.some(isProcessAlive); waited += 100) await sleep(100);
      }
      await new Promise<void>((resolve) => forwarder.close(() => resolve()));
      await backend.close();
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  };

  return {
    ccr,
    backend,
    root,
    home,
    env,
    run,
    ccrCli: ccr.cli,
    ccrCommand: (args) => run(process.execPath, [ccr.cli, ...args]),
    rpc,
    rpcCommand: (method, args) =>
      rpcArgs(method, args)
        .map((part) => `'${part}'`)
        .join(' ')
        .replace(/^/, `${process.execPath} `),
    endpoint: {
      isolation: 'netns',
      baseUrl: 'http://127.0.0.1:3456',
      wrap: (command, args) => ({
        command: nsenter,
        args: ['-t', String(holderPid), '-n', '--', command, ...args],
      }),
      close: async () => {},
    },
    describe: () =>
      [
        `===== CCR ${ccr.version} in netns of pid ${holderPid} (HOME ${home}) =====`,
        ...log,
        `--- plugin log ---\n${headAndTail(pluginLogSync(home), 20_000)}`,
      ].join('\n'),
    close,
  };
};

const pluginLogSync = (home: string): string => {
  try {
    return readFileSync(pluginLogPath(home), 'utf8');
  } catch {
    return '(none)';
  }
};

/** Where CCR 3 puts the plugin's data directory, and the plugin its log. */
export const pluginLogPath = (home: string): string =>
  join(home, '.claude-code-router', 'app-data', 'plugins', 'cursor-bridge', 'cursor-bridge.log');

/** `node bin/cursor-bridge.js` of this checkout. */
export const cursorBridgeBin = join(repoRoot, 'bin', 'cursor-bridge.js');
