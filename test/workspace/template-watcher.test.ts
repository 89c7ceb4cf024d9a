import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { HostFacts } from '../../src/workspace/host-facts.js';
import { createSessionKey } from '../../src/workspace/session-key.js';
import { TemplateStore } from '../../src/workspace/template-store.js';
import {
  createTemplateWatcher,
  templatePathFilter,
  type DebounceTimers,
  type TemplateWatcher,
} from '../../src/workspace/template-watcher.js';
import { WorkspaceManager } from '../../src/workspace/workspace-manager.js';
import { createCapturingLogger, createTempDirs, waitFor } from '../helpers/workspace-test-helpers.js';

const temp = createTempDirs();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await temp.cleanup();
});

const facts: HostFacts = {
  source: 'opencode',
  facts: [{ key: 'Working directory', value: '/home/me/proj' }],
  root: '/home/me/proj',
};

/** A debounce that waits until the test fires it: chokidar's events arrive at their own pace meanwhile. */
const createManualDebounce = () => {
  const armed = new Map<number, () => void>();
  let sets = 0;
  const timers: DebounceTimers = {
    set: (run) => {
      sets += 1;
      armed.set(sets, run);
      return sets;
    },
    clear: (handle) => void armed.delete(handle as number),
  };
  return {
    timers,
    /** How many times the debounce was (re)armed: once per event. */
    sets: () => sets,
    armed: () => armed.size,
    /** The quiet period is over: run what is armed. */
    fire: () => {
      const runs = [...armed.values()];
      armed.clear();
      for (const run of runs) run();
    },
  };
};

const setup = async (overrideDir: string, timers?: DebounceTimers) => {
  const { logger, records } = createCapturingLogger();
  const defaultDir = await temp.copyDefaults();
  const templates = await TemplateStore.load({ defaultDir, overrideDir, logger });
  const manager = new WorkspaceManager({ root: await temp.make(), templates, logger });
  closers.push(() => manager.close());
  let reloads = 0;
  const watcher: TemplateWatcher = await createTemplateWatcher({
    dirs: [defaultDir, overrideDir],
    logger,
    debounceMs: 100,
    ...(timers === undefined ? {} : { timers }),
    onChange: async () => {
      reloads += 1;
      const report = await templates.reload();
      if (report.changed.length > 0) await manager.rerenderAll();
    },
  });
  closers.push(() => watcher.close());
  const dir = await manager.ensureWorkspace(createSessionKey(), facts);
  return { templates, manager, watcher, dir, records, defaultDir, reloads: () => reloads };
};

const agentsOf = (dir: string) => readFile(join(dir, 'AGENTS.md'), 'utf8');

describe('template watcher (real chokidar)', () => {
  it('re-renders live workspaces when an override is edited, and keeps the last good render when it breaks', async () => {
    const overrideDir = await temp.make();
    const { dir, records, templates } = await setup(overrideDir);
    expect(await agentsOf(dir)).toContain('empty scratch workspace');

    await writeFile(join(overrideDir, 'AGENTS.md'), 'Project: {{root}} (v1)\n');
    await waitFor(async () => (await agentsOf(dir)) === 'Project: /home/me/proj (v1)\n');

    await writeFile(join(overrideDir, 'AGENTS.md'), 'Project: {{projectRoot}} (broken)\n');
    await waitFor(() => templates.problems.length > 0);
    expect(templates.problems[0]?.message).toMatch(/unknown placeholder "projectRoot"/);
    expect(await agentsOf(dir)).toBe('Project: /home/me/proj (v1)\n');
    expect(
      records.some((record) => record.msg === 'workspace template rejected; keeping its last good version'),
    ).toBe(true);

    await writeFile(join(overrideDir, 'AGENTS.md'), 'Project: {{root}} (v2)\n');
    await waitFor(async () => (await agentsOf(dir)) === 'Project: /home/me/proj (v2)\n');
    expect(templates.problems).toEqual([]);
  });

  it('notices an override directory created after start', async () => {
    const parent = await temp.make();
    const overrideDir = join(parent, 'cursor-templates');
    const { dir } = await setup(overrideDir);
    await mkdir(overrideDir);
    await writeFile(join(overrideDir, 'AGENTS.md'), 'late {{root}}\n');
    await waitFor(async () => (await agentsOf(dir)) === 'late /home/me/proj\n');
  });

  it('ignores the siblings of a missing override directory (the scratch workspaces live next to it)', async () => {
    const ccr = '/home/me/.claude-code-router';
    const relevant = templatePathFilter(['/pkg/workspace-templates', `${ccr}/cursor-templates`]);
    // The ancestors chokidar watches a missing directory through, the directories and their contents.
    for (const path of ['/', '/home', ccr, `${ccr}/cursor-templates`, `${ccr}/cursor-templates/AGENTS.md`]) {
      expect(relevant(path), path).toBe(true);
    }
    expect(relevant('/pkg/workspace-templates/hooks/deny.mjs')).toBe(true);
    for (const path of [
      `${ccr}/cursor-sdk-workspaces`,
      `${ccr}/cursor-sdk-workspaces/0123abcd/AGENTS.md`,
      `${ccr}/cursor-templates-old`,
      `${ccr}/config.json`,
      '/pkg/other',
    ]) {
      expect(relevant(path), path).toBe(false);
    }
  });

  it('notices a late override directory while its busy sibling is ignored', async () => {
    const parent = await temp.make();
    const overrideDir = join(parent, 'cursor-templates');
    const { dir, reloads } = await setup(overrideDir);
    for (let index = 0; index < 5; index += 1) {
      await mkdir(join(parent, 'cursor-sdk-workspaces', `w${index}`), { recursive: true });
      await writeFile(join(parent, 'cursor-sdk-workspaces', `w${index}`, 'AGENTS.md'), 'scratch');
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(reloads()).toBe(0);
    await mkdir(overrideDir);
    await writeFile(join(overrideDir, 'AGENTS.md'), 'late {{root}}\n');
    await waitFor(async () => (await agentsOf(dir)) === 'late /home/me/proj\n');
  });

  it('coalesces a burst of edits into one reload', async () => {
    const overrideDir = await temp.make();
    const debounce = createManualDebounce();
    const { dir, reloads } = await setup(overrideDir, debounce.timers);
    for (let index = 0; index < 5; index += 1) {
      await writeFile(join(overrideDir, 'prompt-tail.md'), `tail ${index}`);
    }
    await writeFile(join(overrideDir, 'AGENTS.md'), 'burst {{root}}\n');
    // Two files changed: at least two events, each re-arming the one debounce instead of reloading.
    await vi.waitFor(() => expect(debounce.sets()).toBeGreaterThanOrEqual(2), {
      timeout: 30_000,
      interval: 10,
    });
    expect(debounce.armed()).toBe(1);
    expect(reloads()).toBe(0);
    debounce.fire();
    await waitFor(async () => (await agentsOf(dir)) === 'burst /home/me/proj\n');
    expect(reloads()).toBe(1);
  });

  it('stops reacting after close()', async () => {
    const overrideDir = await temp.make();
    const { dir, watcher, reloads } = await setup(overrideDir);
    await watcher.close();
    await watcher.close();
    await writeFile(join(overrideDir, 'AGENTS.md'), 'after close {{root}}\n');
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(reloads()).toBe(0);
    expect(await agentsOf(dir)).toContain('empty scratch workspace');
  });
});
