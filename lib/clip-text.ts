/** How much of one client-supplied string a log line keeps. */
export const LOG_VALUE_MAX_CHARS = 200;

/**
 * `text` cut to `max` characters, the cut noted with the original length (`…[+N of M chars]`), so a
 * client value cannot make a log line (or a warning) as large as the request.
 */
export const clipText = (text: string, max: number = LOG_VALUE_MAX_CHARS): string =>
  text.length <= max ? text : `${text.slice(0, max)}…[+${text.length - max} of ${text.length} chars]`;
