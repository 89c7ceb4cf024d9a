/**
 * Acceptance: the real Codex CLI (pinned, from npm) against the bridge's Responses route, offline in its
 * own network namespace, served by `cursor-bridge serve` (the real `@cursor/sdk`) against the fake
 * Cursor backend, whose scenario plays the model. Codex hosts `exec_command` (its output reaches the model
 * wrapped in a header block: "Process exited with code 0 … Output:") and the custom tool `apply_patch`.
 * The scenarios every client shares, and their shared checks, are in `helpers/client-scenarios.ts`.
 */

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseJsonLines } from './helpers/client-driver.js';
import {
  plainAnswerText,
  runCursorAuthFailure,
  runGrounding,
  runPlainAnswer,
  runScratchPathCorrection,
  runSlimSecondTurn,
  runToolRoundTrip,
  runTwoCallsInOneStep,
  type E2eClient,
} from './helpers/client-scenarios.js';
import { codexAgentMessages, codexCommands, codexDriver, codexReasoning } from './helpers/codex-driver.js';
import { installTimeoutMs, prepareE2e, scenarioTimeoutMs, startE2e } from './helpers/e2e-harness.js';
import { quoteToolResults } from './helpers/model-scenario.js';
import { rejectedKeyMessage } from './helpers/serve-bridge.js';
import { expectToolResults } from './helpers/scenario-assertions.js';

const answerOf = (stdout: string): string => codexAgentMessages(stdout).join('\n');

const codex: E2eClient = { driver: codexDriver, answerOf };

describe('Codex against the bridge', { timeout: scenarioTimeoutMs }, () => {
  beforeAll(() => prepareE2e('codex'), installTimeoutMs);

  it('prints a plain answer', async () => {
    const { run } = await runPlainAnswer(codex);

    expect(codexAgentMessages(run.stdout)).toEqual([plainAnswerText]);
  });

  it('runs exec_command on the host and answers with its output, after thinking and through keepalives', async () => {
    const { run } = await runToolRoundTrip(codex, {
      thinking: 'Plan the check.',
      toolResultText: 'Output:\ntool-42-ok',
    });

    expect(codexCommands(run.stdout)).toEqual([
      expect.objectContaining({ aggregated_output: 'tool-42-ok\n', exit_code: 0 }),
    ]);
    expect(answerOf(run.stdout)).toContain('tool-42-ok');
    // The thinking arrives as a reasoning summary, which Codex shows.
    expect(codexReasoning(run.stdout)).toEqual(['Plan the check.']);
  });

  it('runs two exec_command calls of one step and returns both results', async () => {
    const { run } = await runTwoCallsInOneStep(codex);

    // Codex runs the two calls in parallel and reports them in completion order.
    expect(
      codexCommands(run.stdout)
        .map((command) => command.aggregated_output)
        .sort(),
    ).toEqual(['first-2\n', 'second-5\n']);
  });

  it('applies a patch through the apply_patch custom tool', async () => {
    const patch =
      '*** Begin Patch\n*** Add File: notes/hello.txt\n+patched by the e2e model\n*** End Patch\n';
    const e2e = await startE2e(codexDriver, {
      turns: [
        {
          steps: [
            { toolCalls: [{ tool: 'apply_patch', input: { input: patch } }] },
            { text: (context) => `Patch result: ${quoteToolResults(context)}` },
          ],
        },
      ],
    });
    const run = await e2e.turn('Add the notes file.', { allowWrites: true });

    expect(run.exitCode).toBe(0);
    expect(await readFile(join(e2e.sandbox.project, 'notes', 'hello.txt'), 'utf8')).toBe(
      'patched by the e2e model\n',
    );
    // The call went out as a Responses `custom_tool_call` carrying the raw patch text.
    expect(JSON.stringify(e2e.bridge.mainExchanges()[1]?.body)).toContain('"type":"custom_tool_call_output"');
    expectToolResults(e2e.bridge, [{ text: 'A notes/hello.txt', isError: false }]);
    expect(answerOf(run.stdout)).toContain('Success. Updated the following files');
  });

  it('continues a conversation on the same agent with a slim prompt (exec resume)', async () => {
    const { second } = await runSlimSecondTurn(codex);

    expect(codexAgentMessages(second.stdout)).toEqual(['Second answer.']);
  });

  it("grounds the agent in the client's real working directory", async () => {
    await runGrounding(codex);
  });

  it('answers a call with a scratch-workspace path with a correction and never runs it', async () => {
    const { run } = await runScratchPathCorrection(codex);

    expect(codexCommands(run.stdout)).toEqual([]);
  });

  it('exits non-zero with a clear error when the Cursor key is rejected', async () => {
    const { e2e, run } = await runCursorAuthFailure(codex, 'reject');

    const failed = parseJsonLines(run.stdout).find((event) => event['type'] === 'turn.failed');
    expect(JSON.stringify(failed)).toContain(`401 Unauthorized: ${rejectedKeyMessage}`);
    // Codex 0.171.0 ignores `x-should-retry: false` and retries a 401 five times (~6 s) first.
    expect(e2e.bridge.turnExchanges().length).toBeLessThanOrEqual(6);
  });
});
