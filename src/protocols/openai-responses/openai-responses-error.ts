import type { ErrorResponse } from '../protocol-adapter.js';
import type { SseFrame } from '../sse-frame.js';
import type { TurnError, TurnErrorKind } from '../../turn/turn-error.js';
import { createErrorResponse } from '../shared/create-error-response.js';
import { createEventFrame } from '../shared/create-event-frame.js';
import { createOpenaiErrorBody } from '../shared/create-openai-error-body.js';
import { createOpenaiRateLimitHeaders } from '../shared/create-openai-rate-limit-headers.js';

type ErrorShape = {
  status: number;
  type: string;
  /** `error.code` of an HTTP error answer. */
  code: string | null;
  /**
   * `error.code` inside a stream. Codex reads it from `response.failed`: `invalid_prompt` stops at once,
   * `context_length_exceeded` triggers its context handling, anything else is retried.
   */
  streamCode: string;
};

/**
 * Status, `error.type` and codes per kind. Statuses are the ones the `openai` SDK's `APIError.generate`
 * maps to its error classes (503/504 → InternalServerError).
 */
const errorShapes: Record<TurnErrorKind, ErrorShape> = {
  'invalid-request': { status: 400, type: 'invalid_request_error', code: null, streamCode: 'invalid_prompt' },
  'context-length': {
    status: 400,
    type: 'invalid_request_error',
    code: 'context_length_exceeded',
    streamCode: 'context_length_exceeded',
  },
  authentication: {
    status: 401,
    type: 'authentication_error',
    code: 'invalid_api_key',
    streamCode: 'invalid_api_key',
  },
  permission: {
    status: 403,
    type: 'permission_error',
    code: 'permission_denied',
    streamCode: 'permission_denied',
  },
  'not-found': { status: 404, type: 'not_found_error', code: 'not_found', streamCode: 'not_found' },
  'request-too-large': {
    status: 413,
    type: 'request_too_large',
    code: 'request_too_large',
    streamCode: 'context_length_exceeded',
  },
  'rate-limit': {
    status: 429,
    type: 'rate_limit_error',
    code: 'rate_limit_exceeded',
    streamCode: 'rate_limit_exceeded',
  },
  // Codex stops on `insufficient_quota` (its quota-exceeded error) instead of retrying.
  'usage-limit': {
    status: 429,
    type: 'insufficient_quota',
    code: 'insufficient_quota',
    streamCode: 'insufficient_quota',
  },
  api: { status: 500, type: 'api_error', code: 'server_error', streamCode: 'server_error' },
  overloaded: {
    status: 503,
    type: 'overloaded_error',
    code: 'server_is_overloaded',
    streamCode: 'server_is_overloaded',
  },
  unavailable: {
    status: 503,
    type: 'server_error',
    code: 'service_unavailable',
    streamCode: 'service_unavailable',
  },
  timeout: { status: 504, type: 'timeout_error', code: 'timeout', streamCode: 'timeout' },
};

/** The HTTP status, `error.type` and `error.code` (HTTP and in-stream) an error kind is answered with. */
export const mapOpenaiResponsesError = (kind: TurnErrorKind): ErrorShape => errorShapes[kind];

/**
 * An error before the stream started: the OpenAI envelope `{error:{message,type,param,code}}` with the
 * status the `openai` SDK turns into the matching class (`BadRequestError`, `AuthenticationError`, …).
 * Non-retryable errors carry `x-should-retry: false`, which the official SDKs honour.
 */
export const createOpenaiResponsesErrorResponse = (error: TurnError): ErrorResponse => {
  const shape = errorShapes[error.kind];
  return createErrorResponse(
    error,
    shape.status,
    createOpenaiErrorBody(error, shape),
    createOpenaiRateLimitHeaders(error),
  );
};

/**
 * The in-band error frames once the stream has started: an `error` event (the `openai` SDK throws it as
 * an `APIError` carrying this message, type and code) followed by the terminal `response.failed` (what
 * Codex and @ai-sdk/openai read). `response` is the current response snapshot; it is returned with
 * `status: "failed"` and its `error` set. The frames use `sequenceNumber` and `sequenceNumber + 1`.
 */
export const createOpenaiResponsesErrorFrames = (
  error: TurnError,
  sequenceNumber: number,
  response: Record<string, unknown>,
): SseFrame[] => {
  const shape = errorShapes[error.kind];
  const param = error.param ?? null;
  const errorEvent = {
    type: 'error',
    sequence_number: sequenceNumber,
    code: shape.streamCode,
    message: error.message,
    param,
    // First-party streams nest the details as well; the SDK prefers the nested object when present.
    error: { type: shape.type, code: shape.streamCode, message: error.message, param },
  };
  const failedEvent = {
    type: 'response.failed',
    sequence_number: sequenceNumber + 1,
    response: createOpenaiResponsesFailedResponse(error, response),
  };
  return [createEventFrame(errorEvent), createEventFrame(failedEvent)];
};

/** `response` (a snapshot) as a failed response: `status: "failed"` and `error: {code, message}`. */
export const createOpenaiResponsesFailedResponse = (
  error: TurnError,
  response: Record<string, unknown>,
): Record<string, unknown> => ({
  ...response,
  status: 'failed',
  error: { code: errorShapes[error.kind].streamCode, message: error.message },
});
