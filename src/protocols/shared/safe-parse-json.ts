import type { Result } from '../../../lib/result.js';
import {
  describeDepthExcess,
  findJsonTextDepthExcess,
  type JsonDepthExcess,
} from '../../../lib/json-depth.js';

/** The text is JSON, but nested deeper than the bridge's limit: it was never parsed. */
export class JsonTooDeepError extends Error {
  override readonly name = 'JsonTooDeepError';
  /** Where, inside the text, the limit was crossed (dot path). */
  readonly excess: JsonDepthExcess;

  constructor(excess: JsonDepthExcess) {
    super(`${excess.path === '' ? 'the value' : excess.path}: ${describeDepthExcess(excess)}`);
    this.excess = excess;
  }
}

/** The outcome of {@link safeParseJson}: the parsed value, or the reason the text is not JSON. */
export type SafeParseJsonResult = Result<unknown, Error>;

/**
 * `JSON.parse` for text that came from outside (request bodies, tool arguments, metadata strings, upstream
 * tool input): never throws, and never builds a value nested deeper than `MAX_JSON_DEPTH` (that text is
 * refused with a {@link JsonTooDeepError} before it is parsed, so nothing downstream recurses into it).
 * The value is `unknown` on purpose; callers narrow it before use.
 */
export const safeParseJson = (text: string): SafeParseJsonResult => {
  const excess = findJsonTextDepthExcess(text);
  if (excess !== undefined) return { ok: false, error: new JsonTooDeepError(excess) };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error : new Error(String(error)) };
  }
};
