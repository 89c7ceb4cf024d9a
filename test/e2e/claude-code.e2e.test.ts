/**
 * Acceptance: the real Claude Code CLI (pinned, from npm) against the bridge's Messages route, offline
 * in its own network namespace, served by `cursor-bridge serve` (the real `@cursor/sdk`) against the
 * fake Cursor backend, whose scenario plays the model. Every scenario checks what the user sees (Claude
 * Code's result JSON) and what the backend received (prompts, tool results, the agent used); the
 * scenarios every client shares, and their shared checks, are in `helpers/client-scenarios.ts`.
 */

import { beforeAll, describe, expect, it } from 'vitest';
import { claudeCodeDriver, claudeCodeResult } from '../helpers/e2e/claude-code-driver.js';
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
import { installTimeoutMs, prepareE2e, scenarioTimeoutMs, startE2e } from '../helpers/e2e/e2e-harness.js';
import { quoteToolResults } from '../helpers/e2e/model-scenario.js';
import { missingKeyMessage, rejectedKeyMessage } from '../helpers/e2e/serve-bridge.js';

const answerOf = (stdout: string): string => claudeCodeResult(stdout)?.result ?? '';

const claudeCode: E2eClient = { driver: claudeCodeDriver, answerOf };

describe('Claude Code against the bridge', { timeout: scenarioTimeoutMs }, () => {
  beforeAll(() => prepareE2e('claude-code'), installTimeoutMs);

  it('prints a plain answer', async () => {
    const { run } = await runPlainAnswer(claudeCode);

    expect(claudeCodeResult(run.stdout)).toMatchObject({ is_error: false, result: plainAnswerText });
  });

  it('runs a Bash call on the host and answers with its output, through keepalives', async () => {
    const { run } = await runToolRoundTrip(claudeCode, { toolResultText: 'tool-42-ok' });

    // `tool-42-ok` exists only if Claude Code really ran the command: the call said `$((20+22))`.
    expect(answerOf(run.stdout)).toContain('The command printed: tool-42-ok');
  });

  it('runs two Bash calls of one step and returns both results', async () => {
    await runTwoCallsInOneStep(claudeCode);
  });

  it('continues a conversation on the same agent with a slim prompt (--continue)', async () => {
    const { first, second } = await runSlimSecondTurn(claudeCode);

    expect(answerOf(second.stdout)).toBe('Second answer.');
    expect(claudeCodeResult(second.stdout)?.session_id).toBe(claudeCodeResult(first.stdout)?.session_id);
  });

  it("grounds the agent in the client's real working directory", async () => {
    await runGrounding(claudeCode);
  });

  it('answers a call with a scratch-workspace path with a correction and never runs it', async () => {
    await runScratchPathCorrection(claudeCode);
  });

  // Which model runs: the bridge's config lists only composer-2 (Router.default); the fake backend's
  // catalog also serves gpt-5.4. Claude Code sends a picked name as it is, but resolves its own aliases.
  it.each([
    ["a model of Cursor's catalog runs as picked", 'gpt-5.4', /^gpt-5\.4$/, 'gpt-5.4'],
    ["Claude Code's own name follows Router.default", 'sonnet', /^claude-sonnet-/, 'composer-2'],
    ['a name near catalog models runs Router.default, not a guess', 'gpt-5', /^gpt-5$/, 'composer-2'],
  ])('--model: %s (%s)', async (_label, picked, sent, ran) => {
    const e2e = await startE2e(claudeCodeDriver, { turns: [{ steps: [{ text: 'Answered.' }] }] });
    const run = await e2e.turn('Which model answers?', { model: picked });

    expect(run.exitCode).toBe(0);
    expect(answerOf(run.stdout)).toBe('Answered.');
    const exchanges = e2e.bridge.mainExchanges();
    expect(exchanges.map((exchange) => (exchange.body as { model?: string }).model)).toEqual([
      expect.stringMatching(sent),
    ]);
    // The backend's run request names the model that ran …
    expect(e2e.bridge.mainRuns().map((backendRun) => backendRun.model)).toEqual([ran]);
    // … and so does the answer's message_start.
    const start = exchanges[0]?.frames.find((frame) => 'event' in frame && frame.event === 'message_start');
    expect(start !== undefined && 'data' in start ? JSON.parse(start.data).message.model : undefined).toBe(
      ran,
    );
  });

  it("counts usage on every response: the tool-use one the bridge's count, the final one Cursor's", async () => {
    const e2e = await startE2e(claudeCodeDriver, {
      turns: [
        {
          steps: [
            { text: 'Running it.', toolCalls: [{ shell: 'echo usage-check' }] },
            { text: (context) => `Printed: ${quoteToolResults(context)}` },
          ],
        },
      ],
    });
    const run = await e2e.turn('Run the usage check.');

    expect(run.exitCode).toBe(0);
    expect(e2e.bridge.mainExchanges()).toHaveLength(2);
    // Claude Code's own sum over the responses it received (what its /cost shows; its /context reads the
    // last one). The fake's Cursor reports 120 in / 25 out when the run ends; without a count on the
    // tool-use response (its run live, nothing reported) the sum would be those alone, plus any side
    // request's 40 / 5. The request's system prompt and tool definitions alone are thousands of tokens.
    const usage = (claudeCodeResult(run.stdout) as { usage?: Record<string, number> } | undefined)?.usage;
    expect(usage?.['input_tokens']).toBeGreaterThan(120 + 1_000);
    expect(usage?.['output_tokens']).toBeGreaterThan(25 + 5);
  });

  it('shows the thinking block in stream-json output', async () => {
    const e2e = await startE2e(claudeCodeDriver, {
      turns: [{ steps: [{ thinking: 'Weighing the e2e question.', text: 'Thought it through.' }] }],
    });
    const run = await e2e.turn('Think first.', { verbose: true });

    expect(run.exitCode).toBe(0);
    const blocks = parseJsonLines(run.stdout)
      .filter((line) => line['type'] === 'assistant')
      .flatMap((line) => (line['message'] as { content?: Array<Record<string, unknown>> }).content ?? []);
    expect(blocks).toContainEqual(
      expect.objectContaining({ type: 'thinking', thinking: 'Weighing the e2e question.' }),
    );
    expect(blocks).toContainEqual(expect.objectContaining({ type: 'text', text: 'Thought it through.' }));
  });

  it('recovers from a mid-stream upstream failure through its continuation request', async () => {
    const e2e = await startE2e(claudeCodeDriver, {
      turns: [
        {
          steps: [
            {
              text: 'Partial answer ',
              // `unavailable` on every attempt: the SDK retries for ~16 s, then reports the run failed;
              // the bridge sends a retryable overloaded error in-band. (A `permission_denied` would be
              // final, and Claude Code would stop instead of continuing.)
              fail: { message: 'E2E: upstream overloaded mid-stream.', code: 'unavailable' },
            },
          ],
        },
        { steps: [{ text: 'recovered after the failure.' }] },
      ],
    });
    const run = await e2e.turn('Answer despite a hiccup.');

    expect(run.exitCode).toBe(0);
    expect(answerOf(run.stdout)).toContain('recovered after the failure.');
    // Claude Code 2.1.332 answers a retryable in-stream error with a streaming continuation request: the
    // partial text as an assistant message plus a "cut off mid-stream" reminder.
    const exchanges = e2e.bridge.mainExchanges();
    expect(exchanges).toHaveLength(2);
    expect(JSON.stringify(exchanges[1]?.body)).toContain('Partial answer ');
    expect(e2e.bridge.mainRuns().at(-1)?.prompt).toContain('cut off mid-stream');
  });

  it('shows the answer once when the SDK retries a dropped run stream and the backend replays it', async () => {
    const e2e = await startE2e(claudeCodeDriver, {
      turns: [
        {
          steps: [
            {
              text: 'Answer streamed twice by the backend.',
              // `unavailable`: the SDK re-sends the run request itself; the client never sees the failure.
              fail: { message: 'E2E: stream dropped.', code: 'unavailable', attempts: 1 },
            },
          ],
        },
      ],
    });
    const run = await e2e.turn('Answer despite a dropped stream.');

    expect(run.exitCode).toBe(0);
    expect(answerOf(run.stdout)).toBe('Answer streamed twice by the backend.');
    const runs = e2e.bridge.mainRuns();
    expect(runs.map((backendRun) => backendRun.replay)).toEqual([false, true]);
    expect(runs[1]?.agentId).toBe(runs[0]?.agentId);
    expect(e2e.bridge.mainExchanges()).toHaveLength(1);
  });

  it('stops at once with a clear error when the Cursor key is rejected', async () => {
    const { e2e, run } = await runCursorAuthFailure(claudeCode, 'reject');

    expect(claudeCodeResult(run.stdout)?.is_error).toBe(true);
    expect(answerOf(run.stdout)).toContain(rejectedKeyMessage);
    // `x-should-retry: false` stops it at once (a bare 401 is retried for minutes).
    expect(e2e.bridge.turnExchanges()).toHaveLength(1);
    // The key reached Cursor's key exchange, which refused it.
    expect(e2e.bridge.backendRequests()).toContainEqual({
      method: 'POST',
      path: '/auth/exchange_user_api_key',
    });
  });

  it('stops at once with a clear error when the bridge has no Cursor key', async () => {
    const { e2e, run } = await runCursorAuthFailure(claudeCode, 'no-key');

    expect(claudeCodeResult(run.stdout)?.is_error).toBe(true);
    expect(answerOf(run.stdout)).toContain(missingKeyMessage);
    expect(e2e.bridge.turnExchanges()).toHaveLength(1);
    // Refused before anything reached Cursor.
    expect(e2e.bridge.backendRequests()).toEqual([]);
  });
});
