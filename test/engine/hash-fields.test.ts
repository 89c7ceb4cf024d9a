import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { hashFields } from '../../src/engine/identity/hash-fields.js';

/** The definition identity keys always had: a Hash fed `<length>:` and then the field, field by field. */
const reference = (...fields: string[]): string => {
  const hash = createHash('sha256');
  for (const field of fields) hash.update(`${field.length}:`).update(field);
  return hash.digest('base64url');
};

describe('hashFields', () => {
  it('gives the digests of the field-by-field definition, lone surrogates and empty fields included', () => {
    const lists = [
      ['user-text', 'hello'],
      ['namespace', 'native', 'anthropic', 'a9f0c2'],
      ['opening', ''],
      ['prefix', 'x\uD800', '\uDC00y'],
      ['assistant-text', 'é 中文 🙂'.repeat(100)],
      [],
    ];
    for (const fields of lists) expect(hashFields(...fields)).toBe(reference(...fields));
  });

  it('keeps field boundaries apart', () => {
    expect(hashFields('k', 'ab', 'c')).not.toBe(hashFields('k', 'a', 'bc'));
  });
});
