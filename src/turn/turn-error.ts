/**
 * Protocol-neutral error kinds. Each protocol's `*-error.ts` maps a kind to its HTTP status, `error.type`
 * and envelope so the official SDKs throw the matching class:
 * invalid-request 400, context-length 400, authentication 401, permission 403, not-found 404,
 * request-too-large 413, rate-limit 429, usage-limit 429 (not retryable), api 500, overloaded 529
 * (Anthropic) / 503 (OpenAI), unavailable 503, timeout 504.
 */

import { errorMessage } from '../../lib/error-message.js';

export type TurnErrorKind =
  | 'invalid-request'
  /**
   * The conversation no longer fits the model's context window. Each protocol answers with the error its
   * clients compact on (Anthropic "prompt is too long", OpenAI `context_length_exceeded`); never retryable.
   */
  | 'context-length'
  | 'authentication'
  | 'permission'
  | 'not-found'
  | 'request-too-large'
  /** Too many requests for now: passes with time, so retryable, with `retryAfterSeconds` when known. */
  | 'rate-limit'
  /**
   * A usage or spending limit (plan quota, spend limit, pricing, a blocked account): only the user can lift
   * it, so never retryable. Each protocol answers with its quota error (OpenAI `insufficient_quota`,
   * Anthropic's 429 with `x-should-retry: false`), so no client retries a spent quota.
   */
  | 'usage-limit'
  | 'api'
  | 'overloaded'
  /** This bridge process takes no new work right now (it is draining); another one, or a retry later, can. */
  | 'unavailable'
  | 'timeout';

export type TurnError = {
  kind: TurnErrorKind;
  /** What went wrong and, where we know it, what the user should do. */
  message: string;
  /** The request field at fault, for invalid-request (e.g. `messages.2.content`). */
  param?: string;
  /**
   * False when a client retry cannot help (bad key, bad request). Sent as `x-should-retry: false`,
   * which makes Claude Code stop at once instead of retrying a 401 for minutes.
   */
  retryable: boolean;
  /** Sent as `retry-after` (seconds) on an HTTP error answer: when a retry can succeed. */
  retryAfterSeconds?: number;
  /**
   * For a rate limit whose upstream said when it resets: that many seconds from the answer. Each protocol
   * sends it as its own rate-limit reset headers (`anthropic-ratelimit-requests-reset`,
   * `x-ratelimit-reset-requests`); without it those headers are left out rather than made up.
   */
  resetSeconds?: number;
};

/** The internal failure family; carries a {@link TurnError} for the client and the original cause. */
export class BridgeError extends Error {
  override readonly name = 'BridgeError';
  readonly turnError: TurnError;

  constructor(turnError: TurnError, options?: { cause?: unknown }) {
    super(turnError.message, options);
    this.turnError = turnError;
  }
}

const retryableKinds: ReadonlySet<TurnErrorKind> = new Set([
  'rate-limit',
  'api',
  'overloaded',
  'unavailable',
  'timeout',
]);

export const createTurnError = (
  kind: TurnErrorKind,
  message: string,
  extra: { param?: string; retryable?: boolean; retryAfterSeconds?: number; resetSeconds?: number } = {},
): TurnError => ({
  kind,
  message,
  retryable: extra.retryable ?? retryableKinds.has(kind),
  ...(extra.param === undefined ? {} : { param: extra.param }),
  ...(extra.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: extra.retryAfterSeconds }),
  ...(extra.resetSeconds === undefined ? {} : { resetSeconds: extra.resetSeconds }),
});

/** Any thrown value → a TurnError; unknown failures are server-internal (`api`), never a client fault. */
export const toTurnError = (error: unknown): TurnError => {
  if (error instanceof BridgeError) return error.turnError;
  const message = errorMessage(error);
  return createTurnError('api', message || 'internal error');
};
