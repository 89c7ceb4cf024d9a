import type { Result } from '../../shared/result.js';

/** The outcome of {@link safeParseJson}: the parsed value, or the reason the text is not JSON. */
export type SafeParseJsonResult = Result<unknown, Error>;

/**
 * `JSON.parse` for text that came from outside (tool arguments, metadata strings, upstream tool input):
 * never throws. The value is `unknown` on purpose; callers narrow it before use.
 */
export const safeParseJson = (text: string): SafeParseJsonResult => {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error : new Error(String(error)) };
  }
};
