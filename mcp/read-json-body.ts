/**
 * Reads an HTTP request body as JSON, bounded: over `limit` bytes it stops reading (the declared
 * content-length is checked first, so an oversized upload is refused unread), and a body nested deeper
 * than `MAX_JSON_DEPTH` is refused as `invalid-json` (naming the path) before it is parsed.
 */

import type { IncomingMessage } from 'node:http';
import { describeDepthExcess, findJsonTextDepthExcess } from './json-depth.js';

export type ReadJsonBodyResult =
  | { ok: true; value: unknown }
  | { ok: false; reason: 'too-large' | 'aborted' | 'invalid-json'; message: string };

export function readJsonBody(request: IncomingMessage, limit: number): Promise<ReadJsonBodyResult> {
  return new Promise((resolve) => {
    const tooLarge = `The request body is larger than ${limit} bytes.`;
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      request.resume();
      resolve({ ok: false, reason: 'too-large', message: tooLarge });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (result: ReadJsonBodyResult): void => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    request.on('data', (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > limit) {
        request.resume();
        settle({ ok: false, reason: 'too-large', message: tooLarge });
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => {
      const text = Buffer.concat(chunks, size).toString('utf8');
      const excess = findJsonTextDepthExcess(text);
      if (excess !== undefined) {
        const at = excess.path === '' ? '' : ` at ${excess.path}`;
        settle({
          ok: false,
          reason: 'invalid-json',
          message: `Parse error: ${describeDepthExcess(excess)}${at}`,
        });
        return;
      }
      try {
        settle({ ok: true, value: JSON.parse(text) as unknown });
      } catch (error) {
        settle({ ok: false, reason: 'invalid-json', message: `Parse error: ${(error as Error).message}` });
      }
    });
    request.on('aborted', () =>
      settle({ ok: false, reason: 'aborted', message: 'The request was aborted.' }),
    );
    request.on('error', () => settle({ ok: false, reason: 'aborted', message: 'The request failed.' }));
  });
}
