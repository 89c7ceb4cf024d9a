import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readBodyText } from '../../lib/read-body-text.js';

/** A request whose body arrives as the given chunks, one per write. */
const requestOf = (chunks: readonly Buffer[], headers: Record<string, string> = {}): IncomingMessage => {
  const stream = new PassThrough();
  const request = Object.assign(stream, { headers }) as unknown as IncomingMessage;
  for (const chunk of chunks) stream.write(chunk);
  stream.end();
  return request;
};

/** `body` cut at each offset of `cuts`. */
const cutAt = (body: Buffer, cuts: readonly number[]): Buffer[] =>
  [0, ...cuts].map((from, index) => body.subarray(from, cuts[index] ?? body.length));

describe('readBodyText', () => {
  it('decodes characters split between chunks as the whole body would be', async () => {
    const body = Buffer.from('{"text":"é€😀 \ufeff"}');
    const chunks = cutAt(body, [1, 10, 11, 13, 14, 17, 18, 19]);
    expect(await readBodyText(requestOf(chunks), 1024)).toEqual({ ok: true, value: body.toString('utf8') });
  });

  it('decodes an invalid or cut sequence as the whole body would be', async () => {
    const body = Buffer.from([0x7b, 0xe2, 0x82, 0x41, 0xff, 0xf0, 0x9f, 0x98]);
    expect(await readBodyText(requestOf(cutAt(body, [2, 5])), 1024)).toEqual({
      ok: true,
      value: body.toString('utf8'),
    });
  });

  it('refuses a body over the limit, announced or not', async () => {
    const chunk = Buffer.alloc(600, 'x');
    expect(await readBodyText(requestOf([chunk, chunk]), 1000)).toEqual({
      ok: false,
      error: { reason: 'too-large', limit: 1000 },
    });
    expect(await readBodyText(requestOf([chunk], { 'content-length': '1200' }), 1000)).toEqual({
      ok: false,
      error: { reason: 'too-large', limit: 1000 },
    });
    expect(await readBodyText(requestOf([chunk]), 600)).toEqual({ ok: true, value: 'x'.repeat(600) });
  });
});
