/**
 * Exact digests. Identity keys and transcript digests are sha256 digests of length-prefixed fields, so no
 * conversation text is ever kept, no two field lists can produce the same input (`['ab', 'c']` ≠
 * `['a', 'bc']`), and every UTF-16 code unit of every field counts: two texts get the same digest only
 * if they are equal (up to a sha256 collision).
 */

import { createHash, hash } from 'node:crypto';

/** Fields at least this long are fed to {@link hashFields} as their own digest (see there). */
const nestedFieldChars = 1_024;

/** `String.prototype.isWellFormed` (ES2024, Node ≥ 20), typed here because the project's lib is ES2023. */
const isWellFormed = (text: string): boolean =>
  (text as unknown as { isWellFormed(): boolean }).isWellFormed();

/**
 * base64url sha256 of every UTF-16 code unit of `text`. A well-formed text is hashed as UTF-8 (the fast
 * one-shot path; UTF-8 is injective on well-formed text); a text with a lone surrogate, which UTF-8 would
 * turn into U+FFFD, is hashed as UTF-16LE and its digest tagged with `~` (outside the base64url alphabet),
 * so digests of the two encodings never meet.
 */
export const exactHash = (text: string): string =>
  isWellFormed(text)
    ? hash('sha256', text, 'base64url')
    : `~${createHash('sha256').update(text, 'utf16le').digest('base64url')}`;

/**
 * {@link exactHash} of the length-prefixed `fields`; the first field names the key's purpose. A field is
 * fed as `<length>:<field>`, or — when long — as `<length>#<exactHash(field)>`, so a long text is hashed
 * once in place instead of being copied into the joined input. One one-shot hash over the joined input: a
 * request computes many keys, and a `Hash` object per key cost more than the hashing itself.
 */
export const hashFields = (...fields: readonly string[]): string => {
  let input = '';
  for (const field of fields) {
    input +=
      field.length < nestedFieldChars ? `${field.length}:${field}` : `${field.length}#${exactHash(field)}`;
  }
  return exactHash(input);
};
