/**
 * Acceptance for context overflow: the real Claude Code against `cursor-bridge serve`, whose fake Cursor
 * backend refuses a conversation as longer than the model's window the way Cursor does
 * (`failConversationTooLong`). Claude Code must react as it does to Anthropic's own
 * `400 invalid_request_error "prompt is too long: …"`: compact the conversation and go on, or, when there
 * is nothing to compact, stop with its "Prompt is too long" message — never retry the same request.
 */

import { beforeAll, describe, expect, it } from 'vitest';
import type { RecordedExchange } from '../helpers/e2e/e2e-bridge.js';
import { claudeCodeDriver, claudeCodeResult } from '../helpers/e2e/claude-code-driver.js';
import { installTimeoutMs, prepareE2e, scenarioTimeoutMs, startE2e } from '../helpers/e2e/e2e-harness.js';

type Message = { role: string; content: string | Array<{ type: string; text?: string }> };

const messagesOf = (exchange: RecordedExchange | undefined): Message[] =>
  (exchange?.body as { messages?: Message[] } | undefined)?.messages ?? [];

const textOf = (message: Message | undefined): string =>
  message === undefined
    ? ''
    : typeof message.content === 'string'
      ? message.content
      : message.content.map((part) => part.text ?? '').join('');

/** The data of the exchange's in-stream `error` event, if it sent one. */
const streamedError = (exchange: RecordedExchange | undefined): unknown => {
  const frame = exchange?.frames.find((candidate) => 'event' in candidate && candidate.event === 'error');
  return frame && 'data' in frame ? JSON.parse(frame.data) : undefined;
};

/**
 * Each exchange's HTTP status, and `streamed` for one that failed in-stream: Claude Code hangs up as soon
 * as it reads the `error` event, so whether the bridge finished that response first (status 200) is a race.
 */
const statuses = (exchanges: readonly RecordedExchange[]): Array<number | 'streamed'> =>
  exchanges.map((exchange) => (streamedError(exchange) === undefined ? (exchange.status ?? 0) : 'streamed'));

const promptTooLong = expect.objectContaining({
  type: 'error',
  error: {
    type: 'invalid_request_error',
    message: expect.stringMatching(/^prompt is too long: /) as unknown,
  },
});

/** Claude Code 2.1.332's compaction prompt (the last user message of its summarisation request). */
const compactionPrompt = 'Your task is to create a detailed summary of the conversation so far';

describe(
  'Claude Code: a conversation over the Cursor model context window',
  { timeout: scenarioTimeoutMs },
  () => {
    beforeAll(() => prepareE2e('claude-code'), installTimeoutMs);

    it('compacts the conversation and answers, as it does for Anthropic', async () => {
      const summary = 'E2E-SUMMARY: the user asked a long question and got a first answer.';
      const e2e = await startE2e(claudeCodeDriver, {
        turns: [
          { steps: [{ text: 'First answer.' }] },
          // The conversation has outgrown the window: Cursor refuses the second turn.
          { steps: [{ conversationTooLong: true }] },
          { steps: [{ text: `<analysis>Short.</analysis>\n<summary>${summary}</summary>` }] },
          { steps: [{ text: 'Answer after compaction.' }] },
        ],
      });
      await e2e.turn('Answer this long question.');
      const run = await e2e.turn('And a follow-up.', { resume: true });

      expect(run.exitCode).toBe(0);
      expect(claudeCodeResult(run.stdout)).toMatchObject({
        is_error: false,
        result: 'Answer after compaction.',
      });
      const exchanges = e2e.bridge.mainExchanges();
      // 1 first turn; 2 the follow-up, refused in-stream; 3 Claude Code's non-streaming retry of it, 400;
      // 4 its summarisation request; 5 the follow-up again, on the compacted conversation.
      expect(exchanges).toHaveLength(5);
      expect(statuses(exchanges)).toEqual([200, 'streamed', 400, 200, 200]);
      expect(streamedError(exchanges[1])).toEqual(promptTooLong);
      expect(exchanges[2]?.json).toEqual(promptTooLong);
      expect(textOf(messagesOf(exchanges[3]).at(-1))).toContain(compactionPrompt);
      const continued = messagesOf(exchanges[4]);
      expect(textOf(continued[0])).toContain('This session is being continued from a previous conversation');
      expect(textOf(continued[0])).toContain(summary);
      expect(continued.map(textOf).filter((text) => text.includes('And a follow-up.'))).toHaveLength(1);
      // One Cursor run per turn (first, overflow, summary, continued): neither the SDK nor the bridge
      // retried the overflowing one (the non-streaming retry got the failed turn's error replayed).
      expect(e2e.bridge.mainRuns().map((backendRun) => backendRun.replay)).toEqual([
        false,
        false,
        false,
        false,
      ]);
    });

    it('stops with "Prompt is too long" when a single exchange does not fit', async () => {
      const e2e = await startE2e(claudeCodeDriver, { turns: [{ steps: [{ conversationTooLong: true }] }] });
      const run = await e2e.turn('Answer this long question.');

      expect(claudeCodeResult(run.stdout)).toMatchObject({
        is_error: true,
        terminal_reason: 'prompt_too_long',
        result: expect.stringMatching(
          /^Prompt is too long · this conversation is a single exchange/,
        ) as unknown,
      });
      // The in-stream error, then Claude Code's one non-streaming retry; no loop.
      const exchanges = e2e.bridge.mainExchanges();
      expect(exchanges).toHaveLength(2);
      expect(statuses(exchanges)).toEqual(['streamed', 400]);
      expect(streamedError(exchanges[0])).toEqual(promptTooLong);
      expect(e2e.bridge.mainRuns()).toHaveLength(1);
    });
  },
);
