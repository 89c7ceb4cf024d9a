/**
 * The scenarios the three clients' acceptance suites share. Each `run…` function starts the scenario
 * for one client, runs its turn(s), and checks everything that is the same for every client: the
 * client's exit, what the Cursor backend received and what the bridge sent. It returns the runs so the
 * client's own suite then checks what only that client shows (its event output, its exact answer).
 * The model's shell commands are POSIX shell, which every client's shell tool runs as is; the driver's
 * {@link ClientDriver.shell} turns them into the client's own tool call.
 */

import { expect } from 'vitest';
import type { ClientDriver, TurnOptions } from './client-driver.js';
import { startE2e, type E2eScenario } from './e2e-harness.js';
import { quoteToolResults, type ModelStep } from './model-scenario.js';
import type { ClientRun } from './run-client.js';
import {
  expectCorrectedScratchCall,
  expectGrounded,
  expectKeepalives,
  expectSlimSecondTurn,
  expectToolResults,
  hasToolCall,
  toolCallCount,
} from './scenario-assertions.js';

/** One real client under test: its driver, and how to read the answer it printed. */
export type E2eClient = {
  driver: ClientDriver;
  /** The answer text the client printed on stdout (all of its assistant text). */
  answerOf(stdout: string): string;
};

/** A scenario of one client turn, after the shared checks passed. */
export type ScenarioRun = { e2e: E2eScenario; run: ClientRun };

/** The answer of {@link runPlainAnswer}'s model. */
export const plainAnswerText = 'Plain answer from the e2e model.';

/**
 * The model answers with {@link plainAnswerText} and no tool call. Checks: the client exited 0, and
 * one main run reached the backend carrying the user's prompt.
 */
export const runPlainAnswer = async (client: E2eClient): Promise<ScenarioRun> => {
  const e2e = await startE2e(client.driver, { turns: [{ steps: [{ text: plainAnswerText }] }] });
  const run = await e2e.turn('Say something plain.');

  expect(run.exitCode).toBe(0);
  expect(e2e.bridge.mainRuns()).toHaveLength(1);
  expect(e2e.bridge.mainRuns()[0]?.prompt).toContain('Say something plain.');
  return { e2e, run };
};

/**
 * The model stays silent until the bridge sent a keepalive, calls the client's shell tool with
 * `echo tool-$((20+22))-ok` (optionally after `thinking`), stays silent again until the next keepalive and answers
 * `The command printed: <results>`. Checks: the client exited 0; the backend got one result containing
 * `toolResultText` (`tool-42-ok` exists only if the client really ran the command); one agent run spans
 * both requests (the second one resumed the parked call); the first response carried the call; the
 * bridge sent keepalives on both.
 */
export const runToolRoundTrip = async (
  client: E2eClient,
  options: { thinking?: string; toolResultText: string },
): Promise<ScenarioRun> => {
  const e2e = await startE2e(client.driver, {
    turns: [
      {
        steps: [
          {
            silentUntilKeepalive: true,
            ...(options.thinking === undefined ? {} : { thinking: options.thinking }),
            text: 'Running it.',
            toolCalls: [{ shell: 'echo tool-$((20+22))-ok' }],
          },
          {
            silentUntilKeepalive: true,
            text: (context) => `The command printed: ${quoteToolResults(context)}`,
          },
        ],
      },
    ],
  });
  const run = await e2e.turn('Run the check command.');

  expect(run.exitCode).toBe(0);
  expectToolResults(e2e.bridge, [{ text: options.toolResultText, isError: false }]);
  expect(e2e.bridge.mainRuns()).toHaveLength(1);
  expect(e2e.bridge.mainExchanges()).toHaveLength(2);
  expect(hasToolCall(e2e.bridge.mainExchanges()[0])).toBe(true);
  expectKeepalives(e2e.bridge);
  return { e2e, run };
};

/**
 * One step calls the client's shell tool twice (`echo first-$((1+1))`, `echo second-$((2+3))`), the
 * next answers `Both printed: <results>`. With `silent`, the model is silent until a keepalive
 * before each step and the first step has `thinking` and `text`. Checks: the client exited 0
 * and its answer names both outputs; the backend got both results (in call order) in one agent run;
 * the first response carried two distinct calls; with `silent`, the bridge sent keepalives.
 */
export const runTwoCallsInOneStep = async (
  client: E2eClient,
  options: { silent?: { thinking: string; text: string }; turnOptions?: TurnOptions } = {},
): Promise<ScenarioRun> => {
  const silence: Pick<ModelStep, 'silentUntilKeepalive'> =
    options.silent === undefined ? {} : { silentUntilKeepalive: true };
  const e2e = await startE2e(client.driver, {
    turns: [
      {
        steps: [
          {
            ...silence,
            ...options.silent,
            toolCalls: [{ shell: 'echo first-$((1+1))' }, { shell: 'echo second-$((2+3))' }],
          },
          { ...silence, text: (context) => `Both printed: ${quoteToolResults(context)}` },
        ],
      },
    ],
  });
  const run = await e2e.turn('Run both checks.', options.turnOptions);

  expect(run.exitCode).toBe(0);
  expect(client.answerOf(run.stdout)).toContain('first-2');
  expect(client.answerOf(run.stdout)).toContain('second-5');
  expectToolResults(e2e.bridge, [
    { text: 'first-2', isError: false },
    { text: 'second-5', isError: false },
  ]);
  expect(toolCallCount(e2e.bridge.mainExchanges()[0])).toBe(2);
  expect(e2e.bridge.mainExchanges()).toHaveLength(2);
  expect(e2e.bridge.mainRuns()).toHaveLength(1);
  if (options.silent !== undefined) expectKeepalives(e2e.bridge);
  return { e2e, run };
};

/**
 * Two user turns (`First answer.`, `Second answer.`), the second one continuing the client's latest
 * conversation. Checks: both runs exited 0, and the second turn was slim
 * ({@link expectSlimSecondTurn}).
 */
export const runSlimSecondTurn = async (
  client: E2eClient,
): Promise<{ e2e: E2eScenario; first: ClientRun; second: ClientRun }> => {
  const e2e = await startE2e(client.driver, {
    turns: [{ steps: [{ text: 'First answer.' }] }, { steps: [{ text: 'Second answer.' }] }],
  });
  const first = await e2e.turn('First question marker-alpha.');
  expect(first.exitCode).toBe(0);
  const second = await e2e.turn('Second question marker-beta.', { resume: true });

  expect(second.exitCode).toBe(0);
  await expectSlimSecondTurn(e2e.bridge, { firstMarker: 'marker-alpha', secondMarker: 'marker-beta' });
  return { e2e, first, second };
};

/** The model answers `Grounded.`. Checks: the client exited 0 and the agent was grounded ({@link expectGrounded}). */
export const runGrounding = async (client: E2eClient): Promise<ScenarioRun> => {
  const e2e = await startE2e(client.driver, { turns: [{ steps: [{ text: 'Grounded.' }] }] });
  const run = await e2e.turn('Where am I?');

  expect(run.exitCode).toBe(0);
  await expectGrounded(e2e.bridge, e2e.sandbox.project);
  return { e2e, run };
};

/**
 * The model calls the client's shell tool on a scratch-workspace path (`cat <workspace>/AGENTS.md`),
 * then answers `Correction received: <results>`. Checks: the client exited 0; its answer quotes the
 * bridge's correction (`The <shell tool> call was not run`); the call never reached the client
 * ({@link expectCorrectedScratchCall}).
 */
export const runScratchPathCorrection = async (client: E2eClient): Promise<ScenarioRun> => {
  const e2e = await startE2e(client.driver, {
    turns: [
      {
        steps: [
          { toolCalls: [{ shell: (context) => `cat ${context.workspaceDir}/AGENTS.md` }] },
          { text: (context) => `Correction received: ${quoteToolResults(context)}` },
        ],
      },
    ],
  });
  const run = await e2e.turn('Read the agent notes.');

  expect(run.exitCode).toBe(0);
  expect(client.answerOf(run.stdout)).toContain(
    `Correction received: The ${client.driver.shell.name} call was not run`,
  );
  expectCorrectedScratchCall(e2e.bridge, e2e.sandbox.project);
  return { e2e, run };
};

/**
 * The bridge cannot use its Cursor key: `reject` (the backend refuses it) or `no-key` (the bridge has
 * none). Checks: the client exited non-zero on its own (not by the harness's timeout), and no agent run
 * reached the backend.
 */
export const runCursorAuthFailure = async (
  client: E2eClient,
  cursorAuth: 'reject' | 'no-key',
): Promise<ScenarioRun> => {
  const e2e = await startE2e(client.driver, { turns: [], cursorAuth });
  const run = await e2e.turn('Say hi.');

  expect(run.exitCode).not.toBe(0);
  expect(run.timedOut).toBe(false);
  expect(e2e.bridge.runs()).toHaveLength(0);
  return { e2e, run };
};
