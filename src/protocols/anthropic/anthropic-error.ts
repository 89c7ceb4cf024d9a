import type { ErrorResponse } from '../protocol-adapter.js';
import type { SseFrame } from '../sse-frame.js';
import type { TurnError, TurnErrorKind } from '../../turn/turn-error.js';
import { createErrorResponse } from '../shared/create-error-response.js';
import { createEventFrame } from '../shared/create-event-frame.js';

/** The Anthropic `error.type` values the bridge produces. */
export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error'
  | 'timeout_error';

/** The Anthropic error envelope, as an HTTP body and as the data of an in-stream `error` event. */
export type AnthropicErrorBody = { type: 'error'; error: { type: AnthropicErrorType; message: string } };

/**
 * TurnErrorKind → HTTP status and `error.type`. The statuses are the ones `@anthropic-ai/sdk`'s
 * `APIError.generate` maps to its classes (400 BadRequestError … 504 GatewayTimeoutError, 529 OverloadedError).
 * @see https://docs.anthropic.com/en/api/errors
 */
export const mapAnthropicError = (kind: TurnErrorKind): { status: number; type: AnthropicErrorType } => {
  switch (kind) {
    case 'invalid-request':
      return { status: 400, type: 'invalid_request_error' };
    case 'authentication':
      return { status: 401, type: 'authentication_error' };
    case 'permission':
      return { status: 403, type: 'permission_error' };
    case 'not-found':
      return { status: 404, type: 'not_found_error' };
    case 'request-too-large':
      return { status: 413, type: 'request_too_large' };
    case 'rate-limit':
      return { status: 429, type: 'rate_limit_error' };
    case 'api':
      return { status: 500, type: 'api_error' };
    case 'overloaded':
      return { status: 529, type: 'overloaded_error' };
    // Not `overloaded_error`: Claude Code gives 529 / overloaded_error its own short retry budget.
    case 'unavailable':
      return { status: 503, type: 'api_error' };
    case 'timeout':
      return { status: 504, type: 'timeout_error' };
    default: {
      const _exhaustive: never = kind;
      return _exhaustive;
    }
  }
};

export const createAnthropicErrorBody = (error: TurnError): AnthropicErrorBody => ({
  type: 'error',
  error: { type: mapAnthropicError(error.kind).type, message: error.message },
});

/** An error answer before any byte was sent (non-retryable ones carry `x-should-retry: false`). */
export const createAnthropicErrorResponse = (error: TurnError): ErrorResponse =>
  createErrorResponse(error, mapAnthropicError(error.kind).status, createAnthropicErrorBody(error));

/**
 * The in-band error once the stream has started: `event: error`. `@anthropic-ai/sdk`'s `Stream` throws
 * an `APIError` (status undefined, `type` = `error.type`) as soon as it reads this event.
 */
export const createAnthropicErrorFrame = (error: TurnError): SseFrame =>
  createEventFrame(createAnthropicErrorBody(error));
