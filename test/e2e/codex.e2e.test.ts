/**
 * Acceptance: the real Codex CLI (pinned, from npm) against the bridge's Responses route, offline in its
 * own network namespace, served by `cursor-bridge serve` (the real `@cursor/sdk`) against the fake
 * Cursor backend, whose scenario plays the model. Codex hosts `exec_command` (its output reaches the model
 * wrapped in a header block: "Process exited with code 0 … Output:") and the custom tool `apply_patch`.
 */

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseJsonLines } from './helpers/client-driver.js';
import { codexAgentMessages, codexCommands, codexDriver, codexReasoning } from './helpers/codex-driver.js';
import { installTimeoutMs, prepareE2e, scenarioTimeoutMs, startE2e } from './helpers/e2e-harness.js';
import { quoteToolResults } from './helpers/model-scenario.js';
import { rejectedKeyMessage, serveKeepaliveMs } from './helpers/serve-bridge.js';
import {
  expectCorrectedScratchCall,
  expectGrounded,
  expectKeepalives,
  expectSlimSecondTurn,
  expectToolResults,
  hasToolCall,
  toolCallCount,
} from './helpers/scenario-assertions.js';

const answerOf = (stdout: string): string => codexAgentMessages(stdout).join('\n');

/** Longer than the bridge's keepalive interval: the bridge sends keepalives meanwhile. */
const keepaliveDelayMs = serveKeepaliveMs + 1_000;

describe('Codex against the bridge', { timeout: scenarioTimeoutMs }, () => {
  beforeAll(() => prepareE2e('codex'), installTimeoutMs);

  it('prints a plain answer', async () => {
    const e2e = await startE2e(codexDriver, {
      turns: [{ steps: [{ text: 'Plain answer from the e2e model.' }] }],
    });
    const run = await e2e.turn('Say something plain.');

    expect(run.exitCode).toBe(0);
    expect(codexAgentMessages(run.stdout)).toEqual(['Plain answer from the e2e model.']);
    expect(e2e.bridge.mainRuns()).toHaveLength(1);
    expect(e2e.bridge.mainRuns()[0]?.prompt).toContain('Say something plain.');
  });

  it('runs exec_command on the host and answers with its output, after thinking and through keepalives', async () => {
    const e2e = await startE2e(codexDriver, {
      turns: [
        {
          steps: [
            {
              delayMs: keepaliveDelayMs,
              thinking: 'Plan the check.',
              text: 'Running it.',
              toolCalls: [{ shell: 'echo tool-$((20+22))-ok' }],
            },
            {
              delayMs: keepaliveDelayMs,
              text: (context) => `The command printed: ${quoteToolResults(context)}`,
            },
          ],
        },
      ],
    });
    const run = await e2e.turn('Run the check command.');

    expect(run.exitCode).toBe(0);
    expect(codexCommands(run.stdout)).toEqual([
      expect.objectContaining({ aggregated_output: 'tool-42-ok\n', exit_code: 0 }),
    ]);
    expect(answerOf(run.stdout)).toContain('tool-42-ok');
    // The thinking arrives as a reasoning summary, which Codex shows.
    expect(codexReasoning(run.stdout)).toEqual(['Plan the check.']);
    expectToolResults(e2e.bridge, [{ text: 'Output:\ntool-42-ok', isError: false }]);
    expect(e2e.bridge.mainRuns()).toHaveLength(1);
    expect(e2e.bridge.mainExchanges()).toHaveLength(2);
    expect(hasToolCall(e2e.bridge.mainExchanges()[0])).toBe(true);
    expectKeepalives(e2e.bridge);
  });

  it('runs two exec_command calls of one step and returns both results', async () => {
    const e2e = await startE2e(codexDriver, {
      turns: [
        {
          steps: [
            { toolCalls: [{ shell: 'echo first-$((1+1))' }, { shell: 'echo second-$((2+3))' }] },
            { text: (context) => `Both printed: ${quoteToolResults(context)}` },
          ],
        },
      ],
    });
    const run = await e2e.turn('Run both checks.');

    expect(run.exitCode).toBe(0);
    // Codex runs the two calls in parallel and reports them in completion order.
    expect(
      codexCommands(run.stdout)
        .map((command) => command.aggregated_output)
        .sort(),
    ).toEqual(['first-2\n', 'second-5\n']);
    expect(answerOf(run.stdout)).toContain('first-2');
    expect(answerOf(run.stdout)).toContain('second-5');
    expectToolResults(e2e.bridge, [
      { text: 'first-2', isError: false },
      { text: 'second-5', isError: false },
    ]);
    expect(toolCallCount(e2e.bridge.mainExchanges()[0])).toBe(2);
    expect(e2e.bridge.mainExchanges()).toHaveLength(2);
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
    const e2e = await startE2e(codexDriver, {
      turns: [{ steps: [{ text: 'First answer.' }] }, { steps: [{ text: 'Second answer.' }] }],
    });
    const first = await e2e.turn('First question marker-alpha.');
    expect(first.exitCode).toBe(0);
    const second = await e2e.turn('Second question marker-beta.', { resume: true });

    expect(second.exitCode).toBe(0);
    expect(codexAgentMessages(second.stdout)).toEqual(['Second answer.']);
    await expectSlimSecondTurn(e2e.bridge, { firstMarker: 'marker-alpha', secondMarker: 'marker-beta' });
  });

  it("grounds the agent in the client's real working directory", async () => {
    const e2e = await startE2e(codexDriver, { turns: [{ steps: [{ text: 'Grounded.' }] }] });
    const run = await e2e.turn('Where am I?');

    expect(run.exitCode).toBe(0);
    await expectGrounded(e2e.bridge, e2e.sandbox.project);
  });

  it('answers a call with a scratch-workspace path with a correction and never runs it', async () => {
    const e2e = await startE2e(codexDriver, {
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
    expect(codexCommands(run.stdout)).toEqual([]);
    expect(answerOf(run.stdout)).toContain('The exec_command call was not run');
    expectCorrectedScratchCall(e2e.bridge, e2e.sandbox.project);
  });

  it('exits non-zero with a clear error when the Cursor key is rejected', async () => {
    const e2e = await startE2e(codexDriver, {
      turns: [],
      cursorAuth: 'reject',
    });
    const run = await e2e.turn('Say hi.');

    expect(run.exitCode).not.toBe(0);
    expect(run.timedOut).toBe(false);
    const failed = parseJsonLines(run.stdout).find((event) => event['type'] === 'turn.failed');
    expect(JSON.stringify(failed)).toContain(`401 Unauthorized: ${rejectedKeyMessage}`);
    // Codex 0.171.0 ignores `x-should-retry: false` and retries a 401 five times (~6 s) first.
    expect(e2e.bridge.turnExchanges().length).toBeLessThanOrEqual(6);
    expect(e2e.bridge.runs()).toHaveLength(0);
  });
});
