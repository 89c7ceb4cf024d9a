/**
 * Reads an HTTP request body as JSON, bounded: over `limit` bytes it stops reading (the declared
 * content-length is checked first, so an oversized upload is refused unread), and a body nested deeper
 * than `MAX_JSON_DEPTH` is refused as `invalid-json` (naming the path) before it is parsed.
 */

import type { IncomingMessage } from 'node:http';
import { describeDepthExcess, findJsonTextDepthExcess } from '../lib/json-depth.js';
import { readBodyText } from '../lib/read-body-text.js';

export type ReadJsonBodyResult =
  | { ok: true; value: unknown }
  | { ok: false; reason: 'too-large' | 'aborted' | 'invalid-json'; message: string };

export async function readJsonBody(request: IncomingMessage, limit: number): Promise<ReadJsonBodyResult> {
  const body = await readBodyText(request, limit);
  if (!body.ok) {
    return body.reason === 'too-large'
      ? { ok: false, reason: 'too-large', message: `The request body is larger than ${limit} bytes.` }
      : { ok: false, reason: 'aborted', message: 'The request was aborted.' };
  }
  const excess = findJsonTextDepthExcess(body.text);
  if (excess !== undefined) {
    const at = excess.path === '' ? '' : ` at ${excess.path}`;
    return { ok: false, reason: 'invalid-json', message: `Parse error: ${describeDepthExcess(excess)}${at}` };
  }
  try {
    return { ok: true, value: JSON.parse(body.text) as unknown };
  } catch (error) {
    return { ok: false, reason: 'invalid-json', message: `Parse error: ${(error as Error).message}` };
  }
}
