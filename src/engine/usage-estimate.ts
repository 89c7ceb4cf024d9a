/**
 * The usage a response reports when Cursor reported none while it streamed. Cursor reports a run's usage
 * once, when the run ends; a response that stops at a tool call ends while its run is still live, so it
 * would otherwise report zeros — and a client sizes its context from the last response's usage (Claude
 * Code's `/context` and its auto-compact threshold, Codex's and OpenCode's compaction). The estimate is
 * counted with the tokenizer of `count_tokens`:
 *
 * - input: the request as the client sent it (system, every message, tool definitions) — what the
 *   client's context holds, which is what the next model call reads. No cache split: Cursor has not said.
 * - output: what the response streamed (reasoning, text, tool calls), reasoning also as `reasoningTokens`.
 *
 * The run's final response reports Cursor's own usage for the whole run when Cursor gives one.
 */

import type { TurnMessage, TurnRequest } from '../turn/turn-request.js';
import { emptyUsage, type TurnUsage } from '../turn/turn-usage.js';
import type { PumpOutput } from './event-pump.js';

/** Token count of a request's system text, messages and tool definitions (the `count_tokens` count). */
export type CountTokens = (request: Pick<TurnRequest, 'system' | 'messages' | 'tools'>) => Promise<number>;

const countMessages = (count: CountTokens, messages: TurnMessage[]): Promise<number> =>
  count({ system: [], tools: [], messages });

/**
 * The estimator of one request's responses. The prompt is counted at once, in the background (it overlaps
 * the model's first tokens); the output when asked. A failed count is reported to `onError` and counts 0.
 */
export const createUsageEstimate = (
  count: CountTokens,
  request: Pick<TurnRequest, 'system' | 'messages' | 'tools'>,
  onError: (error: unknown) => void,
): ((output: PumpOutput & { reasoning: string }) => Promise<TurnUsage>) => {
  const prompt = count(request);
  // Observed now: a turn that never needs the estimate must not leave an unhandled rejection.
  prompt.catch(() => {});
  return async (output) => {
    try {
      const content: Extract<TurnMessage, { role: 'assistant' }>['content'] = [
        ...(output.text === '' ? [] : [{ type: 'text' as const, text: output.text }]),
        ...output.toolCalls.map((call) => ({ type: 'tool-call' as const, ...call })),
      ];
      const [inputTokens, answerTokens, reasoningTokens] = await Promise.all([
        prompt,
        content.length === 0 ? 0 : countMessages(count, [{ role: 'assistant', content }]),
        output.reasoning === ''
          ? 0
          : countMessages(count, [
              { role: 'assistant', content: [{ type: 'text', text: output.reasoning }] },
            ]),
      ]);
      return {
        ...emptyUsage(),
        inputTokens,
        outputTokens: answerTokens + reasoningTokens,
        ...(reasoningTokens === 0 ? {} : { reasoningTokens }),
      };
    } catch (error) {
      onError(error);
      return emptyUsage();
    }
  };
};
