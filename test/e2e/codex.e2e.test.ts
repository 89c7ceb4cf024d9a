/**
 * Acceptance: the real Codex CLI (pinned, from npm) against the bridge's Responses route, offline in its
 * own network namespace, served by `cursor-bridge serve` (the real `@cursor/sdk`) against the fake
 * Cursor backend, whose scenario plays the model. Codex hosts `exec_command` (its output reaches the model
 * wrapped in a header block: "Process exited with code 0 … Output:") and the custom tool `apply_patch`.
 * The scenarios every client shares, and their shared checks, are in `helpers/client-scenarios.ts`.
 *
 * Configs: the README's, read from README.md — as written (its `model` line names a Cursor model) and
 * without that optional line (Codex's default model, its tools only in an `additional_tools` input item,
 * all in namespaces, the shell reached through code mode's `functions.exec`) —
 * and one with `model = "gpt-5.5"` (top-level tools, with `tool_search` and the `web_search` the bridge
 * cannot offer).
 */

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseJsonLines } from '../helpers/e2e/client-driver.js';
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
} from '../helpers/e2e/client-scenarios.js';
import {
  codexAgentMessages,
  codexCommands,
  codexDriver,
  codexReadmeDriver,
  codexReadmeNoModelDriver,
  codexWebSearchNote,
  codexReasoning,
} from '../helpers/e2e/codex-driver.js';
import {
  installTimeoutMs,
  prepareE2e,
  scenarioTimeoutMs,
  startE2e,
  type E2eScenario,
} from '../helpers/e2e/e2e-harness.js';
import { quoteToolResults } from '../helpers/e2e/model-scenario.js';
import { rejectedKeyMessage } from '../helpers/e2e/serve-bridge.js';
import { expectToolResults } from '../helpers/e2e/scenario-assertions.js';

const answerOf = (stdout: string): string => codexAgentMessages(stdout).join('\n');

const codex: E2eClient = { driver: codexDriver, answerOf };
const codexReadme: E2eClient = { driver: codexReadmeDriver, answerOf };
const codexReadmeNoModel: E2eClient = { driver: codexReadmeNoModelDriver, answerOf };

/** The request bodies the bridge received, as JSON text. */
const bodiesOf = (e2e: E2eScenario): string[] =>
  e2e.bridge.turnExchanges().map((exchange) => JSON.stringify(exchange.body));

describe("Codex with the README's config against the bridge", { timeout: 2 * scenarioTimeoutMs }, () => {
  beforeAll(() => prepareE2e('codex'), installTimeoutMs);

  it('as written (a Cursor model on its model line): runs a shell command and answers with its output', async () => {
    const { e2e, run } = await runToolRoundTrip(codexReadme, { toolResultText: 'tool-42-ok' });
    expect(e2e.bridge.turnExchanges()[0]?.body).toMatchObject({ model: 'gpt-5.4' });
    expect(e2e.bridge.mainRuns()[0]?.model).toBe('gpt-5.4');
    expect(codexCommands(run.stdout)).toEqual([
      expect.objectContaining({ aggregated_output: 'tool-42-ok\n', exit_code: 0 }),
    ]);
    expect(answerOf(run.stdout)).toContain('tool-42-ok');
  });

  // Without the model line: Codex's own default model, its tools only in an additional_tools item.

  it("without the model line: runs a shell command through code mode's functions.exec and answers with its output", async () => {
    const { e2e, run } = await runToolRoundTrip(codexReadmeNoModel, { toolResultText: 'tool-42-ok' });

    // Codex sent its tools only in an additional_tools item; all of them reached the model.
    const [first, second] = bodiesOf(e2e);
    expect(first).toContain('"type":"additional_tools"');
    expect(Object.keys(e2e.bridge.turnExchanges()[0]?.body ?? {})).not.toContain('tools');
    expect(e2e.bridge.mainRuns()[0]?.toolNames).toEqual(
      expect.arrayContaining([
        'functions__exec',
        'functions__wait',
        'clock__sleep',
        'collaboration__list_agents',
      ]),
    );
    // The model's call went back as Codex's own namespace call, which Codex ran through its exec_command.
    expect(second).toMatch(/"type":"custom_tool_call"[^}]*"name":"exec","namespace":"functions"/);
    expect(codexCommands(run.stdout)).toEqual([
      expect.objectContaining({ aggregated_output: 'tool-42-ok\n', exit_code: 0 }),
    ]);
    expect(codexAgentMessages(run.stdout)).toEqual(['Running it.', expect.stringContaining('tool-42-ok')]);
    for (const exchange of e2e.bridge.turnExchanges()) {
      expect(exchange.parsed?.ok === true ? exchange.parsed.turn.warnings : []).not.toContainEqual(
        expect.objectContaining({ code: 'unsupported-tool' }),
      );
    }
  });

  it('without the model line: calls a namespace function tool (collaboration.list_agents) and gets its result', async () => {
    const e2e = await startE2e(codexReadmeNoModelDriver, {
      turns: [
        {
          steps: [
            { toolCalls: [{ tool: 'collaboration__list_agents', input: {} }] },
            { text: (context) => `Agents: ${quoteToolResults(context)}` },
          ],
        },
      ],
    });
    const run = await e2e.turn('List the agents.');

    expect(run.exitCode).toBe(0);
    expect(bodiesOf(e2e)[1]).toMatch(
      /"type":"function_call"[^}]*"name":"list_agents","namespace":"collaboration"/,
    );
    expectToolResults(e2e.bridge, [{ text: '"agent_name":"/root"', isError: false }]);
    expect(answerOf(run.stdout)).toContain('"agent_name":"/root"');
  });
});

describe(
  'Codex with model = "gpt-5.5": deferred tools and the tools the bridge cannot offer',
  { timeout: scenarioTimeoutMs },
  () => {
    beforeAll(() => prepareE2e('codex'), installTimeoutMs);

    it('searches deferred tools with tool_search and continues with the tools it loaded', async () => {
      const e2e = await startE2e(codexDriver, {
        turns: [
          {
            steps: [
              { toolCalls: [{ tool: 'tool_search', input: { query: 'spawn agent', limit: 3 } }] },
              { text: 'Not reached: the search grows the tool set, so the bridge continues in a new run.' },
            ],
          },
          {
            steps: [
              {
                text: (context) =>
                  context.prompt.includes('Loaded tools, callable from now on: multi_agent_v1__spawn_agent')
                    ? 'The search loaded spawn_agent.'
                    : 'The search result never arrived.',
              },
            ],
          },
        ],
      });
      const run = await e2e.turn('Find the tool to spawn an agent.');

      expect(run.exitCode).toBe(0);
      // The call went back as Codex's own tool_search_call, and Codex answered with the tools it loaded.
      const [, second] = bodiesOf(e2e);
      expect(second).toMatch(/"type":"tool_search_call"[^}]*"execution":"client"/);
      expect(second).toContain('"type":"tool_search_output"');
      const runs = e2e.bridge.mainRuns();
      expect(runs[0]?.toolNames).toContain('tool_search');
      expect(runs[0]?.toolNames).not.toContain('multi_agent_v1__spawn_agent');
      expect(runs.at(-1)?.toolNames).toEqual(
        expect.arrayContaining(['multi_agent_v1__spawn_agent', 'multi_agent_v1__close_agent']),
      );
      expect(codexAgentMessages(run.stdout).at(-1)).toBe('The search loaded spawn_agent.');
    });
  },
);

describe('Codex against the bridge', { timeout: scenarioTimeoutMs }, () => {
  beforeAll(() => prepareE2e('codex'), installTimeoutMs);

  it('prints a plain answer, after a note naming the web_search tool the bridge cannot offer', async () => {
    const { e2e, run } = await runPlainAnswer(codex);

    // The user sees the note; the model was told in its prompt.
    expect(codexAgentMessages(run.stdout)).toEqual([
      expect.stringMatching(codexWebSearchNote),
      plainAnswerText,
    ]);
    expect(e2e.bridge.mainRuns()[0]?.prompt).toMatch(/Note from cursor-bridge[^]*web_search tool/);
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
