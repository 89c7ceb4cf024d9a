/**
 * Acceptance for the context window Claude Code works from: the real, interactive Claude Code in a
 * terminal, started as a user starts it (`cursor-bridge claude`, which finds the running serve), on a
 * Cursor model whose catalog states a small window (100k, the smallest auto-compact window Claude Code
 * takes). `/context` must name that window — not the 1M Claude Code assumes for a model name it does not
 * know — and a conversation driven past it must be compacted by Claude Code (its summarisation request
 * reaches the model), then go on, without any request failing at the limit.
 *
 * The fake model's usage is what a Cursor run reports: the input it received (prompt and the agent's
 * history) and the output it wrote, about four characters to a token — so the conversation really is as
 * long as the numbers say, and Claude Code's own estimate of its messages agrees with them. The fake holds
 * the model to its window as Cursor does: a run that received more than the window is refused as
 * "conversation too long". The turns together write more than the window, so a launch that states no window
 * (or too large a one) fails here twice: no compaction in time, and a refusal at the limit.
 */

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, onTestFailed, onTestFinished } from 'vitest';
import type { FakeModel } from '../fakes/cursor-backend/default-models.js';
import type { RunContext, Scenario } from '../fakes/cursor-backend/run-context.js';
import { repoRoot } from '../helpers/repo-root.js';
import { claudeCodeDriver } from '../helpers/e2e/claude-code-driver.js';
import type { RecordedExchange } from '../helpers/e2e/e2e-bridge.js';
import { installTimeoutMs, prepareE2e } from '../helpers/e2e/e2e-harness.js';
import { ensureClient } from '../helpers/e2e/install-clients.js';
import { openClientEndpoint } from '../helpers/e2e/network-isolation.js';
import { startPtySession, type PtySession } from '../helpers/e2e/pty-session.js';
import { clientPath, createClientSandbox } from '../helpers/e2e/run-client.js';
import { startServeBridge } from '../helpers/e2e/serve-bridge.js';
import { until } from '../helpers/until.js';

/** A Cursor model of the test's catalog whose smallest context is 100k tokens (its runs never take 200k). */
const smallWindowModel: FakeModel = {
  id: 'e2e-small-window',
  displayName: 'Small window (e2e)',
  parameters: [
    {
      id: 'context',
      displayName: 'Context',
      values: [
        { value: '100k', displayName: '100K' },
        { value: '200k', displayName: '200K' },
      ],
    },
  ],
  variants: [
    { params: [{ id: 'context', value: '100k' }], displayName: 'Small window', isDefault: true },
    { params: [{ id: 'context', value: '200k' }], displayName: 'Small window (200K context)' },
  ],
};

/**
 * The window Cursor holds the model to, in tokens: a run that received more (its prompt and history, four
 * characters to a token, as the fake's usage counts them) is refused as Cursor refuses a conversation
 * longer than the model's window.
 */
const windowTokens = 100_000;

/** Claude Code 2.1.332's summarisation instruction (its compaction request's last user message). */
const compactionPrompt = 'Your task is to create a detailed summary of the conversation so far';
const summary = 'E2E-SUMMARY: the user read a long build log; every step passed.';

/**
 * The log the model prints: about 66k tokens as Claude Code estimates its messages (≈ 10.5 a line), which
 * with the conversation before it passes Claude Code's auto-compact threshold for a 100k window (100k −
 * 20k output reserve − 13k buffer = 67k) and stays under its blocking limit (100k − 20k − 3k = 77k).
 */
const buildLog = Array.from(
  { length: 6_300 },
  (_, index) =>
    `step ${String(index).padStart(4, '0')}: compiled module-${index % 97} in ${index % 13} ms, ok`,
).join('\n');

/** Characters of everything a run received: its prompt and, on a live agent, the turns its history holds. */
const receivedChars = async (run: RunContext): Promise<number> => {
  const history = await run.history();
  return run.prompt.length + JSON.stringify(history).length;
};

type Played = {
  kind: 'compaction' | 'turn' | 'side' | 'refused';
  model: string;
  prompt: string;
  /** The input tokens the run received, and the output tokens it wrote (0 when refused). */
  input: number;
  output: number;
};

const play =
  (played: Played[]): Scenario =>
  async (run) => {
    const received = await receivedChars(run);
    const inputTokens = Math.ceil(received / 4);
    const compaction = run.prompt.includes(compactionPrompt);
    const main = run.toolNames.includes('Bash');
    const model = run.request.requestedModel?.modelId ?? '';
    if (inputTokens > windowTokens) {
      played.push({ kind: 'refused', model, prompt: run.prompt, input: inputTokens, output: 0 });
      run.failConversationTooLong();
      return;
    }
    const text = compaction
      ? `<analysis>Short.</analysis>\n<summary>${summary}</summary>`
      : !main
        ? 'E2E side answer'
        : run.prompt.includes('Print the full build log')
          ? buildLog
          : run.prompt.includes('And what failed?')
            ? 'Nothing failed: answered after compaction.'
            : 'A short answer.';
    const outputTokens = Math.ceil(text.length / 4);
    played.push({
      kind: compaction ? 'compaction' : main ? 'turn' : 'side',
      model,
      prompt: run.prompt,
      input: inputTokens,
      output: outputTokens,
    });
    run.text(text);
    run.turnEnded({ inputTokens, outputTokens });
  };

/** The messages of a recorded Claude Code request, as JSON text. */
const requestText = (exchange: RecordedExchange): string =>
  JSON.stringify((exchange.body as { messages?: unknown } | undefined)?.messages ?? []);

/** The in-stream error event of an exchange, if it sent one. */
const streamedError = (exchange: RecordedExchange): string | undefined => {
  const frame = exchange.frames.find((candidate) => 'event' in candidate && candidate.event === 'error');
  return frame && 'data' in frame ? frame.data : undefined;
};

describe('interactive Claude Code through `cursor-bridge claude`: the window of the Cursor model that runs', () => {
  beforeAll(() => prepareE2e('claude-code'), installTimeoutMs);

  it(
    '`/context` names the catalog’s window, and a conversation past it is compacted by Claude Code, not refused',
    { timeout: 6 * 60_000 },
    async () => {
      const started = Date.now();
      const claude = await ensureClient('claude-code');
      const played: Played[] = [];
      const bridge = await startServeBridge({
        scenario: { turns: [] },
        shell: claudeCodeDriver.shell,
        backendScenario: play(played),
        models: [smallWindowModel],
      });
      const sandbox = await createClientSandbox('claude-code-compaction');
      const endpoint = await openClientEndpoint(bridge.socketPath);
      const terminal: { session?: PtySession } = {};
      onTestFinished(async () => {
        try {
          await terminal.session?.close();
          await endpoint.close();
          await bridge.close();
        } finally {
          await sandbox.remove();
        }
      });
      onTestFailed(() => {
        console.error(
          [
            '--- the terminal (escape sequences removed) ---',
            terminal.session?.screen().slice(-8_000) ?? '(not started)',
            `--- the model's runs: ${played.map((run) => `${run.kind}@${run.model} (${run.input}+${run.output})`).join(', ')}`,
            bridge.describe(),
          ].join('\n'),
        );
      });

      // The user's cursor-bridge config: its default model is the small-window one. Claude Code starts on a
      // HOME it has used before (onboarding done, the project trusted), as a user's would be.
      const port = Number(new URL(endpoint.baseUrl).port);
      await mkdir(join(sandbox.home, '.claude-code-router'), { recursive: true });
      await writeFile(
        join(sandbox.home, '.claude-code-router', 'config.json'),
        JSON.stringify({ PORT: port, Router: { default: `cursor,${smallWindowModel.id}` } }),
      );
      await writeFile(
        join(sandbox.home, '.claude.json'),
        JSON.stringify({
          hasCompletedOnboarding: true,
          theme: 'dark',
          projects: {
            [sandbox.project]: { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true },
          },
        }),
      );
      const session = startPtySession({
        command: process.execPath,
        args: [join(repoRoot, 'bin', 'cursor-bridge.js'), '--port', String(port), 'claude'],
        sandbox,
        endpoint,
        env: {
          PATH: [join(claude.prefix, 'node_modules', '.bin'), clientPath].join(':'),
          HOME: sandbox.home,
          TERM: 'xterm-256color',
          LANG: 'C.UTF-8',
          DISABLE_TELEMETRY: '1',
          DISABLE_AUTOUPDATER: '1',
        },
        timeoutMs: 5 * 60_000,
      });
      terminal.session = session;
      const ready = /shift\+tab to cycle|\? for shortcuts/;
      await session.waitFor(ready, { timeoutMs: 60_000 });
      await session.waitForQuiet(1_500);

      // 1. `/context`: the window of the catalog's variant that runs, no "isn't recognized" assumption.
      let from = session.screen().length;
      session.type('/context');
      await new Promise((resolve) => setTimeout(resolve, 300));
      session.enter();
      await session.waitFor(/Auto-compact window:\s*[\d.]+[km]? tokens/, { from });
      const contextScreen = session.screen().slice(from);
      expect(contextScreen).toMatch(/\/100k tokens \(\d+%\)/);
      expect(contextScreen).toMatch(/Auto-compact window:\s*100k tokens/);
      expect(session.screen()).not.toMatch(/isn't recognized|context assumed to be/);

      const say = async (prompt: string, answer: RegExp): Promise<void> => {
        from = session.screen().length;
        session.type(prompt);
        await new Promise((resolve) => setTimeout(resolve, 300));
        session.enter();
        // Or Claude Code's own words for a refusal at the limit (then the checks below say what went wrong).
        const refusal = /Prompt is too long|Context limit reached/;
        // Claude Code redraws only the cells that changed, so an answer drawn where the same text stood
        // before (the log printed a second time) never appears whole on the screen: the bridge's finished
        // answer to the prompt counts as well.
        const shown = session.waitFor(new RegExp(`${answer.source}|${refusal.source}`), {
          from,
          timeoutMs: 120_000,
        });
        // (Past the screen's deadline, so a turn that never finishes fails with the screen's tail.)
        const answered = until(
          () =>
            bridge.mainExchanges().some((exchange) => {
              const text = requestText(exchange);
              return (
                exchange.status !== undefined && text.includes(prompt) && !text.includes(compactionPrompt)
              );
            }),
          `the bridge's answer to ${JSON.stringify(prompt)}`,
          130_000,
        );
        // (The race handles the other one's later rejection.)
        await Promise.race([shown, answered]);
        await session.waitForQuiet(1_500);
      };
      // 2. A short turn, then one that fills the window past Claude Code's auto-compact threshold.
      await say('First, a short question.', /A short answer\./);
      await say('Print the full build log.', /step 6299: compiled/);
      expect(played.filter((run) => run.kind === 'compaction')).toEqual([]);
      // 3. The next prompt: Claude Code compacts the conversation, then sends it on the summary.
      await say('And what failed?', /Nothing failed: answered after compaction\./);

      const compactions = played.filter((run) => run.kind === 'compaction');
      expect(compactions.length).toBeGreaterThanOrEqual(1);
      const turns = played.filter((run) => run.kind === 'turn');
      expect(turns.map((run) => run.model)).toEqual(turns.map(() => smallWindowModel.id));
      // The follow-up ran after the compaction, on the summary: Claude Code sent the summary where the first
      // turns were (the latest messages it keeps verbatim).
      const followUp = bridge
        .mainExchanges()
        .filter((exchange) => requestText(exchange).includes('And what failed?'))
        .at(-1);
      const sent = followUp === undefined ? '' : requestText(followUp);
      expect({
        continuesFromSummary: sent.includes('continued from a previous conversation'),
        carriesSummary: sent.includes(summary),
        carriesFirstTurn: sent.includes('First, a short question.'),
      }).toEqual({ continuesFromSummary: true, carriesSummary: true, carriesFirstTurn: false });
      expect(played.findIndex((run) => run.kind === 'compaction')).toBeLessThan(
        played.findLastIndex((run) => run.kind === 'turn'),
      );
      // 4. On past the window: the log once more, and a question after it. Claude Code compacts again before
      // its request would reach Cursor's limit, so the conversation goes on past the window's size.
      await say('Print the full build log once more.', /step 6299: compiled/);
      await say('Did anything change since?', /A short answer\./);
      // (Claude Code keeps its latest messages verbatim through a compaction, so the log it just printed can
      // take one more compaction to leave the conversation.)
      expect(played.filter((run) => run.kind === 'compaction').length).toBeGreaterThanOrEqual(2);
      const written = played.filter((run) => run.kind === 'turn').reduce((sum, run) => sum + run.output, 0);
      expect(written).toBeGreaterThan(windowTokens);
      // Nothing was refused at the limit: no run received more than the window, and every turn answered
      // 200, with no error event.
      expect(played.filter((run) => run.kind === 'refused')).toEqual([]);
      for (const exchange of bridge.turnExchanges()) {
        expect(exchange.status).toBe(200);
        expect(streamedError(exchange)).toBeUndefined();
      }
      expect(session.screen()).not.toMatch(
        /Prompt is too long|Context limit reached|Autocompact is thrashing/,
      );
      console.log(
        `claude-code compaction e2e: ${Date.now() - started} ms; runs (input+output tokens): ${played.map((run) => `${run.kind} ${run.input}+${run.output}`).join(', ')}`,
      );
    },
  );
});
