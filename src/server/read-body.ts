import type { IncomingMessage } from 'node:http';
import type { Result } from '../shared/result.js';

/** Why no body was read: over `limit` bytes, or the client went away first. */
export type ReadBodyFailure = { reason: 'too-large'; limit: number } | { reason: 'aborted' };

/** The body as UTF-8 text, or why there is none. */
export type ReadBodyResult = Result<string, ReadBodyFailure>;

/**
 * Read a request body up to `limit` bytes. A body over the limit is rejected as soon as the limit is
 * crossed (the declared content-length is checked first, so an oversized upload is refused unread).
 */
export const readBody = (request: IncomingMessage, limit: number): Promise<ReadBodyResult> =>
  new Promise((resolve) => {
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      request.resume();
      resolve({ ok: false, error: { reason: 'too-large', limit } });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (result: ReadBodyResult): void => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    request.on('data', (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > limit) {
        request.resume();
        settle({ ok: false, error: { reason: 'too-large', limit } });
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => settle({ ok: true, value: Buffer.concat(chunks, size).toString('utf8') }));
    request.on('aborted', () => settle({ ok: false, error: { reason: 'aborted' } }));
    request.on('error', () => settle({ ok: false, error: { reason: 'aborted' } }));
  });
