/**
 * The product path under test: the real CLI, `node bin/cursor-bridge.js serve`, running the real
 * `@cursor/sdk` against the project's fake Cursor backend (in this test process), whose scenario plays
 * the model (`fake-backend-model.ts`).
 *
 * Each scenario gets its own backend, a fresh HOME and config for the bridge (`CURSOR_API_KEY`,
 * `CURSOR_BACKEND_URL` pointing at the fake, `LOG_LEVEL=debug`), and the bridge on an ephemeral loopback
 * port read from its "listening on" line. The clients' namespaces reach it through a unix socket served
 * by `recording-proxy.ts`, which also records every exchange. The bridge is stopped by its PID (SIGTERM,
 * then SIGKILL after a grace period).
 *
 * The bridge runs on the host network: with the backend URL pointed at the fake, the SDK connected only
 * to 127.0.0.1 (checked with `strace -f -e trace=connect` over a whole turn).
 */

import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import {
  startFakeCursorBackend,
  type FakeCursorBackend,
  type FakeRequestLogEntry,
  type Scenario,
} from '../../fakes/cursor-backend/index.js';
import type { FakeModel } from '../../fakes/cursor-backend/default-models.js';
import { serializeSseFrames } from '../../../src/protocols/sse-serialize.js';
import type { BackendRun, E2eBridge, RecordedExchange } from './e2e-bridge.js';
import { ensureBuilt } from '../ensure-built.js';
import { bridgeCounters } from '../prometheus-text.js';
import { serveArgs, stopProcess, waitForServePort } from '../serve-command-line.js';
import { createFakeBackendModel, scratchDirOf, type PlayedRun } from './fake-backend-model.js';
import type { ModelScenario, ShellTool } from './model-scenario.js';
import { countKeepalives, isMainExchange, startRecordingProxy } from './recording-proxy.js';
import { errorMessage } from '../../../lib/error-message.js';

/**
 * The bridge's SSE keepalive interval, set through `CURSOR_BRIDGE_KEEPALIVE_MS` (the default is 10 s). A
 * model step that is silent until a keepalive waits about this long.
 */
export const serveKeepaliveMs = 1_000;

/**
 * What the bridge tells the client when the fake backend rejects the API key (`cursorAuth: 'reject'`):
 * the bridge's wording around the backend's 401 message.
 */
export const rejectedKeyMessage = 'Cursor rejected the API key: Invalid API key (fake).';

/** How the bridge's message starts when it has no Cursor API key at all (`cursorAuth: 'no-key'`). */
export const missingKeyMessage = 'Cursor API key not found';

/** How long `serve` may take to print its listening line (it loads the SDK first: ≈ 1 s idle). */
const startTimeoutMs = 30_000;
const workspaceDirName = /^[0-9a-f]{32}$/;

export type ServeBridge = E2eBridge & {
  backend: FakeCursorBackend;
  /** The bridge's HOME (its workspaces are under `~/.claude-code-router/cursor-sdk-workspaces`). */
  home: string;
  /** The bridge's TCP port on 127.0.0.1. */
  port: number;
  pid: number;
  /** Every run request and what the scenario did with it. */
  played: readonly PlayedRun[];
  /** The bridge process's stdout (pino JSON lines) and stderr. */
  output(): { stdout: string; stderr: string };
  /** Resolves when the process exits, with its exit code or signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
};

export type StartServeBridgeOptions = {
  scenario: ModelScenario;
  shell: ShellTool;
  /** Plays the backend instead of `scenario` (for many concurrent conversations). */
  backendScenario?: Scenario;
  /** Extra environment for `serve` (e.g. `CURSOR_BRIDGE_DRAIN_TIMEOUT`). */
  env?: Record<string, string>;
  /** Cursor's catalog as the fake backend lists it (default: the fake's). */
  models?: readonly FakeModel[];
  /** The port to listen on (default: an ephemeral one). */
  port?: number;
};

const truncate = (text: string, max = 4_000): string =>
  text.length > max ? `${text.slice(0, max)}… [${text.length - max} more chars]` : text;

/** The head and the tail of a long log. */
export const headAndTail = (text: string, max: number): string =>
  text.length > max
    ? `${text.slice(0, max / 4)}\n… [${text.length - max} chars cut] …\n${text.slice(-(max * 3) / 4)}`
    : text;

const toolName = (tool: unknown): string => {
  const record = (tool ?? {}) as { name?: unknown; function?: { name?: unknown }; type?: unknown };
  return String(record.name ?? record.function?.name ?? record.type);
};

/**
 * A request body for a failure report: the transcript's tail in full (where a turn's evidence is), the
 * head and the tool list only summarised (they are tens of KB of client prompt).
 */
const summarizeBody = (body: unknown): string => {
  if (typeof body !== 'object' || body === null) return truncate(JSON.stringify(body));
  const summary: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    if ((key === 'messages' || key === 'input') && Array.isArray(value)) {
      summary[key] = `[${value.length} items; the last ones below]`;
    } else if (key === 'tools' && Array.isArray(value)) {
      summary[key] = value.map(toolName);
    } else if (key === 'system') {
      summary[key] = `[${JSON.stringify(value).length} chars]`;
    } else {
      summary[key] = value;
    }
  }
  const transcript =
    (body as { messages?: unknown; input?: unknown }).messages ?? (body as { input?: unknown }).input;
  const tail = Array.isArray(transcript)
    ? transcript.slice(-4).map((item) => `\n    ${truncate(JSON.stringify(item), 1_500)}`)
    : [];
  return `${truncate(JSON.stringify(summary), 2_000)}${tail.join('')}`;
};

export const historyTurns = (run: PlayedRun): number => {
  const turns = run.request.conversationState['turns'];
  return Array.isArray(turns) ? turns.length : 0;
};

export const describeExchanges = (exchanges: readonly RecordedExchange[]): string[] => {
  const parts = [`--- client ↔ bridge exchanges (${exchanges.length}) ---`];
  for (const [index, exchange] of exchanges.entries()) {
    parts.push(
      `#${index + 1} ${exchange.method} ${exchange.url} -> ${String(exchange.status ?? 'open')}${exchange.error === undefined ? '' : ` (${exchange.error})`}`,
      `  headers: ${truncate(JSON.stringify(exchange.headers), 1_500)}`,
    );
    if (exchange.body !== undefined) parts.push(`  body: ${summarizeBody(exchange.body)}`);
    if (exchange.parsed?.ok === false) parts.push(`  parse error: ${JSON.stringify(exchange.parsed.error)}`);
    if (exchange.frames.length > 0)
      parts.push(
        `  sse (${exchange.keepalives} keepalives):\n${truncate(serializeSseFrames(exchange.frames))}`,
      );
    if (exchange.json !== undefined) parts.push(`  json: ${truncate(JSON.stringify(exchange.json))}`);
  }
  return parts;
};

export const describePlayed = (
  played: readonly PlayedRun[],
  scenarioErrors: readonly unknown[],
): string[] => {
  const parts = [`--- backend run requests (${played.length}) ---`];
  for (const run of played) {
    const request = run.request;
    parts.push(
      `run ${request.index} request=${request.requestId} agent=${request.conversationId} action=${request.actionKind} ` +
        `model=${request.requestedModel?.modelId ?? '?'} tools=[${request.mcpTools.map((tool) => tool.toolName).join(', ')}] ` +
        `${run.main ? `main turn ${String(run.turn)}${run.replay ? ' (SDK replay)' : ''}` : 'side'} ` +
        `history turns=${historyTurns(run)} ` +
        `outcome=${run.outcome}${run.failure === undefined ? '' : ` [${run.failure.code}] ${run.failure.message}`}` +
        `${run.error === undefined ? '' : ` error: ${run.error}`}`,
      `  prompt: ${truncate(request.text, 6_000)}`,
      `  tool results: ${truncate(JSON.stringify(run.toolResults))}`,
    );
  }
  if (scenarioErrors.length > 0) parts.push(`scenario errors: ${scenarioErrors.map(String).join('; ')}`);
  return parts;
};

/** The backend's request log, one line per request, runs of identical lines folded. */
export const describeRequests = (requests: readonly FakeRequestLogEntry[]): string[] => {
  const start = requests[0]?.at ?? 0;
  const lines: string[] = [];
  let previous = '';
  let repeats = 0;
  const flush = (): void => {
    if (repeats > 0) lines.push(`    … ×${repeats + 1}`);
    repeats = 0;
  };
  for (const entry of requests) {
    const key = `${entry.method} ${entry.path}${entry.clientMessage === undefined ? '' : ` ${entry.clientMessage}`}${entry.requestId === undefined ? '' : ` req=${entry.requestId.slice(0, 8)}`}`;
    if (key === previous) {
      repeats += 1;
      continue;
    }
    flush();
    previous = key;
    lines.push(`  +${entry.at - start} ms ${key}`);
  }
  flush();
  return [`--- backend request log (${requests.length}) ---`, ...lines];
};

/** A run request as a scenario sees it. */
export const toBackendRun = (played: PlayedRun): BackendRun => ({
  agentId: played.request.conversationId,
  replay: played.replay,
  model: played.request.requestedModel?.modelId ?? '',
  prompt: played.request.text,
  images: played.request.images,
  historyTurns: historyTurns(played),
  toolNames: played.request.mcpTools.map((tool) => tool.toolName),
  main: played.main,
  toolResults: [...played.toolResults],
  workspaceDir: scratchDirOf(played.request.text),
});

/** Start the fake backend and `cursor-bridge serve` for `scenario`. */
export const startServeBridge = async (options: StartServeBridgeOptions): Promise<ServeBridge> => {
  await ensureBuilt();
  const root = await realpath(await mkdtemp(join(tmpdir(), 'cb-e2e-serve-')));
  const home = join(root, 'home');
  await mkdir(home, { recursive: true });
  const workspacesRoot = join(home, '.claude-code-router', 'cursor-sdk-workspaces');
  const configPath = join(root, 'config.json');
  await writeFile(
    configPath,
    `${JSON.stringify(
      {
        LOG_LEVEL: 'debug',
        Providers: [{ name: 'cursor', models: ['composer-2'] }],
        Router: { default: 'cursor,composer-2' },
      },
      null,
      2,
    )}\n`,
  );

  let recorded: readonly RecordedExchange[] = [];
  const model = createFakeBackendModel(options.scenario, options.shell, () =>
    countKeepalives(recorded, options.shell.name),
  );
  const backend = await startFakeCursorBackend({
    scenario: options.backendScenario ?? model.scenario,
    auth: options.scenario.cursorAuth === 'reject' ? 'reject' : 'ok',
    ...(options.models === undefined ? {} : { models: options.models }),
  });
  const output = { stdout: '', stderr: '' };
  let exit: string | undefined;
  const child = spawn(process.execPath, serveArgs(configPath, [], options.port), {
    cwd: root,
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: home,
      ...(options.scenario.cursorAuth === 'no-key' ? {} : { CURSOR_API_KEY: 'crsr_test' }),
      CURSOR_BACKEND_URL: backend.url,
      LOG_LEVEL: 'debug',
      CURSOR_BRIDGE_KEEPALIVE_MS: String(serveKeepaliveMs),
      // Teardown SIGTERMs the bridge: a drain shorter than the SIGKILL grace below.
      CURSOR_BRIDGE_DRAIN_TIMEOUT: '3',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      exit = `exit ${String(code)}, signal ${String(signal)}`;
      resolve({ code, signal });
    }),
  );

  const socketPath = join(root, 'bridge.sock');
  let port: number;
  let proxy: Awaited<ReturnType<typeof startRecordingProxy>>;
  try {
    port = await waitForServePort(child, startTimeoutMs);
    proxy = await startRecordingProxy({ socketPath, targetPort: port });
    recorded = proxy.exchanges;
  } catch (error) {
    await stopProcess(child);
    await backend.close();
    await rm(root, { recursive: true, force: true });
    throw new Error(
      `${errorMessage(error)}\nstderr:\n${output.stderr}\nstdout:\n${headAndTail(output.stdout, 20_000)}`,
      { cause: error },
    );
  }
  const { exchanges } = proxy;
  const shellName = options.shell.name;

  const toRun = toBackendRun;

  const describe = (): string =>
    [
      ...describeExchanges(exchanges),
      ...describePlayed(model.played, backend.scenarioErrors),
      ...describeRequests(backend.requests),
      `--- cursor-bridge serve (pid ${String(child.pid)}, port ${port}, HOME ${home}; ${exit ?? 'running'}) ---`,
      `stderr:\n${headAndTail(output.stderr, 10_000)}`,
      `stdout (log):\n${headAndTail(output.stdout, 30_000)}`,
    ].join('\n');

  return {
    socketPath,
    backend,
    home,
    port,
    pid: child.pid ?? -1,
    played: model.played,
    exchanges,
    output: () => ({ ...output }),
    exited,
    turnExchanges: () => exchanges.filter((exchange) => exchange.protocol !== undefined),
    mainExchanges: () => exchanges.filter((exchange) => isMainExchange(exchange, shellName)),
    backendRequests: () => backend.requests.map((entry) => ({ method: entry.method, path: entry.path })),
    runs: () => model.played.map(toRun),
    mainRuns: () => model.played.filter((run) => run.main).map(toRun),
    metrics: async () => {
      const response = await fetch(`http://127.0.0.1:${port}/metrics`);
      return bridgeCounters(await response.text());
    },
    readWorkspaceFile: (run, relativePath) => {
      // Only a workspace of this bridge: `<HOME>/.claude-code-router/cursor-sdk-workspaces/<32 hex>/`.
      const inside = relative(workspacesRoot, run.workspaceDir);
      if (run.workspaceDir === '' || inside.includes(sep) || !workspaceDirName.test(inside)) {
        throw new Error(
          `e2e: the run's workspace ${JSON.stringify(run.workspaceDir)} is not a workspace of this bridge (${workspacesRoot}/<32 hex>)`,
        );
      }
      return readFile(join(run.workspaceDir, relativePath), 'utf8');
    },
    describe,
    close: async () => {
      try {
        await proxy.close();
        await stopProcess(child);
        await backend.close();
      } finally {
        await rm(root, { recursive: true, force: true });
      }
    },
  };
};
