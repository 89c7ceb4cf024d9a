/**
 * Token usage, Anthropic-style: `inputTokens` excludes cache reads and writes. Chat/Responses
 * `prompt_tokens` / `input_tokens` = input + cacheRead + cacheWrite.
 */
export type TurnUsage = {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** A subset of outputTokens, when known. */
  reasoningTokens?: number;
};

export const emptyUsage = (): TurnUsage => ({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
});

/** Total prompt-side tokens, as OpenAI protocols count them. */
export const promptTokens = (usage: TurnUsage): number =>
  usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;

/** Field-wise sum; `reasoningTokens` stays absent while neither side has it. */
export const addUsage = (total: TurnUsage, usage: TurnUsage): TurnUsage => ({
  inputTokens: total.inputTokens + usage.inputTokens,
  outputTokens: total.outputTokens + usage.outputTokens,
  cacheReadTokens: total.cacheReadTokens + usage.cacheReadTokens,
  cacheWriteTokens: total.cacheWriteTokens + usage.cacheWriteTokens,
  ...(total.reasoningTokens === undefined && usage.reasoningTokens === undefined
    ? {}
    : { reasoningTokens: (total.reasoningTokens ?? 0) + (usage.reasoningTokens ?? 0) }),
});
