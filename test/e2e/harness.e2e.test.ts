/**
 * The harness itself: what a client process gets (a private network namespace with only loopback, the
 * bridge on 127.0.0.1, a minimal environment, stdin, a process-group kill on timeout) and the client
 * cache. Plain shell commands stand in for the clients, so these run in about a second.
 */

import { createServer, type Server } from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureClient } from './helpers/install-clients.js';
import { installTimeoutMs } from './helpers/e2e-harness.js';
import { detectIsolation, openClientEndpoint, type ClientEndpoint } from './helpers/network-isolation.js';
import { createClientSandbox, runClient, type ClientSandbox } from './helpers/run-client.js';

describe('e2e harness', () => {
  let root: string;
  let server: Server;
  let endpoint: ClientEndpoint;
  let sandbox: ClientSandbox;
  const requests: string[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'cb-e2e-harness-'));
    const socketPath = join(root, 'bridge.sock');
    server = createServer((request, response) => {
      requests.push(`${request.method} ${request.url}`);
      response.end('pong from the unix socket');
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    endpoint = await openClientEndpoint(socketPath);
    sandbox = await createClientSandbox('harness');
  });

  afterAll(async () => {
    await endpoint.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await sandbox.remove();
    await rm(root, { recursive: true, force: true });
  });

  const bash = (script: string, options: { stdin?: string; timeoutMs?: number } = {}) =>
    runClient({
      binaryPath: '/bin/bash',
      args: ['-c', script],
      sandbox,
      endpoint,
      env: { E2E_MARK: 'set-by-the-harness' },
      timeoutMs: options.timeoutMs ?? 20_000,
      ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
    });

  it('reaches the bridge at the endpoint URL and nothing but loopback', async () => {
    const port = new URL(endpoint.baseUrl).port;
    const run = await bash(
      [
        'PATH=$PATH:/usr/sbin:/sbin ip -o link show | cut -d: -f2 | tr -d " " | paste -sd, -',
        `exec 3<>/dev/tcp/127.0.0.1/${port}`,
        'printf "GET /health HTTP/1.0\\r\\nHost: e2e\\r\\n\\r\\n" >&3',
        'cat <&3',
      ].join('\n'),
    );

    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain('pong from the unix socket');
    expect(requests).toContain('GET /health');
    const interfaces = run.stdout.split('\n')[0];
    if (detectIsolation() === 'netns') expect(interfaces).toBe('lo');
    else expect(endpoint.isolation).toBe('host');
  });

  it('gives the client a minimal environment, its own HOME and the project as cwd', async () => {
    const run = await bash('env | cut -d= -f1 | sort | paste -sd, -; echo "$HOME"; pwd');

    expect(run.exitCode).toBe(0);
    const [names, home, cwd] = run.stdout.trim().split('\n');
    // bash itself adds PWD, SHLVL and _.
    expect(names?.split(',')).toEqual(['E2E_MARK', 'HOME', 'PATH', 'PWD', 'SHLVL', 'TERM', '_']);
    expect(home).toBe(sandbox.home);
    expect(cwd).toBe(sandbox.project);
  });

  it('pipes the given stdin, and /dev/null otherwise', async () => {
    expect((await bash('cat', { stdin: 'prompt on stdin' })).stdout).toBe('prompt on stdin');
    expect((await bash('cat; echo "[eof]"')).stdout).toBe('[eof]\n');
  });

  it('kills the whole process group when the client outlives its timeout', async () => {
    const pidFile = join(sandbox.root, 'background.pid');
    const run = await bash(`sleep 30 & echo $! > ${pidFile}; sleep 30`, { timeoutMs: 1_000 });

    expect(run.timedOut).toBe(true);
    expect(run.durationMs).toBeLessThan(10_000);
    const pid = Number(await readFile(pidFile, 'utf8'));
    // Gone, or a zombie waiting for a PID 1 that does not reap (as in some containers): not running.
    const state = await readFile(`/proc/${pid}/status`, 'utf8').then(
      (status) => /^State:\s+(\S)/m.exec(status)?.[1],
      () => 'gone',
    );
    expect(['gone', 'Z', 'X']).toContain(state);
  });

  it(
    'installs a pinned client once and returns the cached install afterwards, also to concurrent callers',
    async () => {
      const [first, second] = await Promise.all([ensureClient('codex'), ensureClient('codex')]);
      const started = Date.now();
      const third = await ensureClient('codex');

      expect(second.binaryPath).toBe(first.binaryPath);
      expect(third.binaryPath).toBe(first.binaryPath);
      expect(first.binaryPath).toContain(join('test', '.cache', 'clients', 'codex-0.171.0'));
      expect(Date.now() - started).toBeLessThan(1_000);
      const stamp = JSON.parse(await readFile(join(first.prefix, '.e2e-installed.json'), 'utf8')) as unknown;
      expect(stamp).toEqual({ version: '0.171.0' });
    },
    installTimeoutMs,
  );
});
