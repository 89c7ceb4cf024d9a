/**
 * A deliberately tiny template language for the workspace templates. It never executes code:
 *
 * - `{{name}}` inserts the value verbatim (host facts go into Markdown as reported);
 * - `{{json name}}` inserts `JSON.stringify(value)`, with `/` written as `\/` (the SDK strips `//…`
 *   "comments" from hooks.json with a naive regex before parsing) and U+2028/U+2029 escaped, so the
 *   result is a valid JSON and JavaScript string literal. When the tag sits directly between a pair of
 *   matching quotes (`"{{json name}}"` or `'{{json name}}'`) the quotes are consumed, which keeps a JSON
 *   or JavaScript template syntactically valid (and formatter-friendly) before it is rendered;
 * - `{{#if name}}…{{else}}…{{/if}}` (nestable; `else` optional) keeps a section when the value is
 *   `true` or a non-empty string. A block tag alone on its line removes that whole line.
 *
 * Anything else between `{{` and `}}`, an unbalanced block, or a name missing from the context is a
 * {@link TemplateRenderError}: a broken template, never a half-rendered file.
 */

/** A value a template can reference. */
export type TemplateValue = string | boolean;

/** The names a template may reference, with their values. */
export type TemplateContext = Readonly<Record<string, TemplateValue>>;

/** A template that failed to compile or render; `line`/`column` are 1-based positions in the source. */
export class TemplateRenderError extends Error {
  override readonly name = 'TemplateRenderError';
  readonly templateName: string;
  readonly line: number | undefined;
  readonly column: number | undefined;

  constructor(templateName: string, message: string, position?: { line: number; column: number }) {
    super(
      position === undefined
        ? `${templateName}: ${message}`
        : `${templateName}:${position.line}:${position.column}: ${message}`,
    );
    this.templateName = templateName;
    this.line = position?.line;
    this.column = position?.column;
  }
}

type TemplateNode =
  | { kind: 'text'; text: string }
  | { kind: 'value'; name: string; offset: number }
  | { kind: 'json'; name: string; offset: number }
  | { kind: 'if'; name: string; offset: number; then: TemplateNode[]; otherwise: TemplateNode[] };

/** A parsed template; render it any number of times. */
export type CompiledTemplate = {
  readonly name: string;
  readonly source: string;
  /** Every name the template references, in first-use order. */
  readonly names: readonly string[];
  readonly nodes: readonly TemplateNode[];
};

const namePattern = /^[A-Za-z][A-Za-z0-9_]*$/;

const positionOf = (source: string, offset: number): { line: number; column: number } => {
  let line = 1;
  let lineStart = 0;
  for (
    let index = source.indexOf('\n');
    index !== -1 && index < offset;
    index = source.indexOf('\n', index + 1)
  ) {
    line += 1;
    lineStart = index + 1;
  }
  return { line, column: offset - lineStart + 1 };
};

type Tag = { kind: 'value' | 'json' | 'if'; name: string } | { kind: 'else' } | { kind: 'end' };

const parseTag = (body: string): Tag | undefined => {
  const parts = body.trim().split(/\s+/);
  const [head, argument, extra] = parts;
  if (head === undefined || extra !== undefined) return undefined;
  if (argument === undefined) {
    if (head === 'else') return { kind: 'else' };
    if (head === '/if') return { kind: 'end' };
    return namePattern.test(head) ? { kind: 'value', name: head } : undefined;
  }
  if (!namePattern.test(argument)) return undefined;
  if (head === 'json') return { kind: 'json', name: argument };
  if (head === '#if') return { kind: 'if', name: argument };
  return undefined;
};

/** Whether the text between `from` and `to` holds only spaces and tabs. */
const blankBetween = (source: string, from: number, to: number): boolean => {
  for (let index = from; index < to; index += 1) {
    const char = source[index];
    if (char !== ' ' && char !== '\t') return false;
  }
  return true;
};

/**
 * Parse a template. Throws {@link TemplateRenderError} on a syntax error; names are checked against a
 * context only when rendering (or by {@link assertTemplateNames}).
 */
export const compileTemplate = (name: string, source: string): CompiledTemplate => {
  const fail = (message: string, offset: number): never => {
    throw new TemplateRenderError(name, message, positionOf(source, offset));
  };
  type Frame = { node: Extract<TemplateNode, { kind: 'if' }>; inElse: boolean };
  const root: TemplateNode[] = [];
  const stack: Frame[] = [];
  const names: string[] = [];
  const target = (): TemplateNode[] => {
    const frame = stack.at(-1);
    if (frame === undefined) return root;
    return frame.inElse ? frame.node.otherwise : frame.node.then;
  };
  const useName = (used: string): void => {
    if (!names.includes(used)) names.push(used);
  };

  let cursor = 0;
  let pendingText = '';
  const flushText = (): void => {
    if (pendingText !== '') target().push({ kind: 'text', text: pendingText });
    pendingText = '';
  };

  while (cursor < source.length) {
    const open = source.indexOf('{{', cursor);
    if (open === -1) {
      pendingText += source.slice(cursor);
      break;
    }
    const close = source.indexOf('}}', open + 2);
    if (close === -1) fail('unclosed "{{"', open);
    const tag = parseTag(source.slice(open + 2, close));
    if (tag === undefined) {
      fail(`unknown tag "${source.slice(open, close + 2)}"`, open);
      break;
    }
    let textEnd = open;
    let next = close + 2;

    if (tag.kind === 'json') {
      const before = source[open - 1];
      if ((before === '"' || before === "'") && source[next] === before) {
        textEnd = open - 1;
        next += 1;
      }
    }
    if (tag.kind === 'if' || tag.kind === 'else' || tag.kind === 'end') {
      // A block tag alone on its line takes the whole line with it.
      const lineStart = source.lastIndexOf('\n', open - 1) + 1;
      const newline = source.indexOf('\n', next);
      const lineEnd = newline === -1 ? source.length : newline;
      if (blankBetween(source, lineStart, open) && blankBetween(source, next, lineEnd)) {
        textEnd = Math.max(lineStart, cursor);
        next = newline === -1 ? source.length : newline + 1;
      }
    }
    pendingText += source.slice(cursor, textEnd);
    flushText();

    switch (tag.kind) {
      case 'value':
      case 'json':
        useName(tag.name);
        target().push({ kind: tag.kind, name: tag.name, offset: open });
        break;
      case 'if': {
        useName(tag.name);
        const node: Frame['node'] = { kind: 'if', name: tag.name, offset: open, then: [], otherwise: [] };
        target().push(node);
        stack.push({ node, inElse: false });
        break;
      }
      case 'else': {
        const frame = stack.at(-1);
        if (frame === undefined || frame.inElse) fail('"{{else}}" without an open "{{#if}}"', open);
        else frame.inElse = true;
        break;
      }
      case 'end':
        if (stack.pop() === undefined) fail('"{{/if}}" without an open "{{#if}}"', open);
        break;
      default: {
        const _exhaustive: never = tag;
        return _exhaustive;
      }
    }
    cursor = next;
  }
  flushText();
  const unclosed = stack.at(-1);
  if (unclosed !== undefined) fail(`"{{#if ${unclosed.node.name}}}" is never closed`, unclosed.node.offset);
  return { name, source, names, nodes: root };
};

/**
 * Throws {@link TemplateRenderError} naming the first referenced name that `known` lacks, at its first
 * use; `describe` words the message (default `unknown placeholder "name"`).
 */
export const assertTemplateNames = (
  template: CompiledTemplate,
  known: ReadonlySet<string>,
  describe: (name: string) => string = (name) => `unknown placeholder "${name}"`,
): void => {
  const unknown = template.names.find((used) => !known.has(used));
  if (unknown === undefined) return;
  const offset = template.source.search(new RegExp(`\\{\\{[^}]*\\b${unknown}\\b`));
  throw new TemplateRenderError(
    template.name,
    describe(unknown),
    offset === -1 ? undefined : positionOf(template.source, offset),
  );
};

/** JSON that is also safe inside a JavaScript string position and survives the SDK's `//` comment strip. */
export const encodeTemplateJson = (value: TemplateValue): string =>
  JSON.stringify(value).replace(/[/\u2028\u2029]/g, (char) =>
    char === '/' ? '\\/' : `\\u${char.charCodeAt(0).toString(16)}`,
  );

const truthy = (value: TemplateValue): boolean =>
  value === true || (typeof value === 'string' && value !== '');

/** Render a compiled template. Throws {@link TemplateRenderError} when a referenced name is missing. */
export const renderCompiledTemplate = (template: CompiledTemplate, context: TemplateContext): string => {
  const lookup = (used: string, offset: number): TemplateValue => {
    const value = Object.hasOwn(context, used) ? context[used] : undefined;
    if (value === undefined) {
      throw new TemplateRenderError(
        template.name,
        `unknown placeholder "${used}"`,
        positionOf(template.source, offset),
      );
    }
    return value;
  };
  const out: string[] = [];
  const walk = (nodes: readonly TemplateNode[]): void => {
    for (const node of nodes) {
      switch (node.kind) {
        case 'text':
          out.push(node.text);
          break;
        case 'value':
          out.push(String(lookup(node.name, node.offset)));
          break;
        case 'json':
          out.push(encodeTemplateJson(lookup(node.name, node.offset)));
          break;
        case 'if':
          walk(truthy(lookup(node.name, node.offset)) ? node.then : node.otherwise);
          break;
        default: {
          const _exhaustive: never = node;
          return _exhaustive;
        }
      }
    }
  };
  walk(template.nodes);
  return out.join('');
};

/** Compile and render in one step. Throws {@link TemplateRenderError} on any problem. */
export const renderTemplate = (name: string, source: string, context: TemplateContext): string =>
  renderCompiledTemplate(compileTemplate(name, source), context);
