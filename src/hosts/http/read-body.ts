import type { IncomingMessage } from 'node:http';
import { readBodyText } from '../../../lib/read-body-text.js';
import type { Result } from '../../../lib/result.js';

/** Why no body was read: over `limit` bytes, or the client went away first. */
export type ReadBodyFailure = { reason: 'too-large'; limit: number } | { reason: 'aborted' };

/** The body as UTF-8 text, or why there is none. */
export type ReadBodyResult = Result<string, ReadBodyFailure>;

/**
 * Read a request body up to `limit` bytes. A body over the limit is rejected as soon as the limit is
 * crossed (the declared content-length is checked first, so an oversized upload is refused unread).
 */
export const readBody = async (request: IncomingMessage, limit: number): Promise<ReadBodyResult> => {
  const body = await readBodyText(request, limit);
  if (body.ok) return { ok: true, value: body.text };
  return {
    ok: false,
    error: body.reason === 'too-large' ? { reason: 'too-large', limit } : { reason: 'aborted' },
  };
};
