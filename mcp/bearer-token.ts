/**
 * The bearer token of the standalone tool host, compared in constant time. (`mcp/` cannot import
 * `src/hosts/http/api-key.ts`; this is the same rule: sha-256 digests first, so the length does not leak.)
 */

import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/** True when `presented` equals `expected`; the comparison takes the same time for every wrong token. */
export function tokenMatches(expected: string, presented: string | undefined): boolean {
  return presented !== undefined && timingSafeEqual(digest(expected), digest(presented));
}

/** The token of `Authorization: Bearer <token>`, if any. */
export function bearerToken(request: IncomingMessage): string | undefined {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer\s+(.+)$/i.exec(header) : null;
  return match?.[1]?.trim();
}

/** The token of the `token` query parameter (for WebSocket clients that cannot set headers), if any. */
export function queryToken(request: IncomingMessage): string | undefined {
  const url = new URL(request.url ?? '/', 'http://localhost');
  return url.searchParams.get('token') ?? undefined;
}
