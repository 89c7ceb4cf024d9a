/**
 * ARCHITECTURE.md's "The path of a tool call" names every production file (`src/`, `mcp/`, `lib/`) that
 * reads or writes a host tool call's id, and no file that does not exist: a name under `test/` is a
 * test's path; any other is a production file's name, or the end of its path, and matches exactly one.
 *
 * A file carries the id when its code — identifiers, property names, string literals, not its comments —
 * spells one of the id's names: `toolCallId` in camelCase or snake_case, as a word of a longer name too
 * (`parkedToolCallIds`, `TOOL_CALL_ID_META_KEY`), the wire field `tool_use_id`, or the Responses API's
 * `call_id`. The code is read with TypeScript's parser.
 */

import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/repo-root.js';

/**
 * Whether a name or string spells the id: its words (camelCase and snake_case alike) hold `tool call id(s)`
 * or `tool use id`, or it is the Responses API's `call_id`.
 */
const spellsIdName = (text: string): boolean =>
  text === 'call_id' ||
  /(^|[^a-z0-9])tool_(call|use)_ids?(?![a-z0-9])/.test(
    text.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase(),
  );

const productionFiles = async (): Promise<string[]> => {
  const files: string[] = [];
  for (const dir of ['src', 'mcp', 'lib']) {
    const entries = await readdir(join(repoRoot, dir), { withFileTypes: true, recursive: true });
    for (const entry of entries) {
      if (entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts'))
        files.push(relative(repoRoot, join(entry.parentPath, entry.name)));
    }
  }
  return files.sort();
};

/** Whether the code of `text` spells one of the id's names (see the file's header). */
const spellsTheId = (fileName: string, text: string): boolean => {
  // Parsed only when the text spells a name at all (in a comment, perhaps).
  if (!/toolcallid|tool_call_id|tool_use_id|call_id/i.test(text)) return false;
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const visit = (node: ts.Node): boolean => {
    if (
      (ts.isIdentifier(node) ||
        ts.isPrivateIdentifier(node) ||
        ts.isStringLiteralLike(node) ||
        ts.isTemplateLiteralToken(node)) &&
      spellsIdName(node.text)
    )
      return true;
    return ts.forEachChild(node, visit) ?? false;
  };
  return visit(source);
};

/** The `.ts` files the section names in code spans, as written (a file name, or the end of its path). */
const namedInSection = (architecture: string, heading: string): string[] => {
  const start = architecture.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`ARCHITECTURE.md has no section "${heading}"`);
  const end = architecture.indexOf('\n## ', start + heading.length + 2);
  const section = architecture.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/`([^`\s]+\.ts)`/g)].flatMap((match) =>
    match[1] === undefined ? [] : [match[1]],
  );
};

const names = (name: string, file: string): boolean => file === name || file.endsWith(`/${name}`);

describe("ARCHITECTURE.md's files of the tool call id", () => {
  it('sees the id in names, properties and strings, not in comments', () => {
    expect(spellsTheId('a.ts', 'const parkedToolCallIds: string[] = [];')).toBe(true);
    expect(spellsTheId('a.ts', "const field = { tool_use_id: 'x' }.tool_use_id;")).toBe(true);
    expect(spellsTheId('a.ts', "const key = 'call_id';")).toBe(true);
    expect(spellsTheId('a.ts', 'const text = `${call.toolCallId}`;')).toBe(true);
    expect(spellsTheId('a.ts', '// broker.resolve(toolCallId, result)\nconst callId = 1;')).toBe(false);
    expect(
      spellsTheId('a.ts', '/** the `toolCallId` */ const toolCallIdentity = "tool_call_identity";'),
    ).toBe(false);
    expect(spellsTheId('a.ts', "const key = 'TOOL_CALL_ID_META_KEY';")).toBe(true);
  });

  it('names every production file that reads or writes the id, and only files that exist', async () => {
    const files = await productionFiles();
    const named = namedInSection(
      await readFile(join(repoRoot, 'ARCHITECTURE.md'), 'utf8'),
      '## The path of a tool call',
    );
    const carrying: string[] = [];
    for (const file of files) {
      if (spellsTheId(file, await readFile(join(repoRoot, file), 'utf8'))) carrying.push(file);
    }
    // The check sees the id: the files that hold its records and park it always spell it.
    expect(carrying).toEqual(
      expect.arrayContaining(['src/upstream/tool-call-ledger.ts', 'mcp/parked-call-broker.ts']),
    );
    const unnamed = carrying.filter((file) => !named.some((name) => names(name, file)));
    expect(unnamed, 'files that carry the id but are not named').toEqual([]);
    const unresolved = named.filter((name) =>
      name.startsWith('test/')
        ? !existsSync(join(repoRoot, name))
        : files.filter((file) => names(name, file)).length !== 1,
    );
    expect(unresolved, 'names that match no file, or more than one production file').toEqual([]);
  });
});
