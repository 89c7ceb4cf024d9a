/**
 * Reads an HTTP request body as UTF-8 text, bounded: over `limit` bytes it stops reading as soon as the
 * limit is crossed (the declared content-length is checked first, so an oversized upload is refused
 * unread). The one body reader of `mcp-host` and of `serve`.
 */

import type { IncomingMessage } from 'node:http';
import type { Result } from './result.js';

/** Why no body was read: over `limit` bytes, or the client went away first. */
export type ReadBodyFailure = { reason: 'too-large'; limit: number } | { reason: 'aborted' };

/** The body as UTF-8 text, or why there is none. */
export type ReadBodyTextResult = Result<string, ReadBodyFailure>;

export const readBodyText = (request: IncomingMessage, limit: number): Promise<ReadBodyTextResult> =>
  new Promise((resolve) => {
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      request.resume();
      resolve({ ok: false, error: { reason: 'too-large', limit } });
      return;
    }
    // Let go of the chunks as soon as the read is settled: the listeners below live as long as the request,
    // which outlives its body (a refused one by a whole response), and the chunks are up to `limit` bytes.
    let chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (result: ReadBodyTextResult): void => {
      if (settled) return;
      settled = true;
      chunks = [];
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
