import { describe, expect, it } from 'vitest';

import {
  convertJsonNodeToValue,
  findJsonProperty,
  locateOffset,
  parseJson5,
} from '../../src/config/parse-json5.js';

const valueOf = (text: string): unknown => {
  const result = parseJson5(text);
  if (!result.ok) throw new Error(`unexpected syntax error: ${result.error.message}`);
  return convertJsonNodeToValue(result.value);
};

const errorOf = (text: string) => {
  const result = parseJson5(text);
  if (result.ok) throw new Error('expected a syntax error');
  return result.error;
};

describe('parseJson5', () => {
  it.each([
    '{}',
    '[]',
    '{"a":1,"b":[true,false,null],"c":{"d":"e\\n\\"\\u00e9\\/"}}',
    '  [ -1.5e3 , 0 , 0.25, 1E-2 ]  ',
    '"just a string"',
    '{"PORT": 3456, "Providers": [{"name": "cursor", "models": ["composer-2"]}]}',
  ])('agrees with JSON.parse on strict JSON: %s', (text) => {
    expect(valueOf(text)).toEqual(JSON.parse(text));
  });

  it('accepts comments, trailing commas, unquoted keys and single quotes', () => {
    const text = `// CCR config
    {
      /* block
         comment */
      PORT: 3456, // trailing comment
      'HOST': '127.0.0.1',
      $key_1: 'it\\'s',
      Providers: [ { name: "cursor", models: ["a", "b",], }, ],
    }`;
    expect(valueOf(text)).toEqual({
      PORT: 3456,
      HOST: '127.0.0.1',
      $key_1: "it's",
      Providers: [{ name: 'cursor', models: ['a', 'b'] }],
    });
  });

  it('parses JSON5 numbers and escapes', () => {
    expect(valueOf('[0x1F, -0xa, +5, .5, 5., Infinity, -Infinity, 1e2]')).toEqual([
      31,
      -10,
      5,
      0.5,
      5,
      Infinity,
      -Infinity,
      100,
    ]);
    expect(Number.isNaN(valueOf('NaN'))).toBe(true);
    expect(valueOf(`'a\\x41\\u0042\\t\\0\\q'`)).toBe('aAB\t\0q');
    expect(valueOf('"line \\\ncontinued"')).toBe('line continued');
    expect(valueOf('"crlf \\\r\ncontinued"')).toBe('crlf continued');
  });

  it('accepts a leading byte order mark and Unicode identifier keys', () => {
    expect(valueOf('\uFEFF{ café: 1 }')).toEqual({ café: 1 });
  });

  it('keeps __proto__ as an own key instead of setting the prototype', () => {
    const value = valueOf('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.keys(value)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('lets the last duplicate key win, like JSON.parse', () => {
    expect(valueOf('{"a": 1, "a": 2}')).toEqual({ a: 2 });
  });

  it.each([
    ['', 'empty document', 1, 1],
    ['{"a": 1,,}', "expected an object key but found ','", 1, 9],
    ['{\n  "a": 1\n  "b": 2\n}', "expected ',' or '}' but found '\"'", 3, 3],
    ['[1, 2', "expected ',' or ']' but found end of input", 1, 6],
    ['{"a" 1}', "expected ':' after an object key but found '1'", 1, 6],
    ['"open', 'unterminated string', 1, 1],
    ['"a\nb"', 'line break inside a string', 1, 3],
    ['/* never closed', 'unterminated /* comment', 1, 1],
    ['[01]', 'numbers cannot have leading zeros', 1, 2],
    ['[truex]', "unexpected 't'", 1, 2],
    ['{} {}', "unexpected '{' after the end of the value", 1, 4],
    ['"\\x4"', 'invalid \\x escape', 1, 2],
    ['"\\01"', 'octal escapes are not allowed', 1, 2],
    ['"\\1"', 'digit escapes are not allowed', 1, 2],
    ['\r\n\r\n  @', "unexpected '@'", 3, 3],
  ])('reports %j as %s at line %i column %i', (text, message, line, column) => {
    const error = errorOf(text);
    expect(error.message).toContain(message);
    expect({ line: error.line, column: error.column }).toEqual({ line, column });
  });

  it('records source ranges of nodes and properties', () => {
    const text = '{ "Providers": [ { "models": ["a", "b"] } ] }';
    const result = parseJson5(text);
    if (!result.ok) throw new Error('parse failed');
    const providers = findJsonProperty(result.value, 'Providers')?.value;
    expect(providers?.type).toBe('array');
    if (providers?.type !== 'array' || providers.items[0] === undefined) throw new Error('no providers');
    const models = findJsonProperty(providers.items[0], 'models');
    expect(models && text.slice(models.start, models.value.end)).toBe('"models": ["a", "b"]');
    expect(providers && text.slice(providers.start, providers.end)).toBe('[ { "models": ["a", "b"] } ]');
    expect(findJsonProperty(providers, 'models')).toBeUndefined();
  });
});

describe('locateOffset', () => {
  it('counts CRLF as one line break and columns from 1', () => {
    expect(locateOffset('ab\r\ncd\nef', 8)).toEqual({ line: 3, column: 2 });
    expect(locateOffset('ab', 0)).toEqual({ line: 1, column: 1 });
  });
});
