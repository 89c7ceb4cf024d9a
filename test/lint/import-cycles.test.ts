/**
 * No import cycles in the production code (`src/`, `mcp/`, `lib/`): every module's imports, type-only ones
 * included, form a graph without cycles, so each folder can be read from its dependencies up. The imports
 * are read with TypeScript's own pre-processor; the cycles are the graph's strongly connected components.
 */

import { mkdtemp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/repo-root.js';

const sourceFiles = async (dir: string): Promise<string[]> => {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
};

/** Each file's relative imports and re-exports that resolve to another file of the set. */
const importGraph = async (files: readonly string[]): Promise<Map<string, string[]>> => {
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(await readFile(file, 'utf8'), true, true);
    const targets = importedFiles
      .map(({ fileName }) => fileName)
      .filter((name) => name.startsWith('.'))
      .map((name) => resolve(dirname(file), name.replace(/\.js$/, '.ts')))
      .filter((target) => existsSync(target));
    graph.set(file, targets);
  }
  return graph;
};

/** The cycles of `graph`: its strongly connected components of more than one file, or a self-import. */
const findCycles = (graph: ReadonlyMap<string, readonly string[]>): string[][] => {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file) ?? 0);
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file) ?? 0, low.get(target) ?? 0));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file) ?? 0, index.get(target) ?? 0));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
      onStack.delete(member);
      component.push(member);
      if (member === file) break;
    }
    if (component.length > 1 || (graph.get(file) ?? []).includes(file)) cycles.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return cycles;
};

const cyclesUnder = async (root: string, folders: readonly string[]): Promise<string[][]> => {
  const files = (await Promise.all(folders.map((folder) => sourceFiles(join(root, folder))))).flat();
  return findCycles(await importGraph(files)).map((cycle) => cycle.map((file) => relative(root, file)));
};

describe('import cycles', () => {
  it('finds a cycle, type-only imports and re-exports included', async () => {
    const root = await mkdtemp(join(tmpdir(), 'cursor-bridge-cycles-'));
    try {
      await mkdir(join(root, 'src', 'a'), { recursive: true });
      await writeFile(join(root, 'src', 'a', 'one.ts'), "import type { Two } from './two.js';\n");
      await writeFile(join(root, 'src', 'a', 'two.ts'), "export { one } from '../three.js';\n");
      await writeFile(join(root, 'src', 'three.ts'), "import { x } from './a/one.js';\n");
      await writeFile(join(root, 'src', 'leaf.ts'), "import { x } from './three.js';\n");
      expect(await cyclesUnder(root, ['src'])).toEqual([['src/a/one.ts', 'src/a/two.ts', 'src/three.ts']]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('src/, mcp/ and lib/ have none', async () => {
    expect(await cyclesUnder(repoRoot, ['src', 'mcp', 'lib'])).toEqual([]);
  });
});
