import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { exactHash, hashFields } from '../../src/engine/identity/hash-fields.js';

/** The definition identity keys always had for short well-formed fields: a Hash fed `<length>:`, then the field. */
const reference = (...fields: string[]): string => {
  const hash = createHash('sha256');
  for (const field of fields) hash.update(`${field.length}:`).update(field);
  return hash.digest('base64url');
};

/** A long text with `at` (when given) replaced by `replacement`: the same length, one character different. */
const longText = (at?: number, replacement = 'Z'): string => {
  const chars = Array.from({ length: 40_000 }, (_, index) => String.fromCharCode(97 + (index % 26)));
  if (at !== undefined) chars[at] = replacement;
  return chars.join('');
};

describe('hashFields', () => {
  it('gives the digests of the field-by-field definition for short well-formed fields', () => {
    const lists = [
      ['user-text', 'hello'],
      ['namespace', 'native', 'anthropic', 'a9f0c2'],
      ['opening', ''],
      ['assistant-text', 'é 中文 🙂'.repeat(50)],
      [],
    ];
    for (const fields of lists) expect(hashFields(...fields)).toBe(reference(...fields));
  });

  it('keeps field boundaries apart', () => {
    expect(hashFields('k', 'ab', 'c')).not.toBe(hashFields('k', 'a', 'bc'));
    expect(hashFields('k', longText(), 'c')).not.toBe(hashFields('k', `${longText()}c`));
  });

  // Identity must be exact: every character of a long text counts.
  it('a same-length edit anywhere in a long field changes the digest', () => {
    const base = hashFields('user-text', longText());
    for (const at of [0, 600, 20_011, 39_999]) expect(hashFields('user-text', longText(at))).not.toBe(base);
    expect(hashFields('user-text', longText())).toBe(base);
  });

  it('keeps lone surrogates apart from U+FFFD (which UTF-8 would make of them), short or long', () => {
    expect(hashFields('prefix', 'x\uD800', '\uDC00y')).not.toBe(hashFields('prefix', 'x\uFFFD', '\uFFFDy'));
    expect(hashFields('prefix', 'x\uD800')).not.toBe(hashFields('prefix', 'x\uDBFF'));
    expect(hashFields('user-text', longText(600, '\uD800'))).not.toBe(
      hashFields('user-text', longText(600, '\uFFFD')),
    );
    expect(exactHash('a\uD800')).not.toBe(exactHash('a\uFFFD'));
  });
});
