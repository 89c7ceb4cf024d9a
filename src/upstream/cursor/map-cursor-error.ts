/**
 * Cursor SDK failures → neutral TurnErrors with messages that tell the user what to do. Typed SDK errors
 * only come from create/resume/send/models (checked by `name`: the bundle's class identities are
 * minified); failures inside a running run arrive as a bare `RunError {message, code?}`.
 */

import { createTurnError, type TurnError, type TurnErrorKind } from '../../turn/turn-error.js';

const keyHelp =
  'Set Providers[].api_key to a key starting with crsr_ (from the Cursor dashboard), or export CURSOR_API_KEY.';

const errorName = (error: unknown): string =>
  typeof error === 'object' && error !== null && 'name' in error && typeof error.name === 'string'
    ? error.name
    : '';

const errorMessage = (error: unknown): string => (error instanceof Error ? error.message : String(error));

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
  if (isContextLength(errorCode(error), message)) return contextLengthError(message);
  switch (errorName(error)) {
    case 'AuthenticationError':
      return createTurnError('authentication', `Cursor rejected the API key: ${message}. ${keyHelp}`, {
        retryable: false,
      });
    case 'RateLimitError':
      return createTurnError('rate-limit', `Cursor rate or usage limit reached: ${message}`);
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
        : /rate.?limit|usage.?limit|resource.?exhausted|quota/.test(text)
          ? 'rate-limit'
          : 'api');
  switch (kind) {
    case 'authentication':
      return createTurnError(kind, `Cursor rejected the API key: ${message}. ${keyHelp}`, {
        retryable: false,
      });
    case 'rate-limit':
      return createTurnError(kind, `Cursor rate or usage limit reached: ${message}`);
    case 'overloaded':
    case 'timeout':
      return createTurnError('overloaded', `Cursor is unreachable: ${message}. Retry shortly.`);
    default:
      return createTurnError(kind, `The Cursor run failed: ${message}`, {
        retryable: connectCodeKinds[code]?.retryable ?? true,
      });
  }
};
