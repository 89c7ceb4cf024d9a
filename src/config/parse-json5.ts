/**
 * A small JSON5 parser that keeps source offsets, so config errors can name a line and column and
 * `model get` can splice one array without re-serializing the user's file. CCR reads config.json with
 * JSON5; this covers JSON5 except `\u` escapes inside unquoted keys: comments, trailing commas,
 * unquoted (Unicode identifier) keys, single-quoted strings with JSON5 escapes and line continuations,
 * hex / signed / leading- or trailing-dot numbers, `Infinity` and `NaN`.
 * @see https://spec.json5.org/
 */

import type { Result } from '../../lib/result.js';

export type JsonLiteral = string | number | boolean | null;

/** A parsed value with its source range `[start, end)` in UTF-16 code units. */
export type JsonNode =
  | { type: 'object'; start: number; end: number; properties: JsonProperty[] }
  | { type: 'array'; start: number; end: number; items: JsonNode[] }
  | { type: 'literal'; start: number; end: number; value: JsonLiteral };

/** One `key: value` member; `start` is where the key begins. */
export type JsonProperty = { key: string; start: number; value: JsonNode };

/** Where and why parsing stopped; `line` and `column` are 1-based. */
export type Json5SyntaxError = { message: string; offset: number; line: number; column: number };

/** The document's root node (its plain value: {@link convertJsonNodeToValue}), or where parsing stopped. */
export type ParseJson5Result = Result<JsonNode, Json5SyntaxError>;

class SyntaxFailure extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

const identifierStart = /[\p{ID_Start}$_]/u;
const identifierPart = /[\p{ID_Continue}$_\u200C\u200D]/u;
const whitespace = /[\s\uFEFF]/;
const bareLiteral =
  /true|false|null|[+-]?(?:Infinity|NaN)|[+-]?0[xX][0-9a-fA-F]+|[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/y;
const hexDigits = { x: /^[0-9a-fA-F]{2}$/, u: /^[0-9a-fA-F]{4}$/ } as const;
const lineTerminators = new Set(['\n', '\r', '\u2028', '\u2029']);
const simpleEscapes: Readonly<Record<string, string>> = {
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  '0': '\0',
};

/** The 1-based line and column of `offset` (CRLF counts as one line break). */
export const locateOffset = (text: string, offset: number): { line: number; column: number } => {
  let line = 1;
  let lineStart = 0;
  for (let index = 0; index < offset && index < text.length; index += 1) {
    const char = text[index];
    if (char === '\r' && text[index + 1] === '\n') continue;
    if (char !== undefined && lineTerminators.has(char)) {
      line += 1;
      lineStart = index + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
};

/** Parses JSON5 text into a source-mapped tree. Never throws. */
export const parseJson5 = (text: string): ParseJson5Result => {
  const parser = new Json5Parser(text);
  try {
    return { ok: true, value: parser.parseDocument() };
  } catch (error) {
    if (!(error instanceof SyntaxFailure)) throw error;
    return {
      ok: false,
      error: { message: error.message, offset: error.offset, ...locateOffset(text, error.offset) },
    };
  }
};

/** The plain JS value of a node. Duplicate keys: the last one wins, as in `JSON.parse`. */
export const convertJsonNodeToValue = (node: JsonNode): unknown => {
  switch (node.type) {
    case 'literal':
      return node.value;
    case 'array':
      return node.items.map(convertJsonNodeToValue);
    case 'object': {
      const result: Record<string, unknown> = {};
      for (const property of node.properties) {
        // defineProperty: a `__proto__` key must become an own property, not the prototype.
        Object.defineProperty(result, property.key, {
          value: convertJsonNodeToValue(property.value),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      return result;
    }
    default: {
      const _exhaustive: never = node;
      return _exhaustive;
    }
  }
};

/** The member of an object node named `key` (the last one when duplicated), if any. */
export const findJsonProperty = (node: JsonNode, key: string): JsonProperty | undefined =>
  node.type === 'object' ? node.properties.findLast((property) => property.key === key) : undefined;

class Json5Parser {
  private position = 0;

  constructor(private readonly text: string) {}

  parseDocument(): JsonNode {
    this.skipTrivia();
    if (this.position >= this.text.length) this.fail('empty document: expected a JSON value');
    const root = this.parseValue();
    this.skipTrivia();
    if (this.position < this.text.length)
      this.fail(`unexpected ${this.describe()} after the end of the value`);
    return root;
  }

  private parseValue(): JsonNode {
    const char = this.text[this.position];
    if (char === '{') return this.parseObject();
    if (char === '[') return this.parseArray();
    const start = this.position;
    const value = char === '"' || char === "'" ? this.parseString() : this.parseBareLiteral();
    return { type: 'literal', start, end: this.position, value };
  }

  private parseObject(): JsonNode {
    const start = this.position;
    this.position += 1;
    const properties: JsonProperty[] = [];
    for (;;) {
      this.skipTrivia();
      if (this.peekIs('}')) break;
      const keyStart = this.position;
      const key = this.parseKey();
      this.skipTrivia();
      this.expect(':', 'after an object key');
      this.skipTrivia();
      properties.push({ key, start: keyStart, value: this.parseValue() });
      this.skipTrivia();
      if (this.peekIs(',')) {
        this.position += 1;
        continue;
      }
      if (!this.peekIs('}')) this.fail(`expected ',' or '}' but found ${this.describe()}`);
    }
    this.position += 1;
    return { type: 'object', start, end: this.position, properties };
  }

  private parseArray(): JsonNode {
    const start = this.position;
    this.position += 1;
    const items: JsonNode[] = [];
    for (;;) {
      this.skipTrivia();
      if (this.peekIs(']')) break;
      items.push(this.parseValue());
      this.skipTrivia();
      if (this.peekIs(',')) {
        this.position += 1;
        continue;
      }
      if (!this.peekIs(']')) this.fail(`expected ',' or ']' but found ${this.describe()}`);
    }
    this.position += 1;
    return { type: 'array', start, end: this.position, items };
  }

  private parseKey(): string {
    const char = this.text[this.position];
    if (char === '"' || char === "'") return this.parseString();
    if (char === undefined || !identifierStart.test(char))
      this.fail(`expected an object key but found ${this.describe()}`);
    const start = this.position;
    this.position += 1;
    while (this.position < this.text.length && identifierPart.test(this.text[this.position] ?? ''))
      this.position += 1;
    return this.text.slice(start, this.position);
  }

  private parseString(): string {
    const quote = this.text[this.position];
    const start = this.position;
    this.position += 1;
    let result = '';
    for (;;) {
      const char = this.text[this.position];
      if (char === undefined) this.fail('unterminated string', start);
      if (char === quote) break;
      if (char === '\n' || char === '\r') this.fail('line break inside a string (escape it as \\n)');
      if (char === '\\') {
        result += this.parseEscape();
        continue;
      }
      result += char;
      this.position += 1;
    }
    this.position += 1;
    return result;
  }

  private parseEscape(): string {
    const escapeStart = this.position;
    this.position += 1;
    const char = this.text[this.position];
    if (char === undefined) this.fail('unterminated string');
    this.position += 1;
    if (char === '\r' && this.text[this.position] === '\n') this.position += 1;
    if (lineTerminators.has(char)) return '';
    if (char === '0' && /[0-9]/.test(this.text[this.position] ?? ''))
      this.fail('octal escapes are not allowed', escapeStart);
    const simple = simpleEscapes[char];
    if (simple !== undefined) return simple;
    if (char === 'x' || char === 'u') {
      const length = char === 'x' ? 2 : 4;
      const digits = this.text.slice(this.position, this.position + length);
      if (!hexDigits[char].test(digits)) this.fail(`invalid \\${char} escape`, escapeStart);
      this.position += length;
      return String.fromCharCode(Number.parseInt(digits, 16));
    }
    if (/[1-9]/.test(char)) this.fail('digit escapes are not allowed', escapeStart);
    return char;
  }

  private parseBareLiteral(): JsonLiteral {
    bareLiteral.lastIndex = this.position;
    const token = bareLiteral.exec(this.text)?.[0];
    if (token === undefined) this.fail(`unexpected ${this.describe()}`);
    const next = this.text[this.position + token.length];
    if (next !== undefined && identifierPart.test(next)) this.fail(`unexpected ${this.describe()}`);
    if (/^[+-]?0\d/.test(token)) this.fail('numbers cannot have leading zeros');
    this.position += token.length;
    if (token === 'true') return true;
    if (token === 'false') return false;
    if (token === 'null') return null;
    const sign = token.startsWith('-') ? -1 : 1;
    const unsigned = token.replace(/^[+-]/, '');
    if (unsigned === 'Infinity') return sign * Infinity;
    if (unsigned === 'NaN') return NaN;
    return sign * (/^0[xX]/.test(unsigned) ? Number.parseInt(unsigned.slice(2), 16) : Number(unsigned));
  }

  private skipTrivia(): void {
    for (;;) {
      const char = this.text[this.position];
      if (char !== undefined && whitespace.test(char)) {
        this.position += 1;
      } else if (char === '/' && this.text[this.position + 1] === '/') {
        while (this.position < this.text.length && !lineTerminators.has(this.text[this.position] ?? '')) {
          this.position += 1;
        }
      } else if (char === '/' && this.text[this.position + 1] === '*') {
        const close = this.text.indexOf('*/', this.position + 2);
        if (close < 0) this.fail('unterminated /* comment');
        this.position = close + 2;
      } else {
        return;
      }
    }
  }

  private peekIs(char: string): boolean {
    return this.text[this.position] === char;
  }

  private expect(char: string, context: string): void {
    if (!this.peekIs(char)) this.fail(`expected '${char}' ${context} but found ${this.describe()}`);
    this.position += 1;
  }

  private describe(): string {
    const char = this.text[this.position];
    return char === undefined ? 'end of input' : `'${char}'`;
  }

  private fail(message: string, offset = this.position): never {
    throw new SyntaxFailure(message, offset);
  }
}
