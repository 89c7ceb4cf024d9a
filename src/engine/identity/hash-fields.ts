/**
 * Identity keys are sha256 digests of length-prefixed fields, so no conversation text is ever kept and
 * no two field lists can produce the same input (`['ab', 'c']` ≠ `['a', 'bc']`).
 */

import { createHash } from 'node:crypto';

/** base64url sha256 of the length-prefixed `fields`; the first field names the key's purpose. */
export const hashFields = (...fields: readonly string[]): string => {
  const hash = createHash('sha256');
  for (const field of fields) hash.update(`${field.length}:`).update(field);
  return hash.digest('base64url');
};
