import { describe, expect, it } from 'vitest';

import {
  createCustomToolInputSchema,
  unwrapCustomToolInput,
  wrapCustomToolInput,
} from '../../../src/protocols/shared/custom-tool-input.js';

describe('unwrapCustomToolInput', () => {
  it.each([
    ['{"input":"raw text"}', 'raw text'],
    ['  {"input":"a\\nb"}', 'a\nb'],
    ['*** Begin Patch', '*** Begin Patch'],
    ['{"other":1}', '{"other":1}'],
    ['{not json', '{not json'],
    ['', ''],
  ])('unwraps %j to %j', (input, expected) => {
    expect(unwrapCustomToolInput(input)).toBe(expected);
  });
});

describe('wrapCustomToolInput and createCustomToolInputSchema', () => {
  it('carry the raw string as the one required `input` property', () => {
    expect(wrapCustomToolInput('*** Begin Patch')).toEqual({ input: '*** Begin Patch' });
    expect(unwrapCustomToolInput(JSON.stringify(wrapCustomToolInput('a "b"\n')))).toBe('a "b"\n');
    expect(createCustomToolInputSchema('free text')).toEqual({
      type: 'object',
      properties: { input: { type: 'string', description: 'free text' } },
      required: ['input'],
    });
  });
});
