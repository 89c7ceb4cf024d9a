/**
 * Cursor SDK failures → neutral TurnErrors with messages that tell the user what to do. Typed SDK errors
 * only come from create/resume/send/models (checked by `name`: the bundle's class identities are
 * minified); failures inside a running run arrive as a bare `RunError {message, code?}`.
 */

import { createTurnError, type TurnError, type TurnErrorKind } from '../../turn/turn-error.js';
import { errorMessage } from '../../../lib/error-message.js';

const keyHelp =
  'Set Providers[].api_key to a key starting with crsr_ (from the Cursor dashboard), or export CURSOR_API_KEY.';

const errorName = (error: unknown): string =>
  typeof error === 'object' && error !== null && 'name' in error && typeof error.name === 'string'
    ? error.name
    : '';

const errorCode = (error: unknown): string =>
  typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string'
    ? error.code
    : '';

/**
 * Cursor refuses a conversation longer than the model's window with `ErrorDetails.Error`
 * `CONVERSATION_TOO_LONG` (43). A typed SDK error keeps that name as `code`; inside a running run the SDK
 * keeps only the details' `"<title> <detail>"` text (the Cursor app shows "Your conversation is too long"),
 * so the text is matched too, only as an overflow: "context deadline exceeded" is a network timeout and a
 * model parameter may be named "context window".
 */
const contextLengthPattern =
  /conversation_too_long|conversation (?:is )?too long|prompt is too long|context_length_exceeded|maximum context length|exceed(?:s|ed)? (?:the )?(?:model's )?context (?:window|length)/i;

const isContextLength = (code: string, message: string): boolean =>
  code.toUpperCase() === 'CONVERSATION_TOO_LONG' || contextLengthPattern.test(message);

/**
 * Cursor's limits (`ErrorDetails.Error`). A typed SDK error (create/send) keeps the enum name as `code`:
 * `RateLimitError` for the rate limits and FREE/PRO_USER_USAGE_LIMIT, `UnknownAgentError` for
 * USAGE_PRICING_REQUIRED(_CHANGEABLE), SUSPICIOUS_USAGE_BLOCKED and PRO_USER_ONLY, so the code decides
 * whatever the class. Inside a running run the SDK keeps neither the enum, nor the details'
 * `isRetryable` / `additionalInfo`, nor the trailer metadata: only `"<title> <detail>"` when the SDK ends
 * the run at once (it does for every rate and usage limit but API_KEY_RATE_LIMIT and
 * SUSPICIOUS_USAGE_BLOCKED, and for those when the details say `isRetryable: false`), else
 * `"[<connect code>] <Connect message>"` (Cursor's Connect message is a bare `Error`) after its own three
 * retries. So the text decides there: the words Cursor's limit messages are made of ("You've hit your
 * usage limit", "usage-based pricing", "spend limit", "… to prevent abuse", "Rate limit exceeded", "too
 * many requests", "high demand"). A usage limit is matched first: telling a client to wait for a spent
 * quota would have it retry ten times for nothing.
 */
const usageLimitCodes: ReadonlySet<string> = new Set([
  'FREE_USER_USAGE_LIMIT',
  'PRO_USER_USAGE_LIMIT',
  'USAGE_PRICING_REQUIRED',
  'USAGE_PRICING_REQUIRED_CHANGEABLE',
  'SUSPICIOUS_USAGE_BLOCKED',
  'PRO_USER_ONLY',
]);

const usageLimitPattern =
  /usage[ _-]?limit|spend(?:ing)?[ _-]?limit|usage[ _-]based pricing|pricing[ _-]required|suspicious[ _-]?(?:usage|activity)|to prevent abuse|free trial accounts|insufficient[ _-]quota|quota (?:exceeded|reached)|out of (?:credits?|quota)/i;

/** "High Load: We're experiencing high demand for <model> right now … try again in a few moments." */
const rateLimitPattern = /rate[ _-]?limit|too many requests|resource[ _-]exhausted|high demand|high load/i;

/** A time Cursor's message gives for the limit to pass ("try again in 30 seconds", "in 2 minutes"). */
const resetPattern =
  /\b(?:try again|retry|resets?|available again)\b[^.]*?\b(?:in|after) (\d+(?:\.\d+)?) ?(ms|s|sec(?:ond)?s?|m|min(?:ute)?s?|h|hours?)\b/i;

/**
 * What `retry-after` says when Cursor's message gives no time: long enough that a client does not spend
 * its retries (Claude Code and the official SDKs make up to 10 and 2) within one rate-limit window,
 * short enough that an interactive user is not kept waiting past it.
 */
export const defaultRateLimitRetryAfterSeconds = 10;

const readResetSeconds = (message: string): number | undefined => {
  const match = resetPattern.exec(message);
  if (match?.[1] === undefined || match[2] === undefined) return undefined;
  const unit = match[2].toLowerCase();
  const scale = unit === 'ms' ? 0.001 : unit.startsWith('h') ? 3600 : unit.startsWith('m') ? 60 : 1;
  return Math.max(1, Math.ceil(Number(match[1]) * scale));
};

/** Where a usage limit is lifted: the account's plan, spend limit and billing. */
export const cursorDashboardUrl = 'https://cursor.com/dashboard';

/** Not retryable: only the user can lift it (plan, spend limit, pricing, support). */
const usageLimitError = (message: string): TurnError =>
  createTurnError(
    'usage-limit',
    `Cursor usage limit reached (Cursor: ${message}). Retrying will not help: check your plan, spend limit ` +
      `and usage-based pricing in Cursor's dashboard, ${cursorDashboardUrl}.`,
    { retryable: false },
  );

/**
 * Retryable after `retry-after`: Cursor's time when its message gives one (then also the protocols'
 * reset headers), else {@link defaultRateLimitRetryAfterSeconds}. The message repeats the wait as
 * "try again in Ns", the phrase Codex reads a delay from where no header can go (an in-band error).
 */
const rateLimitError = (message: string): TurnError => {
  const resetSeconds = readResetSeconds(message);
  const retryAfterSeconds = resetSeconds ?? defaultRateLimitRetryAfterSeconds;
  return createTurnError(
    'rate-limit',
    `Cursor rate limit reached (Cursor: ${message}). Please try again in ${retryAfterSeconds}s.`,
    { retryAfterSeconds, ...(resetSeconds === undefined ? {} : { resetSeconds }) },
  );
};

/** A limit by the SDK's code (typed errors) or else the message's words; undefined when neither says so. */
const limitError = (code: string, message: string): TurnError | undefined => {
  if (usageLimitCodes.has(code.toUpperCase()) || usageLimitPattern.test(message)) {
    return usageLimitError(message);
  }
  if (rateLimitPattern.test(message) || /RATE_LIMIT/i.test(code)) return rateLimitError(message);
  return undefined;
};

/** Not retryable: the same conversation overflows again until the client compacts or trims it. */
const contextLengthError = (message: string): TurnError =>
  createTurnError(
    'context-length',
    `The conversation exceeds the Cursor model's maximum context length (Cursor: ${message}). ` +
      'Compact the conversation or start a new one.',
    { retryable: false },
  );

export const mapCursorSdkError = (error: unknown): TurnError => {
  const message = errorMessage(error);
  const code = errorCode(error);
  if (isContextLength(code, message)) return contextLengthError(message);
  const name = errorName(error);
  // Any class: a usage limit may come as `UnknownAgentError`; a rejected key is never a limit.
  const limit = name === 'AuthenticationError' ? undefined : limitError(code, message);
  if (limit !== undefined) return limit;
  switch (name) {
    case 'AuthenticationError':
      return createTurnError('authentication', `Cursor rejected the API key: ${message}. ${keyHelp}`, {
        retryable: false,
      });
    case 'RateLimitError':
      return rateLimitError(message);
    case 'IntegrationNotConnectedError':
    case 'ConfigurationError':
    case 'UnsupportedRunOperationError':
      return createTurnError('invalid-request', `Cursor refused the request: ${message}`, {
        retryable: false,
      });
    case 'NetworkError':
      return createTurnError('overloaded', `Cursor is unreachable: ${message}. Retry shortly.`);
    case 'AgentBusyError':
      return createTurnError('rate-limit', `The Cursor agent is busy: ${message}`);
    default:
      return createTurnError('api', `Cursor SDK failure: ${message}`);
  }
};

/** Connect codes as a running run reports them: the only trace is a `[code]` prefix on the message. */
const connectCodeKinds: Readonly<Record<string, { kind: TurnErrorKind; retryable: boolean } | undefined>> = {
  unauthenticated: { kind: 'authentication', retryable: false },
  permission_denied: { kind: 'permission', retryable: false },
  resource_exhausted: { kind: 'rate-limit', retryable: true },
  unavailable: { kind: 'overloaded', retryable: true },
  deadline_exceeded: { kind: 'timeout', retryable: true },
  invalid_argument: { kind: 'invalid-request', retryable: false },
  failed_precondition: { kind: 'invalid-request', retryable: false },
  not_found: { kind: 'not-found', retryable: false },
};

/**
 * A failure reported by a running run (status ERROR / `wait()` → error). The SDK drops the typed error
 * inside a run: `{message: "[<connect code>] <server message>"}`, no `code`. The code prefix decides
 * first; without one, the message text.
 */
export const mapCursorRunError = (runError: { message: string; code?: string } | undefined): TurnError => {
  const message = runError?.message ?? 'The Cursor run failed without a message.';
  // Before the Connect code: Cursor may send the refusal as `resource_exhausted`, which is no rate limit.
  if (isContextLength(runError?.code ?? '', message)) return contextLengthError(message);
  // Before the Connect code too: `[resource_exhausted]` is no proof of a rate limit, nor a usage limit.
  const limit = limitError(runError?.code ?? '', message);
  if (limit !== undefined) return limit;
  const code = (runError?.code ?? /^\[([a-z_]+)\]/.exec(message)?.[1] ?? '').toLowerCase();
  const text = `${code} ${message}`.toLowerCase();
  const kind =
    connectCodeKinds[code]?.kind ??
    (/fetch failed|unavailable|failed to connect|connection (?:failed|stalled)|network|timed? ?out|deadline/.test(
      text,
    )
      ? 'overloaded'
      : /unauthenticated|api key|not logged in|unauthorized/.test(text)
        ? 'authentication'
        : 'api');
  switch (kind) {
    case 'authentication':
      return createTurnError(kind, `Cursor rejected the API key: ${message}. ${keyHelp}`, {
        retryable: false,
      });
    case 'rate-limit':
      return rateLimitError(message);
    case 'overloaded':
    case 'timeout':
      return createTurnError('overloaded', `Cursor is unreachable: ${message}. Retry shortly.`);
    default:
      return createTurnError(kind, `The Cursor run failed: ${message}`, {
        retryable: connectCodeKinds[code]?.retryable ?? true,
      });
  }
};
