/**
 * Acceptance: the real OpenCode CLI (pinned, from npm) against the bridge's Chat Completions route (and
 * once over the Responses API), offline in its own network namespace, served by `cursor-bridge serve` (the real
 * `@cursor/sdk`) against the fake Cursor backend, whose scenario plays the model. OpenCode sends a
 * tool-less title request before each first turn; the model answers it as a side request. OpenCode is slow (6–10 s per run on 2 cores), so it gets the fewest runs that cover the list.
 * The scenarios every client shares, and their shared checks, are in `helpers/client-scenarios.ts`.
 */

import { beforeAll, describe, expect, it } from 'vitest';
import { parseJsonLines } from '../helpers/e2e/client-driver.js';
import {
  plainAnswerText,
  runCursorAuthFailure,
  runPlainAnswer,
  runScratchPathCorrection,
  runSlimSecondTurn,
  runTwoCallsInOneStep,
  type E2eClient,
} from '../helpers/e2e/client-scenarios.js';
import { installTimeoutMs, prepareE2e, scenarioTimeoutMs, startE2e } from '../helpers/e2e/e2e-harness.js';
import { quoteToolResults } from '../helpers/e2e/model-scenario.js';
import { rejectedKeyMessage } from '../helpers/e2e/serve-bridge.js';
import {
  opencodeDriver,
  opencodeReasoning,
  opencodeResponsesDriver,
  opencodeText,
  opencodeToolUses,
} from '../helpers/e2e/opencode-driver.js';
import { expectGrounded, expectToolResults } from '../helpers/e2e/scenario-assertions.js';

const opencode: E2eClient = { driver: opencodeDriver, answerOf: opencodeText };

describe('OpenCode against the bridge', { timeout: scenarioTimeoutMs }, () => {
  beforeAll(() => prepareE2e('opencode'), installTimeoutMs);

  // One run checks both the plain answer and the grounding: each OpenCode run costs 6–10 s.
  it("prints a plain answer after its title request, grounded in the client's working directory", async () => {
    const { e2e, run } = await runPlainAnswer(opencode);

    await expectGrounded(e2e.bridge, e2e.sandbox.project);
    expect(opencodeText(run.stdout)).toBe(plainAnswerText);
    // The title request is a separate, tool-less side request on its own agent.
    const side = e2e.bridge.runs().filter((run) => !run.main);
    expect(side).toHaveLength(1);
    expect(side[0]?.toolNames).toEqual([]);
    expect(side[0]?.agentId).not.toBe(e2e.bridge.mainRuns()[0]?.agentId);
  });

  // The host tool round trip, with two calls in its step (the Responses test below makes a single call).
  it('thinks, runs two bash calls of one step on the host and answers with both outputs, through keepalives', async () => {
    const { run } = await runTwoCallsInOneStep(opencode, {
      silent: { thinking: 'Plan both checks.', text: 'Running them.' },
      turnOptions: { verbose: true },
    });

    expect(opencodeReasoning(run.stdout)).toEqual(['Plan both checks.']);
    expect(
      opencodeToolUses(run.stdout)
        .map((use) => String(use.output))
        .sort(),
    ).toEqual(['first-2\n', 'second-5\n']);
    expect(opencodeToolUses(run.stdout).map((use) => use.status)).toEqual(['completed', 'completed']);
  });

  it('continues a conversation on the same agent with a slim prompt (--continue)', async () => {
    const { second } = await runSlimSecondTurn(opencode);

    expect(opencodeText(second.stdout)).toBe('Second answer.');
  });

  it('answers a call with a scratch-workspace path with a correction and never runs it', async () => {
    const { run } = await runScratchPathCorrection(opencode);

    expect(opencodeToolUses(run.stdout)).toEqual([]);
  });

  it('shows thinking and runs a tool round trip over the Responses API too (@ai-sdk/openai)', async () => {
    const e2e = await startE2e(opencodeResponsesDriver, {
      turns: [
        {
          steps: [
            { thinking: 'Plan the check.', toolCalls: [{ shell: 'echo via-responses-$((6*7))' }] },
            { text: (context) => `The command printed: ${quoteToolResults(context)}` },
          ],
        },
      ],
    });
    const run = await e2e.turn('Run the check command.', { verbose: true });

    expect(run.exitCode).toBe(0);
    expect(opencodeText(run.stdout)).toContain('The command printed: via-responses-42');
    expect(opencodeReasoning(run.stdout)).toEqual(['Plan the check.']);
    expectToolResults(e2e.bridge, [{ text: 'via-responses-42', isError: false }]);
    expect(e2e.bridge.mainExchanges().map((exchange) => exchange.url)).toEqual([
      '/v1/responses',
      '/v1/responses',
    ]);
    expect(e2e.bridge.mainRuns()).toHaveLength(1);
  });

  it('exits non-zero with a clear error when the Cursor key is rejected', async () => {
    const { run } = await runCursorAuthFailure(opencode, 'reject');

    const errors = parseJsonLines(run.stdout).filter((event) => event['type'] === 'error');
    expect(errors).toContainEqual(
      expect.objectContaining({
        error: expect.objectContaining({
          data: expect.objectContaining({
            message: expect.stringContaining(rejectedKeyMessage),
            statusCode: 401,
            isRetryable: false,
          }),
        }),
      }),
    );
  });
});
