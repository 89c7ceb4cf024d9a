/**
 * The product path through CCR: unmodified Claude Code Router (1.0.73 or 2.0.0, from npm) loading the
 * `cursor-sdk` transformer (`ccr/cursor-sdk.cjs` of this checkout, built `dist/`) from its config, running the
 * real `@cursor/sdk` in CCR's process against the project's fake Cursor backend.
 *
 * One CCR process per version and auth mode is shared by the scenarios ({@link startCcrHost}): its config has
 * two Cursor providers, one per reference style — `cursor` (`"use": ["cursor-sdk"]`, options from
 * `transformers[].options`) and `cursor-tuple` (`"use": [["cursor-sdk", {…}]]`) — and a scenario picks one
 * with the model it asks for. Each scenario gets a fresh model script on the shared backend and its own
 * recording proxy ({@link ccrBridgeStarter}). CCR runs `ccr start` in the foreground on the Node 22 that runs
 * the tests, with a fresh HOME, `LOG: false`, and is stopped by its PID.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { startFakeCursorBackend, type FakeCursorBackend } from '../../fakes/cursor-backend/index.js';
import { ensureBuilt } from '../ensure-built.js';
import { findFreePort, portIsTaken } from '../free-port.js';
import { repoRoot } from '../repo-root.js';
import type { E2eBridge } from './e2e-bridge.js';
import type { StartBridge } from './e2e-harness.js';
import { createFakeBackendModel } from './fake-backend-model.js';
import { ensureClient } from './install-clients.js';
import { countKeepalives, isMainExchange, startRecordingProxy } from './recording-proxy.js';
import {
  describeExchanges,
  describePlayed,
  describeRequests,
  headAndTail,
  toBackendRun,
} from './serve-bridge.js';
import { stopProcess } from '../serve-command-line.js';
import { errorMessage } from '../../../lib/error-message.js';
import { sleep } from '../../../lib/sleep.js';

export type CcrVersion = 'ccr-1' | 'ccr-2';

/** The provider of each reference style; a scenario selects it with `--model <provider>,composer-2`. */
export const ccrProviders = { name: 'cursor', tuple: 'cursor-tuple' } as const;
export type CcrReferenceStyle = keyof typeof ccrProviders;

/** The transformer file CCR loads: what `require.resolve('cursor-bridge/ccr')` names. */
export const transformerPath = join(repoRoot, 'ccr', 'cursor-sdk.cjs');

const startTimeoutMs = 30_000;
const workspaceDirName = /^[0-9a-f]{32}$/;

export type CcrHost = {
  version: CcrVersion;
  backend: FakeCursorBackend;
  home: string;
  port: number;
  pid: number;
  /** CCR's stdout and stderr so far. */
  output(): { stdout: string; stderr: string };
  describe(): string;
  close(): Promise<void>;
};

/** The CCR config: both reference styles, the key kept out of the file (`$CURSOR_API_KEY`). */
export const ccrConfig = (port: number, defaultStyle: CcrReferenceStyle): Record<string, unknown> => {
  const provider = (name: string, use: unknown[]) => ({
    name,
    api_base_url: 'https://cursor.invalid/v1/chat/completions',
    api_key: '$CURSOR_API_KEY',
    models: ['composer-2'],
    transformer: { use },
  });
  return {
    LOG: false,
    HOST: '127.0.0.1',
    PORT: port,
    transformers: [{ path: transformerPath, options: { cursorMode: 'bridge' } }],
    Providers: [
      provider(ccrProviders.name, ['cursor-sdk']),
      provider(ccrProviders.tuple, [['cursor-sdk', { cursorMode: 'bridge' }]]),
    ],
    Router: { default: `${ccrProviders[defaultStyle]},composer-2` },
  };
};

const waitForHealth = async (port: number, child: ChildProcess): Promise<void> => {
  const deadline = Date.now() + startTimeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`e2e: ccr start exited before listening (exit ${String(child.exitCode)})`);
    }
    try {
      const response = await fetch(`http://127.0.0.1:${port}/health`);
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`e2e: ccr start did not answer /health within ${startTimeoutMs} ms`);
};

/** Attempts at starting CCR when another process took its port first. */
const bindAttempts = 3;

/**
 * Start CCR `version` (`ccr start`, foreground) with the fake backend in `auth` mode. `node` runs CCR
 * (default: the Node 22 running the tests). Its port is found free and released before CCR binds it, so
 * another process may take it in between: CCR then exits with status 1 and no word of why (checked with 1.0.73
 * and 2.0.0), and it is started again on another port when that port is in use once it has exited.
 */
export const startCcrHost = async (
  version: CcrVersion,
  options: {
    auth?: 'ok' | 'reject';
    defaultStyle?: CcrReferenceStyle;
    node?: string;
    /** Edit the config before CCR starts (e.g. add v2's `fallback`). */
    editConfig?: (config: Record<string, unknown>) => Record<string, unknown>;
  } = {},
  attempt = 1,
): Promise<CcrHost> => {
  const [ccr] = await Promise.all([ensureClient(version), ensureBuilt()]);
  const root = await realpath(await mkdtemp(join(tmpdir(), `cb-e2e-${version}-`)));
  const home = join(root, 'home');
  await mkdir(join(home, '.claude-code-router'), { recursive: true });
  const port = await findFreePort();
  await writeFile(
    join(home, '.claude-code-router', 'config.json'),
    `${JSON.stringify((options.editConfig ?? ((config) => config))(ccrConfig(port, options.defaultStyle ?? 'name')), null, 2)}\n`,
  );
  const backend = await startFakeCursorBackend({ auth: options.auth ?? 'ok' });
  const output = { stdout: '', stderr: '' };
  let exit: string | undefined;
  const child = spawn(options.node ?? process.execPath, [ccr.binaryPath, 'start'], {
    cwd: root,
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: home,
      CURSOR_API_KEY: 'crsr_test',
      CURSOR_BACKEND_URL: backend.url,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
  child.on('exit', (code, signal) => (exit = `exit ${String(code)}, signal ${String(signal)}`));

  const close = async (): Promise<void> => {
    try {
      await stopProcess(child);
      await backend.close();
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  };
  try {
    await waitForHealth(port, child);
  } catch (error) {
    const exitedOnItsOwn = child.exitCode !== null;
    await close();
    if (exitedOnItsOwn && attempt < bindAttempts && (await portIsTaken(port)))
      return startCcrHost(version, options, attempt + 1);
    throw new Error(`${errorMessage(error)}\nstderr:\n${output.stderr}\nstdout:\n${output.stdout}`, {
      cause: error,
    });
  }
  return {
    version,
    backend,
    home,
    port,
    pid: child.pid ?? -1,
    output: () => ({ ...output }),
    describe: () =>
      [
        `--- ${version} ccr start (pid ${String(child.pid)}, port ${port}, HOME ${home}; ${exit ?? 'running'}) ---`,
        `stderr:\n${headAndTail(output.stderr, 10_000)}`,
        `stdout:\n${headAndTail(output.stdout, 10_000)}`,
      ].join('\n'),
    close,
  };
};

/**
 * A {@link StartBridge} on a shared CCR host: the scenario's model on the host's backend, and a recording
 * proxy of its own in front of CCR. Closing it closes the proxy only.
 */
export const ccrBridgeStarter =
  (host: CcrHost): StartBridge =>
  async ({ scenario, shell }): Promise<E2eBridge> => {
    const root = await realpath(await mkdtemp(join(tmpdir(), 'cb-e2e-ccr-proxy-')));
    const socketPath = join(root, 'ccr.sock');
    const proxy = await startRecordingProxy({ socketPath, targetPort: host.port });
    const model = createFakeBackendModel(scenario, shell, () => countKeepalives(proxy.exchanges, shell.name));
    host.backend.setScenario(model.scenario);
    const requestsFrom = host.backend.requests.length;
    const { exchanges } = proxy;
    const workspacesRoot = join(host.home, '.claude-code-router', 'cursor-sdk-workspaces');
    const requests = () => host.backend.requests.slice(requestsFrom);
    const main = () => model.played.filter((run) => run.main);
    return {
      socketPath,
      exchanges,
      turnExchanges: () => exchanges.filter((exchange) => exchange.protocol !== undefined),
      mainExchanges: () => exchanges.filter((exchange) => isMainExchange(exchange, shell.name)),
      backendRequests: () => requests().map((entry) => ({ method: entry.method, path: entry.path })),
      runs: () => model.played.map(toBackendRun),
      mainRuns: () => main().map(toBackendRun),
      metrics: () =>
        Promise.reject(new Error('e2e: CCR has no /metrics; assert through the backend records')),
      readWorkspaceFile: (run, relativePath) => {
        const inside = relative(workspacesRoot, run.workspaceDir);
        if (run.workspaceDir === '' || inside.includes(sep) || !workspaceDirName.test(inside)) {
          throw new Error(`e2e: ${JSON.stringify(run.workspaceDir)} is not a workspace of this CCR`);
        }
        return readFile(join(run.workspaceDir, relativePath), 'utf8');
      },
      describe: () =>
        [
          ...describeExchanges(exchanges),
          ...describePlayed(model.played, host.backend.scenarioErrors),
          ...describeRequests(requests()),
          host.describe(),
        ].join('\n'),
      close: async () => {
        try {
          await proxy.close();
        } finally {
          await rm(root, { recursive: true, force: true });
        }
      },
    };
  };
