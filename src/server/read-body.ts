import type { IncomingMessage } from 'node:http';

export type ReadBodyResult =
  | { ok: true; text: string }
  | { ok: false; reason: 'too-large'; limit: number }
  | { ok: false; reason: 'aborted' };

/**
 * Read a request body up to `limit` bytes. A body over the limit is rejected as soon as the limit is
 * crossed (the declared content-length is checked first, so an oversized upload is refused unread).
 */
export const readBody = (request: IncomingMessage, limit: number): Promise<ReadBodyResult> =>
  new Promise((resolve) => {
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      request.resume();
      resolve({ ok: false, reason: 'too-large', limit });
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
        settle({ ok: false, reason: 'too-large', limit });
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => settle({ ok: true, text: Buffer.concat(chunks, size).toString('utf8') }));
    request.on('aborted', () => settle({ ok: false, reason: 'aborted' }));
    request.on('error', () => settle({ ok: false, reason: 'aborted' }));
  });
