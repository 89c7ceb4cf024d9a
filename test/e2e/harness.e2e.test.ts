/**
 * The harness itself: what a client process gets (a private network namespace with only loopback, the
 * bridge on 127.0.0.1, a minimal environment, stdin, a process-group kill on timeout) and the client
 * cache. Plain shell commands stand in for the clients, so these run in about a second.
 */

import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateWithSafetyNet } from '../helpers/gate.js';
import { ensureClient } from '../helpers/e2e/install-clients.js';
import { installTimeoutMs } from '../helpers/e2e/e2e-harness.js';
import {
  detectIsolation,
  openClientEndpoint,
  type ClientEndpoint,
} from '../helpers/e2e/network-isolation.js';
import { startRecordingProxy } from '../helpers/e2e/recording-proxy.js';
import { createClientSandbox, runClient, type ClientSandbox } from '../helpers/e2e/run-client.js';

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
    // Without the group kill the run would last as long as these sleeps, past the test's own timeout.
    const run = await bash(`sleep 3600 & echo $! > ${pidFile}; sleep 3600`, { timeoutMs: 1_000 });

    expect(run.timedOut).toBe(true);
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
      const stampPath = join(first.prefix, '.e2e-installed.json');
      const installedAt = (await stat(stampPath)).mtimeMs;
      const third = await ensureClient('codex');

      expect(second.binaryPath).toBe(first.binaryPath);
      expect(third.binaryPath).toBe(first.binaryPath);
      expect(first.binaryPath).toContain(join('test', '.cache', 'clients', 'codex-0.171.0'));
      const stamp = JSON.parse(await readFile(stampPath, 'utf8')) as unknown;
      expect(stamp).toEqual({ version: '0.171.0' });
      // The third call installed nothing: the install's stamp is the one the first call found or wrote.
      expect((await stat(stampPath)).mtimeMs).toBe(installedAt);
    },
    installTimeoutMs,
  );
});

describe('recording proxy (unix socket → the bridge port)', () => {
  const sse = (lines: string[]): string => `${lines.join('\n')}\n\n`;

  it('streams each SSE chunk through as it comes, and records the body, frames and keepalives', async () => {
    const root = await mkdtemp(join(tmpdir(), 'cb-e2e-proxy-'));
    const received: string[] = [];
    const firstFramesSeen = createGateWithSafetyNet(60_000);
    const target = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        received.push(body);
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write(sse(['event: message_start', 'data: {"type":"message_start"}']));
        response.write(sse(['event: ping', 'data: {"type":"ping"}']) + ': keepalive\n\n');
        // The response ends only once the client has seen the first frames (or the safety net gives up).
        void firstFramesSeen.opened.then(() =>
          response.end(sse(['event: message_stop', 'data: {"type":"message_stop"}'])),
        );
      });
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    const proxy = await startRecordingProxy({
      socketPath: join(root, 'proxy.sock'),
      targetPort: (target.address() as AddressInfo).port,
    });
    try {
      const body = JSON.stringify({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
      const chunks: string[] = [];
      await new Promise<void>((resolve, reject) => {
        const request = httpRequest(
          {
            socketPath: join(root, 'proxy.sock'),
            method: 'POST',
            path: '/v1/messages?beta=true',
            headers: { 'content-type': 'application/json' },
          },
          (response) => {
            response.on('data', (chunk: Buffer) => {
              chunks.push(chunk.toString());
              if (chunks.join('').includes(': keepalive')) firstFramesSeen.open();
            });
            response.on('end', () => resolve());
          },
        );
        request.on('error', reject);
        request.end(body);
      });

      // The proxy passed the first frames through while the target still held the response open.
      expect(firstFramesSeen.bySafetyNet).toBe(false);
      expect(received).toEqual([body]);
      expect(chunks.at(-1)).toContain('message_stop');
      const [exchange] = proxy.exchanges;
      expect(exchange).toMatchObject({ method: 'POST', status: 200, protocol: 'anthropic', keepalives: 2 });
      expect(exchange?.parsed?.ok).toBe(true);
      expect(
        exchange?.frames.map((frame) => ('comment' in frame ? `:${frame.comment}` : frame.event)),
      ).toEqual(['message_start', 'ping', ':keepalive', 'message_stop']);
    } finally {
      firstFramesSeen.dispose();
      await proxy.close();
      await new Promise<void>((resolve) => target.close(() => resolve()));
      await rm(root, { recursive: true, force: true });
    }
  });

  it('aborts the forwarded request when the client hangs up, so the bridge sees the disconnect', async () => {
    const root = await mkdtemp(join(tmpdir(), 'cb-e2e-proxy-'));
    let bridgeSawClose: () => void = () => {};
    const closed = new Promise<void>((resolve) => (bridgeSawClose = resolve));
    const target = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(': open\n\n');
      response.on('close', () => bridgeSawClose());
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    const proxy = await startRecordingProxy({
      socketPath: join(root, 'proxy.sock'),
      targetPort: (target.address() as AddressInfo).port,
    });
    try {
      await new Promise<void>((resolve) => {
        const request = httpRequest(
          { socketPath: join(root, 'proxy.sock'), method: 'POST', path: '/v1/chat/completions' },
          (response) => response.once('data', () => request.destroy()),
        );
        request.on('error', () => {});
        request.on('close', () => resolve());
        request.end('{}');
      });
      await closed;
      expect(proxy.exchanges[0]?.error).toBe('the client hung up before the response ended');
    } finally {
      await proxy.close();
      await new Promise<void>((resolve) => target.close(() => resolve()));
      await rm(root, { recursive: true, force: true });
    }
  });
});
