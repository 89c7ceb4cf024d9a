import type { Result } from '../../../lib/result.js';
import { describeDepthExcess, findValueDepthExcess, type JsonDepthExcess } from '../../../lib/json-depth.js';
import { createTurnError, type TurnError } from '../../turn/turn-error.js';
import { JsonTooDeepError, safeParseJson } from './safe-parse-json.js';

const tooDeep = (excess: JsonDepthExcess): TurnError =>
  createTurnError(
    'invalid-request',
    excess.path === ''
      ? `Invalid request body: ${describeDepthExcess(excess)}`
      : `Invalid request: ${excess.path}: ${describeDepthExcess(excess)}`,
    { retryable: false, ...(excess.path === '' ? {} : { param: excess.path }) },
  );

/**
 * A turn request's body text → its JSON value, or the `invalid-request` error (400 in every protocol) for
 * text that is not JSON or nests deeper than `MAX_JSON_DEPTH`; the latter names the field (`param` and
 * message: the dot path where the limit was crossed) and is refused before `JSON.parse` builds anything.
 */
export const parseRequestJson = (text: string): Result<unknown, TurnError> => {
  const parsed = safeParseJson(text);
  if (parsed.ok) return parsed;
  if (parsed.error instanceof JsonTooDeepError) return { ok: false, error: tooDeep(parsed.error.excess) };
  return {
    ok: false,
    error: createTurnError('invalid-request', `Request body is not valid JSON: ${parsed.error.message}`, {
      retryable: false,
    }),
  };
};

/**
 * The same depth rule for a body handed over already parsed (the CCR facade): the `invalid-request` error
 * naming where `value` nests deeper than `MAX_JSON_DEPTH`, or `undefined`. Iterative, never recursive.
 */
export const checkRequestDepth = (value: unknown): TurnError | undefined => {
  const excess = findValueDepthExcess(value);
  return excess === undefined ? undefined : tooDeep(excess);
};
