/**
 * Cursor SDK failures → neutral TurnErrors with messages that tell the user what to do. Typed SDK errors
 * only come from create/resume/send/models (checked by `name`: the bundle's class identities are
 * minified); failures inside a running run arrive as a bare `RunError {message, code?}`.
 */

import { createTurnError, type TurnError } from '../../turn/turn-error.js';

const keyHelp =
  'Set Providers[].api_key to a key starting with crsr_ (from the Cursor dashboard), or export CURSOR_API_KEY.';

const errorName = (error: unknown): string =>
  typeof error === 'object' && error !== null && 'name' in error && typeof error.name === 'string'
    ? error.name
    : '';

const errorMessage = (error: unknown): string => (error instanceof Error ? error.message : String(error));

export const mapCursorSdkError = (error: unknown): TurnError => {
  const message = errorMessage(error);
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

/** A failure reported by a running run (status ERROR / `wait()` → error). */
export const mapCursorRunError = (runError: { message: string; code?: string } | undefined): TurnError => {
  const message = runError?.message ?? 'The Cursor run failed without a message.';
  const text = `${runError?.code ?? ''} ${message}`.toLowerCase();
  if (/fetch failed|unavailable|failed to connect|network|timed? ?out|deadline/.test(text)) {
    return createTurnError('overloaded', `Cursor is unreachable: ${message}. Retry shortly.`);
  }
  if (/unauthenticated|api key|not logged in|unauthorized/.test(text)) {
    return createTurnError('authentication', `Cursor rejected the API key: ${message}. ${keyHelp}`, {
      retryable: false,
    });
  }
  if (/rate.?limit|usage.?limit|resource.?exhausted|quota/.test(text)) {
    return createTurnError('rate-limit', `Cursor rate or usage limit reached: ${message}`);
  }
  return createTurnError('api', `The Cursor run failed: ${message}`);
};
