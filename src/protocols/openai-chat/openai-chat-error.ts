import type { TurnError, TurnErrorKind } from '../../turn/turn-error.js';
import type { ErrorResponse } from '../protocol-adapter.js';
import type { SseFrame } from '../sse-frame.js';

/** The Chat Completions error envelope (`{ error: { message, type, param, code } }`). */
export type OpenaiChatErrorBody = {
  error: { message: string; type: string; param: string | null; code: string | null };
};

type ErrorShape = { status: number; type: string; code: string | null };

/**
 * Status, `error.type` and `error.code` per kind, as the OpenAI API answers them (an unknown key is
 * `401 invalid_request_error / invalid_api_key`). The `openai` SDK picks its error class from the status
 * alone (`APIError.generate`): 400 BadRequestError, 401 AuthenticationError, 403 PermissionDeniedError,
 * 404 NotFoundError, 429 RateLimitError, ≥500 InternalServerError; 413 is a plain APIError.
 */
const errorShapes: Record<TurnErrorKind, ErrorShape> = {
  'invalid-request': { status: 400, type: 'invalid_request_error', code: null },
  authentication: { status: 401, type: 'invalid_request_error', code: 'invalid_api_key' },
  permission: { status: 403, type: 'invalid_request_error', code: 'permission_denied' },
  'not-found': { status: 404, type: 'invalid_request_error', code: 'not_found' },
  'request-too-large': { status: 413, type: 'invalid_request_error', code: 'request_too_large' },
  'rate-limit': { status: 429, type: 'rate_limit_error', code: 'rate_limit_exceeded' },
  api: { status: 500, type: 'server_error', code: 'server_error' },
  overloaded: { status: 503, type: 'server_error', code: 'overloaded' },
  timeout: { status: 504, type: 'server_error', code: 'timeout' },
};

/** The error envelope body for a TurnError. */
export const createOpenaiChatErrorBody = (error: TurnError): OpenaiChatErrorBody => {
  const shape = errorShapes[error.kind];
  return {
    error: { message: error.message, type: shape.type, param: error.param ?? null, code: shape.code },
  };
};

/**
 * An error answered before any byte was streamed. A non-retryable error carries `x-should-retry: false`,
 * which the official SDKs (and Claude Code) honour instead of retrying by status.
 */
export const createOpenaiChatErrorResponse = (error: TurnError): ErrorResponse => ({
  status: errorShapes[error.kind].status,
  headers: error.retryable ? {} : { 'x-should-retry': 'false' },
  body: createOpenaiChatErrorBody(error),
});

/**
 * The in-band error once the stream has started: one `data: {"error":{message,type,code}}` chunk (the
 * `openai` SDK's stream iterator throws it as an `APIError`; CCR turns it into an Anthropic `error`
 * event), then the `data: [DONE]` terminator.
 */
export const createOpenaiChatErrorFrames = (error: TurnError): SseFrame[] => {
  const { message, type, code } = createOpenaiChatErrorBody(error).error;
  return [{ data: JSON.stringify({ error: { message, type, code } }) }, { data: '[DONE]' }];
};
