/** Credentials that must never reach the turn (its headers end up in logs and session records). */
const secretHeaders: ReadonlySet<string> = new Set([
  'authorization',
  'proxy-authorization',
  'x-api-key',
  'cookie',
]);

/**
 * The request headers as `TurnRequest.headers` carries them: names lower-cased, credentials
 * (`authorization`, `proxy-authorization`, `x-api-key`, `cookie`) removed. Values are kept as sent.
 */
export const sanitizeHeaders = (headers: Record<string, string>): Record<string, string> => {
  const sanitized: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase();
    if (!secretHeaders.has(key)) sanitized[key] = value;
  }
  return sanitized;
};
