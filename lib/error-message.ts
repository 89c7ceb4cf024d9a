/**
 * The text of something thrown: an `Error`'s message, anything else (a string, a number, a plain object)
 * as `String` renders it. For log lines and user-facing diagnostics; the thrown value itself stays the cause.
 */
export const errorMessage = (error: unknown): string =>
  error instanceof Error ? error.message : String(error);
