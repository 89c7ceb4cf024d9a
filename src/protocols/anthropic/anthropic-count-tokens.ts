import type { ParseResult } from '../protocol-adapter.js';
import { convertAnthropicRequestToTurn } from './anthropic-to-turn.js';

/**
 * The answer of `POST /v1/messages/count_tokens`.
 * @see https://docs.anthropic.com/en/api/messages-count-tokens
 */
export type AnthropicCountTokensBody = { input_tokens: number };

/**
 * A count_tokens body is a Messages request without `max_tokens` (already optional here) or `stream`: the
 * same converter validates it, so a malformed one is refused with the same `invalid_request_error` naming
 * the field, and the count covers exactly what a turn would send (the billing header line is not prompt
 * text; server tools are dropped).
 */
export const parseAnthropicCountTokensRequest = (
  body: unknown,
  headers: Record<string, string>,
): ParseResult => convertAnthropicRequestToTurn(body, headers);

export const createAnthropicCountTokensBody = (inputTokens: number): AnthropicCountTokensBody => ({
  input_tokens: inputTokens,
});
