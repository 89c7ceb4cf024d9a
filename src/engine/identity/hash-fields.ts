/**
 * Identity keys are sha256 digests of length-prefixed fields, so no conversation text is ever kept and
 * no two field lists can produce the same input (`['ab', 'c']` ≠ `['a', 'bc']`).
 */

import { hash } from 'node:crypto';

/**
 * base64url sha256 of the length-prefixed `fields`; the first field names the key's purpose. One
 * one-shot `hash` over the joined input (the same UTF-8 bytes as feeding a `Hash` field by field, since
 * every field is preceded by its `<length>:` prefix): a request computes a dozen keys, and a `Hash`
 * object per key cost more than the hashing itself.
 */
export const hashFields = (...fields: readonly string[]): string => {
  let input = '';
  for (const field of fields) input += `${field.length}:${field}`;
  return hash('sha256', input, 'base64url');
};
