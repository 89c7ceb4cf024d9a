import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/** The credential a client presented: `x-api-key`, else `Authorization: Bearer …`. */
export const presentedApiKey = (headers: IncomingHttpHeaders): string | undefined => {
  const header = headers['x-api-key'];
  if (typeof header === 'string' && header.length > 0) return header;
  const authorization = headers.authorization;
  const match = typeof authorization === 'string' ? /^Bearer\s+(.+)$/i.exec(authorization) : null;
  return match?.[1]?.trim();
};

/** Compare in constant time (over fixed-length digests, so the length does not leak either). */
export const apiKeyMatches = (expected: string, presented: string | undefined): boolean =>
  presented !== undefined && timingSafeEqual(digest(expected), digest(presented));
