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

type ErrorShape = { status: number; type: AnthropicErrorType };

/**
 * Status and `error.type` per kind. The statuses are the ones `@anthropic-ai/sdk`'s `APIError.generate`
 * maps to its classes (400 BadRequestError … 504 GatewayTimeoutError, 529 OverloadedError).
 * @see https://docs.anthropic.com/en/api/errors
 */
const errorShapes: Record<TurnErrorKind, ErrorShape> = {
  'invalid-request': { status: 400, type: 'invalid_request_error' },
  'context-length': { status: 400, type: 'invalid_request_error' },
  authentication: { status: 401, type: 'authentication_error' },
  permission: { status: 403, type: 'permission_error' },
  'not-found': { status: 404, type: 'not_found_error' },
  'request-too-large': { status: 413, type: 'request_too_large' },
  'rate-limit': { status: 429, type: 'rate_limit_error' },
  // Anthropic has no quota type: its 429 `rate_limit_error`, made final by `x-should-retry: false`.
  'usage-limit': { status: 429, type: 'rate_limit_error' },
  api: { status: 500, type: 'api_error' },
  overloaded: { status: 529, type: 'overloaded_error' },
  // Not `overloaded_error`: Claude Code gives 529 / overloaded_error its own short retry budget.
  unavailable: { status: 503, type: 'api_error' },
  timeout: { status: 504, type: 'timeout_error' },
};

/** The HTTP status and `error.type` an error kind is answered with. */
export const mapAnthropicError = (kind: TurnErrorKind): ErrorShape => errorShapes[kind];

/**
 * What Anthropic's own overflow message starts with (`prompt is too long: N tokens > M maximum`). Claude
 * Code matches this phrase, case-insensitively, anywhere in the error message, and then compacts the
 * conversation (or shows "Prompt is too long") instead of retrying.
 */
const promptTooLong = 'prompt is too long';

const errorMessage = (error: TurnError): string =>
  error.kind === 'context-length' && !error.message.toLowerCase().startsWith(promptTooLong)
    ? `${promptTooLong}: ${error.message}`
    : error.message;

/** The error envelope body for a TurnError. */
export const createAnthropicErrorBody = (error: TurnError): AnthropicErrorBody => ({
  type: 'error',
  error: { type: mapAnthropicError(error.kind).type, message: errorMessage(error) },
});

/**
 * Anthropic's rate-limit headers for a rate limit whose upstream said when it resets: no request left,
 * and the reset as an RFC 3339 time. None otherwise (the limit itself is never known).
 * @see https://docs.anthropic.com/en/api/rate-limits#response-headers
 */
export const createAnthropicRateLimitHeaders = (
  error: TurnError,
  now: number = Date.now(),
): Record<string, string> =>
  error.kind !== 'rate-limit' || error.resetSeconds === undefined
    ? {}
    : {
        'anthropic-ratelimit-requests-remaining': '0',
        'anthropic-ratelimit-requests-reset': new Date(now + error.resetSeconds * 1000)
          .toISOString()
          .replace(/\.\d{3}Z$/, 'Z'),
      };

/** An error answer before any byte was sent (non-retryable ones carry `x-should-retry: false`). */
export const createAnthropicErrorResponse = (error: TurnError): ErrorResponse =>
  createErrorResponse(
    error,
    mapAnthropicError(error.kind).status,
    createAnthropicErrorBody(error),
    createAnthropicRateLimitHeaders(error),
  );

/**
 * The in-band error frames once the stream has started: `event: error` (`@anthropic-ai/sdk`'s `Stream`
 * throws an `APIError`, status undefined and `type` = `error.type`, as soon as it reads it), then
 * `message_stop` so every stream ends with its terminal event for parsers that read on.
 */
export const createAnthropicErrorFrames = (error: TurnError): SseFrame[] => [
  createEventFrame(createAnthropicErrorBody(error)),
  createEventFrame({ type: 'message_stop' }),
];
