/**
 * Reads an HTTP request body as JSON, bounded: over `limit` bytes it stops reading (the declared
 * content-length is checked first, so an oversized upload is refused unread), and a body nested deeper
 * than `MAX_JSON_DEPTH` is refused as `invalid-json` (naming the path) before it is parsed.
 */

import type { IncomingMessage } from 'node:http';
import { describeDepthExcess, findJsonTextDepthExcess } from '../lib/json-depth.js';
import { readBodyText } from '../lib/read-body-text.js';
import type { Result } from '../lib/result.js';

/** Why no JSON was read, with the text the JSON-RPC error carries. */
export type ReadJsonBodyFailure = { reason: 'too-large' | 'aborted' | 'invalid-json'; message: string };

export type ReadJsonBodyResult = Result<unknown, ReadJsonBodyFailure>;

export async function readJsonBody(request: IncomingMessage, limit: number): Promise<ReadJsonBodyResult> {
  const body = await readBodyText(request, limit);
  if (!body.ok) {
    return body.error.reason === 'too-large'
      ? {
          ok: false,
          error: { reason: 'too-large', message: `The request body is larger than ${limit} bytes.` },
        }
      : { ok: false, error: { reason: 'aborted', message: 'The request was aborted.' } };
  }
  const excess = findJsonTextDepthExcess(body.value);
  if (excess !== undefined) {
    const at = excess.path === '' ? '' : ` at ${excess.path}`;
    return {
      ok: false,
      error: { reason: 'invalid-json', message: `Parse error: ${describeDepthExcess(excess)}${at}` },
    };
  }
  try {
    return { ok: true, value: JSON.parse(body.value) as unknown };
  } catch (error) {
    return {
      ok: false,
      error: { reason: 'invalid-json', message: `Parse error: ${(error as Error).message}` },
    };
  }
}
