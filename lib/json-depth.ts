/**
 * The nesting limit for JSON that comes from outside (request bodies, tool schemas, tool inputs), checked
 * before anything walks the value recursively: the bridge's converters, the MCP tool mirror, the transcript
 * renderer and the Cursor SDK all recurse, and a body nested a few thousand levels deep overflows the stack.
 *
 * Hand-written because no well-kept JSON parser for Node limits depth without giving up `JSON.parse`'s
 * speed: {@link findJsonTextDepthExcess} is one linear pass over the text (strings skipped with `indexOf`)
 * that runs before `JSON.parse`, so nothing deep is ever built. Both the tool host (`mcp/read-json-body.ts`,
 * the WebSocket transport) and the bridge (`src/protocols`) use it.
 */

/** The deepest nesting of objects and arrays accepted (the top-level value is depth 1). */
export const MAX_JSON_DEPTH = 64;

/** Where a value first nests deeper than the limit. */
export type JsonDepthExcess = {
  /** The dot path (keys and array indices, long paths elided in the middle) of the first too-deep container. */
  path: string;
  /** The limit that was crossed. */
  limit: number;
};

const maxKeyLength = 40;
const headSegments = 8;
const tailSegments = 2;

const clipKey = (key: string): string => (key.length > maxKeyLength ? `${key.slice(0, maxKeyLength)}…` : key);

/** `a.b.0.c`; over ten segments, the first eight, `…`, and the last two. */
const formatPath = (segments: readonly string[]): string => {
  const clipped = segments.map(clipKey);
  if (clipped.length <= headSegments + tailSegments) return clipped.join('.');
  return [...clipped.slice(0, headSegments), '…', ...clipped.slice(-tailSegments)].join('.');
};

const quote = 0x22;
const backslash = 0x5c;
const openBrace = 0x7b;
const closeBrace = 0x7d;
const openBracket = 0x5b;
const closeBracket = 0x5d;
const comma = 0x2c;
const objectKind = 1;
const arrayKind = 2;

/** The index of the quote that closes the string opened at `start`, or -1 when it is unterminated. */
const closingQuote = (text: string, start: number): number => {
  let end = text.indexOf('"', start + 1);
  while (end !== -1) {
    let escapes = 0;
    for (let back = end - 1; text.charCodeAt(back) === backslash; back--) escapes++;
    if (escapes % 2 === 0) return end;
    end = text.indexOf('"', end + 1);
  }
  return -1;
};

const decodeKey = (text: string, start: number, end: number): string => {
  try {
    return String(JSON.parse(text.slice(start, end)));
  } catch {
    return text.slice(start + 1, end - 1);
  }
};

/**
 * Where the JSON `text` first nests objects/arrays deeper than `limit`, or `undefined` when it does not.
 * One pass, O(length) time and O(limit) memory; brackets inside strings do not count. Text that is not
 * JSON gets no verdict beyond depth (`JSON.parse` reports its syntax afterwards).
 */
export const findJsonTextDepthExcess = (
  text: string,
  limit: number = MAX_JSON_DEPTH,
): JsonDepthExcess | undefined => {
  // Per open level (1-based): object or array, the current array index, the current key's quoted span.
  const kinds = new Uint8Array(limit + 2);
  const indices = new Uint32Array(limit + 2);
  const keyStarts = new Int32Array(limit + 2).fill(-1);
  const keyEnds = new Int32Array(limit + 2);
  let depth = 0;
  let expectKey = false;
  const { length } = text;
  for (let index = 0; index < length; index++) {
    const code = text.charCodeAt(index);
    if (code === quote) {
      const end = closingQuote(text, index);
      if (end === -1) return undefined;
      if (expectKey) {
        keyStarts[depth] = index;
        keyEnds[depth] = end + 1;
        expectKey = false;
      }
      index = end;
    } else if (code === openBrace || code === openBracket) {
      if (depth === limit) {
        const segments: string[] = [];
        for (let level = 1; level <= depth; level++) {
          const start = keyStarts[level] ?? -1;
          segments.push(
            kinds[level] === arrayKind
              ? String(indices[level])
              : start === -1
                ? '?'
                : decodeKey(text, start, keyEnds[level] ?? start),
          );
        }
        return { path: formatPath(segments), limit };
      }
      depth++;
      kinds[depth] = code === openBrace ? objectKind : arrayKind;
      indices[depth] = 0;
      keyStarts[depth] = -1;
      expectKey = code === openBrace;
    } else if (code === closeBrace || code === closeBracket) {
      if (depth > 0) depth--;
      expectKey = false;
    } else if (code === comma) {
      if (kinds[depth] === arrayKind) indices[depth] = (indices[depth] ?? 0) + 1;
      else if (kinds[depth] === objectKind) expectKey = true;
    }
  }
  return undefined;
};

type Frame = { value: object; depth: number; parent: Frame | undefined; segment: string };

/**
 * The same verdict for a value that is already parsed (objects handed over in-process, as CCR does):
 * an iterative walk, no recursion, stopping at the first container deeper than `limit`. Shared references
 * are walked once per path, like `JSON.stringify` would; a cycle is reported as too deep.
 */
export const findValueDepthExcess = (
  value: unknown,
  limit: number = MAX_JSON_DEPTH,
): JsonDepthExcess | undefined => {
  if (typeof value !== 'object' || value === null) return undefined;
  const stack: Frame[] = [{ value, depth: 1, parent: undefined, segment: '' }];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    if (frame.depth > limit) {
      const segments: string[] = [];
      for (let at: Frame | undefined = frame; at?.parent !== undefined; at = at.parent)
        segments.push(at.segment);
      return { path: formatPath(segments.reverse()), limit };
    }
    const entries: Array<[string, unknown]> = Array.isArray(frame.value)
      ? frame.value.map((item, index) => [String(index), item])
      : Object.entries(frame.value);
    for (let index = entries.length - 1; index >= 0; index--) {
      const [segment, child] = entries[index] as [string, unknown];
      if (typeof child === 'object' && child !== null) {
        stack.push({ value: child, depth: frame.depth + 1, parent: frame, segment });
      }
    }
  }
  return undefined;
};

/** The sentence every protocol's 400 carries after the path. */
export const describeDepthExcess = (excess: JsonDepthExcess): string =>
  `JSON nested deeper than ${excess.limit} levels (the bridge's limit for objects and arrays)`;
