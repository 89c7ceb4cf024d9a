/**
 * `cursor-bridge mcp-host` for an e2e scenario: the real CLI (`node bin/cursor-bridge.js mcp-host`) on an
 * ephemeral loopback port with a token, and a recording proxy on a unix socket in front of it, which the
 * client's network namespace reaches at the same port number (so the Host header passes mcp-host's
 * DNS-rebinding check). Tool hosts in the test process attach to the real port directly. Stopped by PID.
 */

import { spawn } from 'node:child_process';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBuilt } from '../ensure-built.js';
import { repoRoot } from '../repo-root.js';
import type { RecordedExchange } from './e2e-bridge.js';
import type { ExtraForward } from './network-isolation.js';
import { startRecordingProxy } from './recording-proxy.js';

export type McpHostProcess = {
  /** `http://127.0.0.1:<port>`: the same inside the client's namespace and on the host. */
  url: string;
  port: number;
  token: string;
  /** For `startE2e({ forwards })`. */
  forward: ExtraForward;
  /** The agent's HTTP exchanges with `/mcp`. */
  exchanges: readonly RecordedExchange[];
  describe(): string;
  close(): Promise<void>;
};

const listeningLine = /mcp-host listening on http:\/\/127\.0\.0\.1:(\d+) /;

export const startMcpHostProcess = async (): Promise<McpHostProcess> => {
  await ensureBuilt();
  const root = await realpath(await mkdtemp(join(tmpdir(), 'cb-e2e-mcp-host-')));
  const token = 'e2e-mcp-host-token';
  const output = { stdout: '', stderr: '' };
  const child = spawn(
    process.execPath,
    [
      join(repoRoot, 'bin', 'cursor-bridge.js'),
      'mcp-host',
      '--port',
      '0',
      '--config',
      join(root, 'none.json'),
    ],
    {
      cwd: root,
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        HOME: root,
        CURSOR_BRIDGE_MCP_TOKEN: token,
        LOG_LEVEL: 'debug',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
    process.kill(child.pid, 'SIGTERM');
    const timer = setTimeout(() => child.pid !== undefined && process.kill(child.pid, 'SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  let port: number;
  try {
    port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error('e2e: mcp-host printed no listening line in 30 s')),
        30_000,
      );
      const check = (): void => {
        const match = listeningLine.exec(output.stderr);
        if (match?.[1] === undefined) return;
        clearTimeout(timer);
        resolve(Number(match[1]));
      };
      child.stderr.on('data', check);
      child.once('exit', (code) =>
        reject(new Error(`e2e: mcp-host exited (${String(code)}): ${output.stderr}`)),
      );
    });
  } catch (error) {
    await stop();
    await rm(root, { recursive: true, force: true });
    throw error;
  }
  const socketPath = join(root, 'mcp-host.sock');
  const proxy = await startRecordingProxy({ socketPath, targetPort: port });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    token,
    forward: { socketPath, port },
    exchanges: proxy.exchanges,
    describe: () =>
      [
        `--- agent ↔ mcp-host exchanges (${proxy.exchanges.length}) ---`,
        ...proxy.exchanges.map(
          (exchange, index) =>
            `#${index + 1} ${exchange.method} ${exchange.url} -> ${String(exchange.status ?? 'open')}`,
        ),
        `--- cursor-bridge mcp-host (pid ${String(child.pid)}, port ${port}) ---`,
        `stderr:\n${output.stderr}`,
        `stdout (log):\n${output.stdout.slice(-20_000)}`,
      ].join('\n'),
    close: async () => {
      try {
        await proxy.close();
        await stop();
      } finally {
        await rm(root, { recursive: true, force: true });
      }
    },
  };
};
