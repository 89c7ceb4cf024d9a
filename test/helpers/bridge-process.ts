/**
 * The reliability tier's bridge: `cursor-bridge serve` in a child process (the real CLI and SDK) against
 * the project's fake Cursor backend in this process, whose scenario the test writes, so memory figures are
 * the bridge's alone: RSS is read from `/proc/<pid>/status`. Loopback only; the child is stopped by its
 * PID. (The e2e tier's `serve`, played for the real clients, is `e2e/serve-bridge.ts`.)
 */

import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  startFakeCursorBackend,
  type FakeCursorBackend,
  type Scenario,
} from '../fakes/cursor-backend/index.js';
import { ensureBuilt } from './ensure-built.js';
import { serveArgs, stopProcess, waitForServePort } from './serve-command-line.js';
import { sleep } from '../../lib/sleep.js';

export type BridgeProcess = {
  url: string;
  port: number;
  pid: number;
  backend: FakeCursorBackend;
  /** The child's resident set size in MB. */
  rssMb(): Promise<number>;
  /** The child's stdout (pino JSON lines) so far. */
  log(): string;
  close(): Promise<void>;
};

export const startBridgeProcess = async (options: {
  scenario: Scenario;
  env?: Record<string, string>;
  config?: Record<string, unknown>;
  /** Flags for node itself (e.g. `--heapsnapshot-signal=SIGUSR2` when looking for a leak). */
  nodeArgs?: string[];
}): Promise<BridgeProcess> => {
  await ensureBuilt();
  const root = await mkdtemp(join(tmpdir(), 'cb-reliability-'));
  const configPath = join(root, 'config.json');
  await writeFile(
    configPath,
    JSON.stringify({
      LOG_LEVEL: 'info',
      Providers: [{ name: 'cursor', models: ['composer-2'] }],
      ...options.config,
    }),
  );
  const backend = await startFakeCursorBackend({ scenario: options.scenario });
  const child = spawn(process.execPath, serveArgs(configPath, options.nodeArgs), {
    cwd: root,
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: root,
      CURSOR_API_KEY: 'crsr_test',
      CURSOR_BACKEND_URL: backend.url,
      CURSOR_BRIDGE_DRAIN_TIMEOUT: '1',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (stdout.length > 4_000_000) stdout = stdout.slice(-2_000_000);
  });
  const stop = async (): Promise<void> => {
    await stopProcess(child);
    await backend.close();
    await rm(root, { recursive: true, force: true });
  };
  // A bridge that never listens is stopped here: the caller gets no handle to stop it with.
  const port = await waitForServePort(child).catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  const pid = child.pid ?? 0;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    pid,
    backend,
    rssMb: async () => {
      const status = await readFile(`/proc/${pid}/status`, 'utf8');
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
      return Math.round(kb / 1024);
    },
    log: () => stdout,
    close: stop,
  };
};

/**
 * Samples `bridge`'s RSS every 100 ms until stopped; `stop()` resolves with the peak (at least `floor`, and
 * at least the RSS when stopped). Sampling ends on its own once the process is gone.
 */
export const sampleRssPeak = (bridge: BridgeProcess, floor = 0): { stop(): Promise<number> } => {
  let peak = floor;
  let sampling = true;
  const done = (async () => {
    while (sampling) {
      const rss = await bridge.rssMb().catch(() => undefined);
      if (rss === undefined) return;
      peak = Math.max(peak, rss);
      await sleep(100);
    }
  })();
  return {
    stop: async () => {
      sampling = false;
      await done;
      return Math.max(peak, await bridge.rssMb());
    },
  };
};
