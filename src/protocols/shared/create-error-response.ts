import type { TurnError } from '../../turn/turn-error.js';
import type { ErrorResponse } from '../protocol-adapter.js';

/**
 * An error answered before any byte was sent, in a protocol's own envelope (`body`) and `status`.
 * A non-retryable error carries `x-should-retry: false`, which the official SDKs and Claude Code obey
 * instead of retrying by status (Claude Code otherwise retries a 401 for minutes). An error that says when
 * to retry carries `retry-after` (seconds), which the official SDKs and Claude Code wait for. `headers`
 * are the protocol's own additions (its rate-limit headers).
 */
export const createErrorResponse = (
  error: TurnError,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): ErrorResponse => ({
  status,
  headers: {
    ...(error.retryable ? {} : { 'x-should-retry': 'false' }),
    ...(error.retryAfterSeconds === undefined ? {} : { 'retry-after': String(error.retryAfterSeconds) }),
    ...headers,
  },
  body,
});
