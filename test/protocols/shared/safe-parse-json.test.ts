import { describe, expect, it } from 'vitest';
import { safeParseJson } from '../../../src/protocols/shared/safe-parse-json.js';

describe('safeParseJson', () => {
  it.each([
    ['{"a":[1,"x",null]}', { a: [1, 'x', null] }],
    ['"text"', 'text'],
    ['42', 42],
    ['null', null],
  ])('parses %s', (text, value) => {
    expect(safeParseJson(text)).toEqual({ ok: true, value });
  });

  it.each(['', '{"x":', 'not json', '{a:1}'])('reports %j as a failure with a SyntaxError', (text) => {
    const result = safeParseJson(text);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toBeInstanceOf(SyntaxError);
  });
});
