/**
 * Minimal text edits on a JSON5 document, located with the project's source-mapped parser, so that
 * every byte outside the edit stays as the user wrote it: comments, key order, quoting, trailing
 * commas, compact one-line objects.
 *
 * Hand-written on purpose: `jsonc-parser`'s `modify` (the usual library) re-formats the lines of the
 * neighbouring sibling when it inserts (adding a key after `"Router": { "default": "a,b" }` rewrites
 * that object over three lines), inserts one-line compact JSON when not asked to format, and refuses
 * JSON5-only syntax (unquoted keys, single quotes) that CCR itself accepts.
 */
import type { JsonNode } from '../../../config/parse-json5.js';

type ObjectNode = Extract<JsonNode, { type: 'object' }>;
type ArrayNode = Extract<JsonNode, { type: 'array' }>;

/** The file's line ending and indentation unit, inferred once from its text. */
export type TextLayout = { eol: string; indentUnit: string };

/** CRLF if the file uses it; tabs if any line is indented with one, else the smallest space indent (default 2). */
export const inferLayout = (text: string): TextLayout => {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  if (/^\t/m.test(text)) return { eol, indentUnit: '\t' };
  const widths = [...text.matchAll(/^( +)\S/gm)].map((match) => match[1]?.length ?? 0);
  const smallest = widths.length === 0 ? 2 : Math.min(...widths);
  return { eol, indentUnit: ' '.repeat(Math.min(Math.max(smallest, 1), 8)) };
};

const splice = (text: string, start: number, end: number, insert: string): string =>
  text.slice(0, start) + insert + text.slice(end);

/** The leading whitespace of the line holding `offset`. */
const lineIndent = (text: string, offset: number): string => {
  const lineStart = Math.max(text.lastIndexOf('\n', offset - 1) + 1, 0);
  return /^[ \t]*/.exec(text.slice(lineStart))?.[0] ?? '';
};

const isPrimitive = (value: unknown): boolean => typeof value !== 'object' || value === null;

/**
 * `value` as JSON spread over lines (objects one member per line, arrays of primitives on one line,
 * as people write CCR configs), continuation lines indented from `baseIndent`.
 */
const formatBlock = (value: unknown, baseIndent: string, layout: TextLayout): string => {
  if (isPrimitive(value) || (Array.isArray(value) && value.every(isPrimitive))) return formatInline(value);
  const inner = baseIndent + layout.indentUnit;
  const members = Array.isArray(value)
    ? value.map((item) => formatBlock(item, inner, layout))
    : Object.entries(value as object).map(
        ([key, item]) => `${JSON.stringify(key)}: ${formatBlock(item, inner, layout)}`,
      );
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  if (members.length === 0) return `${open}${close}`;
  return `${open}${layout.eol}${inner}${members.join(`,${layout.eol}${inner}`)}${layout.eol}${baseIndent}${close}`;
};

/** `value` as one line: `{ "a": 1, "b": ["x", "y"] }`. */
export const formatInline = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(formatInline).join(', ')}]`;
  if (typeof value === 'object' && value !== null) {
    const members = Object.entries(value).map(
      ([key, item]) => `${JSON.stringify(key)}: ${formatInline(item)}`,
    );
    return members.length === 0 ? '{}' : `{ ${members.join(', ')} }`;
  }
  return JSON.stringify(value);
};

/**
 * What follows a member on its own line: an optional comma, then an optional comment that ends the
 * line. A new member goes after that comment, so the comment stays with the member it described.
 */
const scanMemberTail = (text: string, end: number): { comma?: number; lineEnd: number } => {
  let position = end;
  const skipBlanks = (): void => {
    while (text[position] === ' ' || text[position] === '\t') position += 1;
  };
  skipBlanks();
  let comma: number | undefined;
  if (text[position] === ',') {
    comma = position;
    position += 1;
    skipBlanks();
  }
  const afterComma = position;
  if (text.startsWith('//', position)) {
    while (position < text.length && text[position] !== '\n' && text[position] !== '\r') position += 1;
  } else if (text.startsWith('/*', position)) {
    const close = text.indexOf('*/', position + 2);
    const block = close < 0 ? '' : text.slice(position, close + 2);
    if (block !== '' && !block.includes('\n')) position = close + 2;
  }
  // Only a comment that ends the line counts as the member's own.
  const rest = text.slice(position, position + 2);
  const lineEnd =
    rest.startsWith('\n') || rest.startsWith('\r') || position >= text.length ? position : afterComma;
  return { ...(comma === undefined ? {} : { comma }), lineEnd };
};

/**
 * Inserts `member` (a property `"key": value` or an array item, in both layouts) as the last member
 * of `container`. Multi-line containers get a new line at the last member's indentation (keeping a
 * trailing-comma style); one-line containers get `, member` inline.
 */
const appendMember = (
  text: string,
  container: ObjectNode | ArrayNode,
  members: { firstStart: number; lastStart: number; lastEnd: number },
  member: { inline: string; block: (indent: string) => string },
  layout: TextLayout,
): string => {
  const last = { start: members.lastStart, end: members.lastEnd };
  // The container's style is set by its first member: on the bracket's line means one-line.
  const multiLine = text.slice(container.start, members.firstStart).includes('\n');
  const tail = scanMemberTail(text, last.end);
  if (!multiLine) {
    const insertAt = tail.comma === undefined ? last.end : tail.comma + 1;
    return splice(
      text,
      insertAt,
      insertAt,
      tail.comma === undefined ? `, ${member.inline}` : ` ${member.inline},`,
    );
  }
  const indent = lineIndent(text, last.start);
  const line = `${layout.eol}${indent}${member.block(indent)}`;
  if (tail.comma !== undefined) return splice(text, tail.lineEnd, tail.lineEnd, `${line},`);
  // Two splices, the later offset first: the comma after the value, the member after the line's comment.
  const withMember = splice(text, tail.lineEnd, tail.lineEnd, line);
  return splice(withMember, last.end, last.end, ',');
};

/** Replaces an empty `{}` / `[]` (which may hold comments) by one holding `member`, laid out on lines. */
const fillEmpty = (
  text: string,
  container: ObjectNode | ArrayNode,
  member: { inline: string; block: (indent: string) => string },
  layout: TextLayout,
): string => {
  const indent = lineIndent(text, container.start);
  const inner = text.slice(container.start + 1, container.end - 1);
  const lineStart = text.lastIndexOf('\n', container.start - 1) + 1;
  // Nested in a one-line structure (`{ "models": [] }`): stay on that line.
  if (inner.trim() === '' && /[[{,]/.test(text.slice(lineStart, container.start))) {
    return splice(text, container.start + 1, container.end - 1, member.inline);
  }
  if (inner.trim() !== '') {
    // Keep comments inside the empty container: insert the member right after the opening bracket.
    return splice(
      text,
      container.start + 1,
      container.start + 1,
      `${layout.eol}${indent}${layout.indentUnit}${member.block(indent + layout.indentUnit)}`,
    );
  }
  const open = text[container.start] ?? '{';
  const close = text[container.end - 1] ?? '}';
  return splice(
    text,
    container.start,
    container.end,
    `${open}${layout.eol}${indent}${layout.indentUnit}${member.block(indent + layout.indentUnit)}${layout.eol}${indent}${close}`,
  );
};

/** Adds `"key": value` as the last property of `object`. */
export const insertProperty = (
  text: string,
  object: ObjectNode,
  key: string,
  value: unknown,
  layout: TextLayout,
): string => {
  const name = JSON.stringify(key);
  const member = {
    inline: `${name}: ${formatInline(value)}`,
    block: (indent: string): string => `${name}: ${formatBlock(value, indent, layout)}`,
  };
  const first = object.properties[0];
  const last = object.properties.at(-1);
  if (first === undefined || last === undefined) return fillEmpty(text, object, member, layout);
  return appendMember(
    text,
    object,
    { firstStart: first.start, lastStart: last.start, lastEnd: last.value.end },
    member,
    layout,
  );
};

/** Adds `value` as the last item of `array`. */
export const appendItem = (text: string, array: ArrayNode, value: unknown, layout: TextLayout): string => {
  const member = {
    inline: formatInline(value),
    block: (indent: string): string => formatBlock(value, indent, layout),
  };
  const first = array.items[0];
  const last = array.items.at(-1);
  if (first === undefined || last === undefined) return fillEmpty(text, array, member, layout);
  return appendMember(
    text,
    array,
    { firstStart: first.start, lastStart: last.start, lastEnd: last.end },
    member,
    layout,
  );
};

/** Replaces one value (a string, say) in place. */
export const replaceValue = (text: string, node: JsonNode, value: unknown): string =>
  splice(text, node.start, node.end, formatInline(value));
