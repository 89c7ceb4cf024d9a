/**
 * The documentation's links hold, in the repository and in the published package:
 * - every relative link in a tracked Markdown file names a file that exists, and a `#fragment` names a heading
 *   (GitHub's anchor for it) or an explicit anchor of the target;
 * - every relative link in a Markdown file the package ships names a file the package ships too, so the README
 *   and the docs read the same from `node_modules/cursor-bridge` as on GitHub.
 *
 * The package's file list is `npm pack --dry-run --json`, what `npm publish` would upload.
 */

import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { existsSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';

import { repoRoot } from '../helpers/repo-root.js';

const run = promisify(execFile);

type MarkdownLink = { line: number; target: string };

/** Fenced code blocks and inline code hold commands and examples, not links. */
const withoutCode = (markdown: string): string =>
  markdown
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, (block) => block.replace(/[^\n]/g, ' '))
    .replace(/`[^`\n]*`/g, (code) => ' '.repeat(code.length));

const linksOf = (markdown: string): MarkdownLink[] => {
  const links: MarkdownLink[] = [];
  withoutCode(markdown)
    .split('\n')
    .forEach((text, index) => {
      for (const match of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
        links.push({ line: index + 1, target: match[1] ?? '' });
      }
      const reference = /^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/.exec(text);
      if (reference?.[1] !== undefined) links.push({ line: index + 1, target: reference[1] });
    });
  return links;
};

const isExternal = (target: string): boolean => /^[a-z][a-z0-9+.-]*:/i.test(target);

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
const anchorsOf = (markdown: string): Set<string> => {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const text = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const [, heading] of text.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = (heading ?? '')
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]+>/g, '')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  for (const [, id] of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id ?? '');
  return anchors;
};

type Problem = string;

/** Every relative link of `file` (a repository path) that does not resolve, as `file:line → target (why)`. */
const brokenLinks = async (file: string, exists: (path: string) => boolean): Promise<Problem[]> => {
  const markdown = await readFile(join(repoRoot, file), 'utf8');
  const problems: Problem[] = [];
  for (const { line, target } of linksOf(markdown)) {
    if (isExternal(target)) continue;
    const [pathPart = '', fragment] = target.split('#', 2);
    const path = pathPart === '' ? file : normalize(join(dirname(file), decodeURIComponent(pathPart)));
    const where = `${file}:${line} → ${target}`;
    if (path.startsWith('..')) {
      problems.push(`${where} (outside the repository)`);
      continue;
    }
    if (!exists(path)) {
      problems.push(`${where} (no such file)`);
      continue;
    }
    if (fragment !== undefined && fragment !== '' && path.endsWith('.md')) {
      const anchors = anchorsOf(await readFile(join(repoRoot, path), 'utf8'));
      if (!anchors.has(fragment.toLowerCase()))
        problems.push(`${where} (no heading "#${fragment}" in ${path})`);
    }
  }
  return problems;
};

describe('Markdown links', () => {
  let tracked: string[] = [];
  let packed = new Set<string>();

  beforeAll(async () => {
    const listed = await run('git', ['ls-files', '-z', '--', '*.md'], { cwd: repoRoot });
    tracked = listed.stdout
      .split('\0')
      .filter(
        (file) => file !== '' && !file.startsWith('test/fixtures/') && existsSync(join(repoRoot, file)),
      );
    const pack = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: repoRoot,
      maxBuffer: 64 * 1024 * 1024,
    });
    const [manifest] = JSON.parse(pack.stdout) as [{ files: { path: string }[] }];
    packed = new Set(manifest.files.map((entry) => entry.path));
  }, 120_000);

  it('finds the Markdown files and the packed ones', () => {
    expect(tracked).toContain('README.md');
    expect(tracked).toContain('ARCHITECTURE.md');
    expect(packed.has('README.md')).toBe(true);
  });

  it('every relative link in the repository names a file and heading that exist', async () => {
    const onDisk = (path: string): boolean => existsSync(join(repoRoot, path));
    const problems = (await Promise.all(tracked.map((file) => brokenLinks(file, onDisk)))).flat();
    expect(problems).toEqual([]);
  });

  it('every relative link in a shipped Markdown file names a shipped file', async () => {
    const shipped = (path: string): boolean => {
      if (packed.has(path)) return true;
      const prefix = `${relative('.', path)}/`;
      return (
        existsSync(join(repoRoot, path)) &&
        statSync(join(repoRoot, path)).isDirectory() &&
        [...packed].some((file) => file.startsWith(prefix))
      );
    };
    const shippedMarkdown = [...packed].filter((file) => file.endsWith('.md'));
    const problems = (await Promise.all(shippedMarkdown.map((file) => brokenLinks(file, shipped)))).flat();
    expect(problems).toEqual([]);
  });
});
