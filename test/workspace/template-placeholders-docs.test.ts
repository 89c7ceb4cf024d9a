/**
 * The placeholders come from one table in code (`template-placeholders.ts`), which the template check,
 * `cursor-bridge templates placeholders` and docs/templates.md all follow. The docs' table lists exactly the
 * code's placeholders, in its order, with the same kind, meaning and example.
 */

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildTemplateContext } from '../../src/workspace/template-context.js';
import { templatePlaceholders } from '../../src/workspace/template-placeholders.js';
import { repoRoot } from '../helpers/repo-root.js';

/** The rows of the table under `## Placeholders`, as [placeholder, kind, meaning, example] cells. */
const docsRows = async (): Promise<string[][]> => {
  const text = await readFile(join(repoRoot, 'docs', 'templates.md'), 'utf8');
  const section = text.split(/^## /m).find((part) => part.startsWith('Placeholders\n')) ?? '';
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) =>
      line
        .slice(1, -1)
        .split('|')
        .map((cell) => cell.trim()),
    );
};

describe('the placeholder table', () => {
  it('docs/templates.md lists every placeholder of the code, with its kind, meaning and example', async () => {
    expect(await docsRows()).toEqual(
      templatePlaceholders.map(({ name, kind, meaning, example }) => [
        `\`${name}\``,
        kind,
        meaning,
        example
          .split('\n')
          .map((line) => `\`${line}\``)
          .join('<br>'),
      ]),
    );
  });

  it('gives every placeholder a value of its kind in every rendering context', () => {
    const context = buildTemplateContext(undefined);
    expect(Object.keys(context).sort()).toEqual(templatePlaceholders.map(({ name }) => name).sort());
    for (const { name, kind, example } of templatePlaceholders) {
      expect(typeof context[name], name).toBe(kind === 'flag' ? 'boolean' : 'string');
      if (kind === 'flag') expect(['true', 'false'], name).toContain(example);
    }
  });
});
