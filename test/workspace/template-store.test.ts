import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildTemplateContext } from '../../src/workspace/template-context.js';
import { TemplateStore, templateNames } from '../../src/workspace/template-store.js';
import { resolveDefaultTemplateDir } from '../../src/workspace/workspace-paths.js';
import { createCapturingLogger, createTempDirs } from '../helpers/workspace-test-helpers.js';

const temp = createTempDirs();
afterEach(temp.cleanup);

const context = buildTemplateContext(
  {
    source: 'claude-code',
    facts: [{ key: 'Primary working directory', value: '/home/me/proj' }],
    root: '/home/me/proj',
  },
  { scratchDir: '/ws/0123456789abcdef0123456789abcdef' },
);

describe('TemplateStore', () => {
  it('loads every shipped default, and they render with any context', async () => {
    const store = await TemplateStore.load({ defaultDir: resolveDefaultTemplateDir() });
    expect(store.problems).toEqual([]);
    for (const name of templateNames) {
      expect(store.source(name).origin).toBe('default');
      expect(store.render(name, context).length).toBeGreaterThan(0);
      expect(store.render(name, buildTemplateContext(undefined)).length).toBeGreaterThan(0);
    }
  });

  it('takes an override file by file, the rest from the defaults', async () => {
    const overrideDir = await temp.make();
    await writeFile(join(overrideDir, 'AGENTS.md'), 'custom rules for {{root}}\n');
    await writeFile(join(overrideDir, 'unrelated.txt'), '{{ignored}}');
    const store = await TemplateStore.load({ defaultDir: resolveDefaultTemplateDir(), overrideDir });
    expect(store.source('AGENTS.md')).toEqual({ origin: 'override', path: join(overrideDir, 'AGENTS.md') });
    expect(store.render('AGENTS.md', context)).toBe('custom rules for /home/me/proj\n');
    expect(store.source('prompt-head.md').origin).toBe('default');
    expect(store.problems).toEqual([]);
  });

  it('finds overrides in nested paths (.cursor/hooks/…)', async () => {
    const overrideDir = await temp.make();
    await mkdir(join(overrideDir, '.cursor', 'hooks'), { recursive: true });
    await writeFile(
      join(overrideDir, '.cursor', 'hooks', 'deny-builtin.mjs'),
      "const m = '{{json denyMessage}}';\n",
    );
    const store = await TemplateStore.load({ defaultDir: resolveDefaultTemplateDir(), overrideDir });
    expect(store.render('.cursor/hooks/deny-builtin.mjs', { ...context, denyMessage: 'no' })).toBe(
      'const m = "no";\n',
    );
  });

  it('keeps the last good version when an override becomes broken, and reports why', async () => {
    const overrideDir = await temp.make();
    const { logger, records } = createCapturingLogger();
    await writeFile(join(overrideDir, 'prompt-tail.md'), 'good tail {{root}}');
    const store = await TemplateStore.load({ defaultDir: resolveDefaultTemplateDir(), overrideDir, logger });
    expect(store.render('prompt-tail.md', context)).toBe('good tail /home/me/proj');

    await writeFile(join(overrideDir, 'prompt-tail.md'), 'broken tail {{rootDir}}');
    const report = await store.reload();
    expect(report.changed).toEqual([]);
    expect(report.problems).toHaveLength(1);
    expect(report.problems[0]).toMatchObject({
      name: 'prompt-tail.md',
      path: join(overrideDir, 'prompt-tail.md'),
    });
    expect(report.problems[0]?.message).toMatch(/unknown placeholder "rootDir"/);
    expect(store.problems).toEqual(report.problems);
    expect(store.render('prompt-tail.md', context)).toBe('good tail /home/me/proj');
    expect(records.some((record) => record.template === 'prompt-tail.md' && record.level === 40)).toBe(true);

    await writeFile(join(overrideDir, 'prompt-tail.md'), 'fixed tail {{root}}');
    const fixed = await store.reload();
    expect(fixed).toEqual({ changed: ['prompt-tail.md'], problems: [] });
    expect(store.render('prompt-tail.md', context)).toBe('fixed tail /home/me/proj');
  });

  it('falls back to the default when an override is broken from the start', async () => {
    const overrideDir = await temp.make();
    await writeFile(join(overrideDir, 'prompt-head.md'), '{{#if hasRoot}}unclosed');
    const store = await TemplateStore.load({ defaultDir: resolveDefaultTemplateDir(), overrideDir });
    expect(store.source('prompt-head.md').origin).toBe('default');
    expect(store.problems.map((problem) => problem.name)).toEqual(['prompt-head.md']);
  });

  it('returns to the default when the override is deleted', async () => {
    const overrideDir = await temp.make();
    await writeFile(join(overrideDir, 'AGENTS.md'), 'mine');
    const store = await TemplateStore.load({ defaultDir: resolveDefaultTemplateDir(), overrideDir });
    await rm(join(overrideDir, 'AGENTS.md'));
    expect(await store.reload()).toEqual({ changed: ['AGENTS.md'], problems: [] });
    expect(store.source('AGENTS.md').origin).toBe('default');
  });

  it('rejects a hooks.json override that would not load in Cursor', async () => {
    const overrideDir = await temp.make();
    await mkdir(join(overrideDir, '.cursor'), { recursive: true });
    await writeFile(join(overrideDir, '.cursor', 'hooks.json'), '{ "hooks": { "preToolUse": [ }');
    const store = await TemplateStore.load({ defaultDir: resolveDefaultTemplateDir(), overrideDir });
    expect(store.source('.cursor/hooks.json').origin).toBe('default');
    expect(store.problems[0]?.message).toMatch(/invalid JSON/);

    await writeFile(join(overrideDir, '.cursor', 'hooks.json'), '{ "hooks": {} }');
    await store.reload();
    expect(store.problems[0]?.message).toMatch(/numeric "version"/);
  });

  it('refuses to start without a usable default', async () => {
    const defaultDir = await temp.copyDefaults();
    await rm(join(defaultDir, 'prompt-tail.md'));
    await expect(TemplateStore.load({ defaultDir })).rejects.toThrow(/prompt-tail\.md/);
  });

  it('shares one pass between concurrent reloads', async () => {
    const store = await TemplateStore.load({ defaultDir: resolveDefaultTemplateDir() });
    const first = store.reload();
    expect(store.reload()).toBe(first);
    await first;
  });
});
