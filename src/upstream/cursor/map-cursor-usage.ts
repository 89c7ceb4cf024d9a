import type { TurnUsage } from '../../turn/turn-usage.js';

export type CursorTurnUsage = {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens?: number | undefined;
};

/**
 * The SDK's per-turn usage → Anthropic-style usage. Cursor's `inputTokens` is read as the whole prompt,
 * with cache reads a part of it; cache reads are therefore bounded by the input (never above it) and
 * taken out of `inputTokens`, so a client adding input + cache-read gets the real context size.
 */
export const mapCursorUsage = (usage: CursorTurnUsage): TurnUsage => {
  const input = Math.max(0, usage.inputTokens);
  const cacheRead = Math.min(Math.max(0, usage.cacheReadTokens), input);
  return {
    inputTokens: input - cacheRead,
    outputTokens: Math.max(0, usage.outputTokens),
    cacheReadTokens: cacheRead,
    cacheWriteTokens: Math.max(0, usage.cacheWriteTokens),
    ...(usage.reasoningTokens === undefined ? {} : { reasoningTokens: usage.reasoningTokens }),
  };
};
