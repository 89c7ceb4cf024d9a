/**
 * A model for "one `serve` process behind HAProxy dies (SIGKILL) in the middle of a turn": three bridges
 * behind the real HAProxy (`startBridgeCluster`), every fake backend playing one shared model, so a run
 * that a second process receives after the first died is told apart from the run it replaces.
 *
 * The conversation's first main run reaches the kill point and reports which process's backend plays it
 * ({@link KilledProcessModel.killPoint}); the test then SIGKILLs that process. Every later main run (the
 * client's retry, or its tool result, wherever HAProxy sends it) answers with the text the scenario
 * builds from that run's prompt, so an answer shows what the transcript the other process received held.
 */

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, vi } from 'vitest';
import type { FakeRunRequest, FakeToolResult, Scenario } from '../../fakes/cursor-backend/index.js';
import type { BackendRun, E2eBridge } from './e2e-bridge.js';
import type { ClientDriver, TurnOptions } from './client-driver.js';
import { startE2e, type E2eScenario, type StartBridge } from './e2e-harness.js';
import { haproxyE2eBridge, type BridgeCluster, type ClusterE2eBridge } from './haproxy-cluster.js';
import type { ShellTool } from './model-scenario.js';
import type { ClientRun } from './run-client.js';
import { historyTurns } from './serve-bridge.js';
import { scratchDirOf } from './fake-backend-model.js';

/**
 * The first main run calls the client's shell tool once ({@link KilledProcessModelOptions.command}).
 * `tool-parked`: it says {@link KilledProcessModelOptions.partialText}, makes the call and reaches the kill
 * point while the call is parked. `mid-stream`: it makes the call, gets the result, streams the partial
 * text and reaches the kill point holding the rest of its answer until its stream closes.
 */
export type KillPoint = 'mid-stream' | 'tool-parked';

export type KilledProcessModelOptions = {
  killPoint: KillPoint;
  shell: ShellTool;
  /** What the first main run says before the kill point. */
  partialText: string;
  /** The shell command of the one tool call. */
  command: string;
  /** Extra input fields of the tool call besides the shell tool's own (e.g. Codex's `yield_time_ms`). */
  extraInput?: Record<string, unknown>;
  /** The whole answer of every later main run, from the prompt that run received. */
  answer(prompt: string): string;
};

/** One run request, which process's backend played it and how it ended. */
export type KilledProcessRun = {
  /** 0-based index into `cluster.bridges`. */
  process: number;
  request: FakeRunRequest;
  /** It offered the client's shell tool (the conversation, not a side request such as a title). */
  main: boolean;
  /** This run reached the kill point. */
  killPoint: boolean;
  toolResults: Array<{ toolCallId: string; text: string; isError: boolean }>;
  outcome: 'open' | 'answered' | 'closed-by-client';
  /** `Date.now()` when the run request arrived (for the report, never asserted). */
  startedAt: number;
};

export type KilledProcessModel = {
  /** Every run request of every process, in arrival order. */
  runs: KilledProcessRun[];
  /** Resolves with the index of the process whose backend plays the run at the kill point. */
  killPoint: Promise<number>;
  /** The backend scenario of process `index`. */
  backendScenario(index: number): Scenario;
};

const usage = { inputTokens: 120, outputTokens: 25 };

const resultText = (result: FakeToolResult): { text: string; isError: boolean } => {
  switch (result.status) {
    case 'success':
      return {
        text: result.content.map((part) => (part.type === 'text' ? part.text : '[image]')).join('\n'),
        isError: result.isError,
      };
    case 'error':
      return { text: result.error, isError: true };
    case 'rejected':
      return { text: `rejected: ${result.reason}`, isError: true };
    case 'other':
      return { text: JSON.stringify(result.json), isError: true };
  }
};

/** The shared model: see the file's comment. */
export const createKilledProcessModel = (options: KilledProcessModelOptions): KilledProcessModel => {
  const runs: KilledProcessRun[] = [];
  let reportKillPoint!: (index: number) => void;
  const killPoint = new Promise<number>((resolve) => (reportKillPoint = resolve));
  let killPointTaken = false;

  const backendScenario =
    (index: number): Scenario =>
    async (run) => {
      const main = run.toolNames.includes(options.shell.name);
      const record: KilledProcessRun = {
        process: index,
        request: run.request,
        main,
        killPoint: false,
        toolResults: [],
        outcome: 'open',
        startedAt: Date.now(),
      };
      runs.push(record);
      run.signal.addEventListener(
        'abort',
        () => {
          if (record.outcome === 'open') record.outcome = 'closed-by-client';
        },
        { once: true },
      );
      if (!main) {
        run.text('E2E side answer');
        run.turnEnded({ inputTokens: 40, outputTokens: 5 });
        record.outcome = 'answered';
        return;
      }
      if (!killPointTaken) {
        killPointTaken = true;
        record.killPoint = true;
        if (options.killPoint === 'tool-parked') run.text(options.partialText);
        const pending = run.toolCalls([
          {
            callId: 'call_killed_1',
            toolName: options.shell.name,
            args: { ...options.shell.input(options.command), ...options.extraInput },
          },
        ]);
        if (options.killPoint === 'tool-parked') reportKillPoint(index);
        try {
          const results = await pending;
          record.toolResults.push(
            ...results.map((result) => ({ toolCallId: result.callId, ...resultText(result) })),
          );
        } catch {
          // The stream closed with the call parked: the process died, as the test meant it to.
          return;
        }
        if (options.killPoint === 'mid-stream') {
          run.text(options.partialText);
          reportKillPoint(index);
          // The rest of the answer never comes: the process dies first, and its stream closes.
          await new Promise<void>((resolve) => run.signal.addEventListener('abort', () => resolve()));
          return;
        }
        // A result reached the process that was meant to die: answer as any later run would.
      }
      run.text(options.answer(run.prompt));
      run.turnEnded(usage);
      record.outcome = 'answered';
    };

  return { runs, killPoint, backendScenario };
};

/** The harness view of the cluster, with the shared model's runs and the cluster itself. */
export type KilledProcessBridge = E2eBridge & { cluster: BridgeCluster; model: KilledProcessModel };

const toBackendRun = (run: KilledProcessRun): BackendRun => ({
  agentId: run.request.conversationId,
  replay: false,
  model: run.request.requestedModel?.modelId ?? '',
  prompt: run.request.text,
  images: run.request.images,
  historyTurns: historyTurns({
    request: run.request,
    main: run.main,
    replay: false,
    toolResults: [],
    webSearches: [],
    outcome: 'open',
  }),
  toolNames: run.request.mcpTools.map((tool) => tool.toolName),
  main: run.main,
  toolResults: run.toolResults.map((result) => ({ ...result, images: [] })),
  workspaceDir: scratchDirOf(run.request.text),
});

const describeRuns = (runs: readonly KilledProcessRun[]): string[] => [
  `--- shared model runs (${runs.length}) ---`,
  ...runs.map(
    (run) =>
      `run on bridge${run.process + 1} agent=${run.request.conversationId} ${run.main ? 'main' : 'side'}` +
      `${run.killPoint ? ' (kill point)' : ''} outcome=${run.outcome} tool results=${JSON.stringify(run.toolResults)}\n` +
      `  prompt: ${run.request.text.length > 4_000 ? `${run.request.text.slice(-4_000)} [tail]` : run.request.text}`,
  ),
];

/** Three bridges behind HAProxy, all playing `model`; the harness's declarative model is not played. */
export const startKilledProcessCluster =
  (model: KilledProcessModel): StartBridge =>
  async (args) => {
    const bridge = await haproxyE2eBridge({
      backendScenario: (index) => model.backendScenario(index),
      runs: () => model.runs.map(toBackendRun),
      describe: () => describeRuns(model.runs),
    })(args);
    return { ...(bridge as ClusterE2eBridge), model } satisfies KilledProcessBridge;
  };

/** The file in the client's project the tool call appends one line to each time it runs. */
export const toolRunsFile = 'tool-runs.log';

/** The file whose creation lets a running tool call finish (the test's gate). */
const releaseFile = 'release';

/** What the tool call prints last; the answer quotes it only when the model received it. */
export const toolOutput = 'tool-out-42';

/**
 * The command of the one tool call: append a line to {@link toolRunsFile}, wait (up to a 60 s safety net)
 * until the test creates the release file, then print {@link toolOutput} (computed, so the command text
 * alone never contains it).
 */
const command = `echo ran >> ${toolRunsFile}; i=0; while [ ! -e ${releaseFile} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; echo tool-out-$((6*7))`;

/** What the model says before the kill point, per kill point. */
export const partialTexts: Record<KillPoint, string> = {
  'tool-parked': 'Running the check now.',
  'mid-stream': 'Partial answer, cut before its end',
};

/** The answer of every run after the kill: built from the tool output the run's prompt carries. */
export const answerFrom = (prompt: string): string => {
  const output = /tool-out-\d+/.exec(prompt)?.[0];
  return output === undefined
    ? 'Final answer: no tool output reached me.'
    : `Final answer: the tool printed ${output}.`;
};

export type KilledProcessCase = {
  e2e: E2eScenario;
  bridge: KilledProcessBridge;
  /** The client run, to its end. */
  run: ClientRun;
  /** The index of the process the test killed. */
  victim: number;
  /** How the killed process ended. */
  victimExit: { code: number | null; signal: NodeJS.Signals | null };
  /** Lines in {@link toolRunsFile}: how many times the tool call ran. */
  toolRuns: number;
};

/**
 * One client turn through three bridges behind HAProxy, with the process that plays the turn SIGKILLed at
 * `killPoint`: `tool-parked` once the tool call runs on the client (it appended its line and waits for the
 * release file, created after the process died); `mid-stream` once the partial answer reached the client
 * through HAProxy. Must be called inside a running test (the harness reports and tears down with it).
 */
export const runKilledProcessCase = async (
  driver: ClientDriver,
  killPoint: KillPoint,
  options: { turn?: TurnOptions; extraInput?: Record<string, unknown> } = {},
): Promise<KilledProcessCase> => {
  const model = createKilledProcessModel({
    killPoint,
    shell: driver.shell,
    partialText: partialTexts[killPoint],
    command,
    answer: answerFrom,
    ...(options.extraInput === undefined ? {} : { extraInput: options.extraInput }),
  });
  const e2e = await startE2e(driver, { turns: [] }, { startBridge: startKilledProcessCluster(model) });
  const bridge = e2e.bridge as KilledProcessBridge;
  const project = e2e.sandbox.project;
  // In the mid-stream case the tool runs to its end at once: the kill comes later.
  if (killPoint === 'mid-stream') await writeFile(join(project, releaseFile), '');
  const running = e2e.turn('Run the check command marker-alpha.', options.turn);
  const reached = await Promise.race([model.killPoint, running.then(() => undefined)]);
  if (reached === undefined) {
    const early = await running;
    throw new Error(`e2e: the client ended (exit ${String(early.exitCode)}) before the kill point`);
  }
  const victim = reached;
  await vi.waitFor(
    async () => {
      if (killPoint === 'tool-parked')
        expect(await readFile(join(project, toolRunsFile), 'utf8').catch(() => '')).toContain('ran');
      else
        expect(JSON.stringify(bridge.exchanges.map((exchange) => exchange.frames))).toContain(
          partialTexts['mid-stream'],
        );
    },
    { timeout: 60_000, interval: 20 },
  );
  const target = bridge.cluster.bridges[victim];
  if (target === undefined) throw new Error(`e2e: no process ${victim} in the cluster`);
  process.kill(target.pid, 'SIGKILL');
  const victimExit = await target.exited;
  if (killPoint === 'tool-parked') await writeFile(join(project, releaseFile), '');
  const run = await running;
  const log = await readFile(join(project, toolRunsFile), 'utf8').catch(() => '');
  return {
    e2e,
    bridge,
    run,
    victim,
    victimExit,
    toolRuns: log.split('\n').filter((line) => line !== '').length,
  };
};
