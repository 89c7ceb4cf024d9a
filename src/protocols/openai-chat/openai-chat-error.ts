import type { TurnError, TurnErrorKind } from '../../turn/turn-error.js';
import type { ErrorResponse } from '../protocol-adapter.js';
import type { SseFrame } from '../sse-frame.js';
import { createErrorResponse } from '../shared/create-error-response.js';
import { createDataFrame } from '../shared/create-event-frame.js';
import { createOpenaiErrorBody, type OpenaiErrorBody } from '../shared/create-openai-error-body.js';
import { createOpenaiRateLimitHeaders } from '../shared/create-openai-rate-limit-headers.js';

/** The Chat Completions error envelope (`{ error: { message, type, param, code } }`). */
export type OpenaiChatErrorBody = OpenaiErrorBody;

type ErrorShape = { status: number; type: string; code: string | null };

/**
 * Status, `error.type` and `error.code` per kind, as the OpenAI API answers them (an unknown key is
 * `401 invalid_request_error / invalid_api_key`). The `openai` SDK picks its error class from the status
 * alone (`APIError.generate`): 400 BadRequestError, 401 AuthenticationError, 403 PermissionDeniedError,
 * 404 NotFoundError, 429 RateLimitError, ≥500 InternalServerError; 413 is a plain APIError.
 */
const errorShapes: Record<TurnErrorKind, ErrorShape> = {
  'invalid-request': { status: 400, type: 'invalid_request_error', code: null },
  'context-length': { status: 400, type: 'invalid_request_error', code: 'context_length_exceeded' },
  authentication: { status: 401, type: 'invalid_request_error', code: 'invalid_api_key' },
  permission: { status: 403, type: 'invalid_request_error', code: 'permission_denied' },
  'not-found': { status: 404, type: 'invalid_request_error', code: 'not_found' },
  'request-too-large': { status: 413, type: 'invalid_request_error', code: 'request_too_large' },
  'rate-limit': { status: 429, type: 'rate_limit_error', code: 'rate_limit_exceeded' },
  // OpenAI's own spent-quota answer; the `openai` SDK would still retry a 429 but for `x-should-retry`.
  'usage-limit': { status: 429, type: 'insufficient_quota', code: 'insufficient_quota' },
  api: { status: 500, type: 'server_error', code: 'server_error' },
  overloaded: { status: 503, type: 'server_error', code: 'overloaded' },
  unavailable: { status: 503, type: 'server_error', code: 'service_unavailable' },
  timeout: { status: 504, type: 'server_error', code: 'timeout' },
};

/** The HTTP status, `error.type` and `error.code` an error kind is answered with. */
export const mapOpenaiChatError = (kind: TurnErrorKind): ErrorShape => errorShapes[kind];

/** The error envelope body for a TurnError. */
export const createOpenaiChatErrorBody = (error: TurnError): OpenaiChatErrorBody =>
  createOpenaiErrorBody(error, errorShapes[error.kind]);

/** An error answered before any byte was streamed (non-retryable ones carry `x-should-retry: false`). */
export const createOpenaiChatErrorResponse = (error: TurnError): ErrorResponse =>
  createErrorResponse(
    error,
    errorShapes[error.kind].status,
    createOpenaiChatErrorBody(error),
    createOpenaiRateLimitHeaders(error),
  );

/**
 * The in-band error once the stream has started: one `data: {"error":{message,type,code}}` chunk (the
 * `openai` SDK's stream iterator throws it as an `APIError`; CCR turns it into an Anthropic `error`
 * event), then the `data: [DONE]` terminator.
 */
export const createOpenaiChatErrorFrames = (error: TurnError): SseFrame[] => {
  const { message, type, code } = createOpenaiChatErrorBody(error).error;
  return [createDataFrame({ error: { message, type, code } }), { data: '[DONE]' }];
};
