import { describe, expect, it } from 'vitest';
import { convertTextOrParts } from '../../../src/protocols/shared/convert-text-or-parts.js';

describe('convertTextOrParts', () => {
  it('turns a string into one text part, even an empty one', () => {
    expect(convertTextOrParts('hi', () => 'never')).toEqual([{ type: 'text', text: 'hi' }]);
    expect(convertTextOrParts('', () => 'never')).toEqual([{ type: 'text', text: '' }]);
  });

  it('converts parts in order with their index and drops the undefined ones', () => {
    const seen: number[] = [];
    const converted = convertTextOrParts(['a', 'skip', 'b'], (part, index) => {
      seen.push(index);
      return part === 'skip' ? undefined : { type: 'text' as const, text: part.toUpperCase() };
    });
    expect(converted).toEqual([
      { type: 'text', text: 'A' },
      { type: 'text', text: 'B' },
    ]);
    expect(seen).toEqual([0, 1, 2]);
  });

  it('gives an empty list for no parts', () => {
    expect(convertTextOrParts([], () => 'x')).toEqual([]);
  });
});
