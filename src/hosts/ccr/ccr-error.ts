import type { TurnError } from '../../turn/turn-error.js';
import type { ErrorResponse } from '../../protocols/protocol-adapter.js';
import { createOpenaiChatErrorResponse } from '../../protocols/openai-chat/openai-chat-error.js';

/**
 * An error before the stream, for CCR: the Chat Completions envelope and status, which llms turns into
 * `provider_response_error` with the same status (so CCR v2's `fallback` applies). llms drops the response
 * headers on that path, so `x-should-retry: false` never reaches Claude Code, which retries a bare 401 for
 * minutes and a 429 ten times. The errors no retry can help are therefore answered 403, which Claude Code
 * does not retry: a rejected Cursor key, and a spent Cursor usage limit (its body still says
 * `insufficient_quota`).
 */
export const createCcrErrorResponse = (error: TurnError): ErrorResponse => {
  const response = createOpenaiChatErrorResponse(error);
  const final = (error.kind === 'authentication' || error.kind === 'usage-limit') && !error.retryable;
  return final ? { ...response, status: 403 } : response;
};
