import type { TurnError } from '../../turn/turn-error.js';
import type { ErrorResponse } from '../../protocols/protocol-adapter.js';
import { createOpenaiChatErrorResponse } from '../../protocols/openai-chat/openai-chat-error.js';

/**
 * An error before the stream, for CCR: the Chat Completions envelope and status, which llms turns into
 * `provider_response_error` with the same status (so CCR v2's `fallback` applies). llms drops the response
 * headers on that path, so `x-should-retry: false` never reaches Claude Code, and Claude Code retries a bare
 * 401 for minutes; a rejected Cursor key is therefore answered 403, which Claude Code does not retry.
 */
export const createCcrErrorResponse = (error: TurnError): ErrorResponse => {
  const response = createOpenaiChatErrorResponse(error);
  return error.kind === 'authentication' && !error.retryable ? { ...response, status: 403 } : response;
};
