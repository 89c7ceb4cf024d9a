/** The outcome of {@link safeParseJson}: the parsed value, or the reason the text is not JSON. */
export type SafeParseJsonResult = { success: true; value: unknown } | { success: false; error: Error };

/**
 * `JSON.parse` for text that came from outside (tool arguments, metadata strings, upstream tool input):
 * never throws. The value is `unknown` on purpose; callers narrow it before use.
 */
export const safeParseJson = (text: string): SafeParseJsonResult => {
  try {
    return { success: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { success: false, error: error instanceof Error ? error : new Error(String(error)) };
  }
};
