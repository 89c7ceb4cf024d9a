/**
 * The wire tier's bridge: the whole bridge (HTTP server, engine, workspaces, the REAL `@cursor/sdk`) in
 * this process, against the project's fake Cursor backend on 127.0.0.1. The SDK reads `CURSOR_BACKEND_URL`
 * once at import, so each test file (its own process under vitest) has ONE fake backend, started before
 * anything loads the SDK and reconfigured per test.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createBridge, type Bridge, type CreateBridgeOptions } from '../../src/bridge/create-bridge.js';
import { resolveConfig } from '../../src/config/load-config.js';
import {
  fakePrice,
  firstOfEachRun,
  startFakeCursorBackend,
  type FakeAuthMode,
  type FakeBilling,
  type FakeCursorBackend,
} from '../fakes/cursor-backend/fake-cursor-backend.js';
import type { FakeRunRequest, Scenario } from '../fakes/cursor-backend/run-context.js';

export type WireBridge = {
  url: string;
  backend: FakeCursorBackend;
  bridge: Bridge;
  home: string;
  workspacesDir: string;
  /** The bridge's log lines (pino JSON). */
  logs: string[];
  /** The run requests this bridge caused, the SDK's re-sends of a run included. */
  runRequests(): readonly FakeRunRequest[];
  /**
   * The runs this bridge started: the first request of each `runId`. How many requests a run took is the
   * SDK's business (a starved machine can make it re-send one); how many runs the bridge started is not.
   */
  runs(): readonly FakeRunRequest[];
  close(): Promise<void>;
};

export type WireBridgeOptions = {
  scenario?: Scenario;
  auth?: FakeAuthMode;
  /** The CURSOR_API_KEY the bridge sees; `null` for none. Default `crsr_test`. */
  apiKey?: string | null;
  /** Raw config.json content; `cursorWarmWorkspaces` is 2 unless it says otherwise. */
  config?: Record<string, unknown>;
  /** How the fake bills the turns (default: {@link fakePrice}, at once). */
  billing?: FakeBilling;
  /** Cursor upstream tuning (e.g. a wider `batchQuietMs`). */
  cursor?: CreateBridgeOptions['cursor'];
};

let shared: Promise<FakeCursorBackend> | undefined;

const sharedBackend = (): Promise<FakeCursorBackend> =>
  (shared ??= startFakeCursorBackend({}).then((backend) => {
    process.env['CURSOR_BACKEND_URL'] = backend.url;
    return backend;
  }));

/** Close the file's fake backend (call in `afterAll`). */
export const closeWireBackend = async (): Promise<void> => {
  const backend = await shared;
  shared = undefined;
  await backend?.close();
};

export const startWireBridge = async (options: WireBridgeOptions = {}): Promise<WireBridge> => {
  const home = await mkdtemp(join(tmpdir(), 'cursor-bridge-wire-'));
  const backend = await sharedBackend();
  backend.setScenario(options.scenario ?? ((run) => void run.text('ok')));
  backend.setAuth(options.auth ?? 'ok');
  backend.setBilling(options.billing ?? { price: fakePrice });
  const firstRunRequest = backend.runRequests.length;
  process.env['HOME'] = home;
  const apiKey = options.apiKey === undefined ? 'crsr_test' : options.apiKey;
  const env: Record<string, string | undefined> = {
    HOME: home,
    ...(apiKey === null ? {} : { CURSOR_API_KEY: apiKey }),
  };
  // A small warm pool unless the test sizes it: the default (32) would warm 32 executors after each
  // bridge's first conversation, CPU the tests of other files need; two still exercise the warm path.
  const raw = { cursorWarmWorkspaces: 2, ...options.config };
  const config = resolveConfig(raw, { path: join(home, 'config.json'), env, homedir: home });
  const logs: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) });
  const bridge = await createBridge({
    config,
    env,
    homedir: home,
    logger,
    ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
  });
  await new Promise<void>((resolve) => bridge.server.listen(0, '127.0.0.1', resolve));
  const { port } = bridge.server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    backend,
    bridge,
    home,
    workspacesDir: config.workspacesDir,
    logs,
    runRequests: () => backend.runRequests.slice(firstRunRequest),
    runs: () => firstOfEachRun(backend.runRequests.slice(firstRunRequest)),
    close: async () => {
      await bridge.close();
      await rm(home, { recursive: true, force: true });
    },
  };
};

/** Claude Code's Bash tool as an Anthropic Messages request declares it (the wire tests' host tool). */
export const anthropicBashTool = {
  name: 'Bash',
  description: 'Run a shell command on the host',
  input_schema: {
    type: 'object' as const,
    properties: { command: { type: 'string' } },
    required: ['command'],
  },
};
