import { describe, expect, it } from 'vitest';
import {
  assertTemplateNames,
  compileTemplate,
  encodeTemplateJson,
  renderTemplate,
  TemplateRenderError,
} from '../../src/workspace/template-renderer.js';

const render = (source: string, context: Record<string, string | boolean>): string =>
  renderTemplate('t.md', source, context);

describe('renderTemplate', () => {
  it('substitutes values verbatim', () => {
    expect(
      render('root is {{root}} on {{ platform }}.', { root: '/home/a b/<x> & *y*', platform: 'linux' }),
    ).toBe('root is /home/a b/<x> & *y* on linux.');
  });

  it('renders if/else sections, nested, on truthy booleans and non-empty strings', () => {
    const source = '{{#if a}}A{{#if b}}B{{else}}!B{{/if}}{{else}}!A{{/if}}';
    expect(render(source, { a: true, b: 'x' })).toBe('AB');
    expect(render(source, { a: 'yes', b: '' })).toBe('A!B');
    expect(render(source, { a: false, b: true })).toBe('!A');
  });

  it('drops the whole line of a block tag that stands alone on it', () => {
    const source = 'one\n{{#if a}}\ntwo\n  {{else}}\nthree\n{{/if}}\nfour\n';
    expect(render(source, { a: true })).toBe('one\ntwo\nfour\n');
    expect(render(source, { a: false })).toBe('one\nthree\nfour\n');
  });

  it('JSON-encodes with {{json}}, consuming surrounding quotes and escaping slashes', () => {
    const context = { message: 'say "hi"\n/root\\x \u2028', command: "'/usr/bin/node' 'a b'" };
    const json = render('{"command": "{{json command}}", "m": {{json message}}}', context);
    expect(JSON.parse(json)).toEqual({ command: context.command, m: context.message });
    expect(json).not.toContain('//');
    expect(json).toContain('\\/usr\\/bin\\/node');
    const js = render("const MESSAGE = '{{json message}}';", context);
    expect(new Function(`${js}; return MESSAGE;`)()).toBe(context.message);
  });

  it('keeps quotes that do not match around {{json}}', () => {
    expect(render(`"{{json a}}'`, { a: 'x' })).toBe(`""x"'`);
  });

  it('encodes line separators so the output is also a valid JavaScript literal', () => {
    expect(encodeTemplateJson('a\u2028b/c')).toBe('"a\\u2028b\\/c"');
  });

  it.each([
    ['an unknown placeholder', 'hello {{nobody}}', /unknown placeholder "nobody"/],
    ['an unknown tag', 'x {{> partial}}', /unknown tag/],
    ['code in a tag', '{{ root.toString() }}', /unknown tag/],
    ['an unclosed tag', 'x {{root', /unclosed/],
    ['an unclosed if', '{{#if a}}x', /never closed/],
    ['a stray else', 'x{{else}}', /without an open/],
    ['a stray end', 'x{{/if}}', /without an open/],
  ])('rejects %s', (_label, source, message) => {
    expect(() => render(source, { root: '/r', a: true })).toThrow(message);
    expect(() => render(source, { root: '/r', a: true })).toThrow(TemplateRenderError);
  });

  it('reports line and column of the problem', () => {
    try {
      render('line one\n  {{oops}}', {});
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(TemplateRenderError);
      expect((error as TemplateRenderError).line).toBe(2);
      expect((error as TemplateRenderError).column).toBe(3);
      expect((error as Error).message).toContain('t.md:2:3');
    }
  });

  it('checks referenced names against a known set without rendering', () => {
    const template = compileTemplate('x.md', '{{#if hasRoot}}{{root}}{{/if}} {{json other}}');
    expect(template.names).toEqual(['hasRoot', 'root', 'other']);
    expect(() => assertTemplateNames(template, new Set(['hasRoot', 'root', 'other']))).not.toThrow();
    expect(() => assertTemplateNames(template, new Set(['hasRoot', 'root']))).toThrow(
      /unknown placeholder "other"/,
    );
  });

  it('does not look names up on the prototype', () => {
    expect(() => render('{{constructor}}', {})).toThrow(/unknown placeholder/);
  });
});
