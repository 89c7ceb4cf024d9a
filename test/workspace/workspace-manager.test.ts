import { lstat, mkdir, readFile, readdir, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { getHeapSnapshot } from 'node:v8';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BridgeError } from '../../src/turn/turn-error.js';
import type { HostFacts } from '../../src/workspace/host-facts.js';
import { createSessionKey, isSessionKey } from '../../src/workspace/session-key.js';
import { TemplateStore } from '../../src/workspace/template-store.js';
import { resolveDefaultTemplateDir } from '../../src/workspace/workspace-paths.js';
import { WorkspaceManager } from '../../src/workspace/workspace-manager.js';
import { createCapturingLogger, createTempDirs } from '../helpers/workspace-test-helpers.js';

const temp = createTempDirs();
const managers: WorkspaceManager[] = [];
afterEach(async () => {
  await Promise.all(managers.splice(0).map((manager) => manager.close()));
  await temp.cleanup();
});

const facts: HostFacts = {
  source: 'claude-code',
  facts: [
    { key: 'Primary working directory', value: '/home/me/proj' },
    { key: 'Platform', value: 'linux' },
    { key: 'OS Version', value: 'Linux 6.1' },
  ],
  root: '/home/me/proj',
  platform: 'linux',
  osVersion: 'Linux 6.1',
};

const files = ['AGENTS.md', '.cursor/hooks.json', '.cursor/hooks/deny-builtin.mjs'];
const dayMs = 24 * 60 * 60 * 1000;

const createManager = async (root?: string) => {
  const templates = await TemplateStore.load({ defaultDir: resolveDefaultTemplateDir() });
  const { logger, records } = createCapturingLogger();
  const manager = new WorkspaceManager({ root: root ?? (await temp.make()), templates, logger });
  managers.push(manager);
  return { manager, records };
};

const snapshot = async (dir: string) =>
  Promise.all(
    files.map(async (file) => {
      const path = join(dir, ...file.split('/'));
      return { file, mtimeMs: (await stat(path)).mtimeMs, content: await readFile(path, 'utf8') };
    }),
  );

/**
 * Whether this process's heap holds a string with exactly `needle`'s bytes (ASCII, nothing JSON would
 * escape): scans a heap snapshot (which collects garbage first) without building the needle as a string.
 */
const heapHolds = async (needle: Buffer): Promise<boolean> => {
  let tail = Buffer.alloc(0);
  for await (const chunk of getHeapSnapshot()) {
    const window = Buffer.concat([tail, chunk as Buffer]);
    if (window.includes(needle)) return true;
    tail = window.subarray(Math.max(0, window.length - needle.length));
  }
  return false;
};

const age = async (path: string, ms: number) => {
  const seconds = (Date.now() - ms) / 1000;
  await utimes(path, seconds, seconds);
};

describe('session keys', () => {
  it('are 32 random lowercase hex characters', () => {
    const key = createSessionKey();
    expect(key).toMatch(/^[0-9a-f]{32}$/);
    expect(createSessionKey()).not.toBe(key);
    expect(isSessionKey(key)).toBe(true);
    expect(isSessionKey(key.slice(1))).toBe(false);
    expect(isSessionKey(`${key}0`)).toBe(false);
    expect(isSessionKey(key.toUpperCase())).toBe(false);
    expect(isSessionKey('../0123456789abcdef0123456789abc')).toBe(false);
  });
});

describe('WorkspaceManager.ensureWorkspace', () => {
  it('creates <root>/<key>/ with AGENTS.md and the deny-hooks, stating the host facts', async () => {
    const { manager } = await createManager();
    const key = createSessionKey();
    const dir = await manager.ensureWorkspace(key, facts);
    expect(dir).toBe(join(manager.root, key));
    const agents = await readFile(join(dir, 'AGENTS.md'), 'utf8');
    expect(agents).toContain('/home/me/proj');
    expect(agents).toContain('- OS Version: Linux 6.1');
    expect(agents).toContain(dir);
    expect(agents).not.toMatch(/\{\{/);
    const hooks = JSON.parse(await readFile(join(dir, '.cursor', 'hooks.json'), 'utf8')) as {
      version: number;
      hooks: Record<string, Array<{ command: string }>>;
    };
    expect(hooks.version).toBe(1);
    expect(hooks.hooks.preToolUse?.[0]?.command).toContain(join(dir, '.cursor', 'hooks', 'deny-builtin.mjs'));
    expect(hooks.hooks.preToolUse?.[0]?.command).toContain(process.execPath);
    // `{{json}}` writes `/` as `\/`, so the script carries the root JSON-escaped.
    expect(await readFile(join(dir, '.cursor', 'hooks', 'deny-builtin.mjs'), 'utf8')).toContain(
      String.raw`\/home\/me\/proj`,
    );
  });

  it('says to use only host paths from the conversation when no environment was reported', async () => {
    const { manager } = await createManager();
    const dir = await manager.ensureWorkspace(createSessionKey(), undefined);
    const agents = await readFile(join(dir, 'AGENTS.md'), 'utf8');
    expect(agents).toContain('Use only absolute host paths that appear in the conversation');
    expect(agents).not.toContain('project root on that machine is');
  });

  it('does not rewrite anything on an identical turn (mtime and bytes unchanged)', async () => {
    const { manager } = await createManager();
    const key = createSessionKey();
    const dir = await manager.ensureWorkspace(key, facts);
    const before = await snapshot(dir);
    await new Promise((resolve) => setTimeout(resolve, 30));
    await manager.ensureWorkspace(key, { ...facts, facts: [...facts.facts] });
    expect(await snapshot(dir)).toEqual(before);
  });

  it('does not rewrite identical files found on disk by a fresh manager', async () => {
    const root = await temp.make();
    const key = createSessionKey();
    const first = await createManager(root);
    const dir = await first.manager.ensureWorkspace(key, facts);
    const before = await snapshot(dir);
    await new Promise((resolve) => setTimeout(resolve, 30));
    const second = await createManager(root);
    await second.manager.ensureWorkspace(key, facts);
    expect(await snapshot(dir)).toEqual(before);
  });

  it('rewrites only the files whose rendered bytes changed when the facts change', async () => {
    const { manager } = await createManager();
    const key = createSessionKey();
    const dir = await manager.ensureWorkspace(key, facts);
    const before = await snapshot(dir);
    await new Promise((resolve) => setTimeout(resolve, 30));
    await manager.ensureWorkspace(key, { ...facts, root: '/home/me/other' });
    const after = await snapshot(dir);
    const byFile = (list: typeof before, file: string) => list.find((entry) => entry.file === file);
    expect(byFile(after, 'AGENTS.md')?.content).toContain('/home/me/other');
    expect(byFile(after, 'AGENTS.md')?.mtimeMs).not.toBe(byFile(before, 'AGENTS.md')?.mtimeMs);
    expect(byFile(after, '.cursor/hooks.json')).toEqual(byFile(before, '.cursor/hooks.json'));
    expect(byFile(after, '.cursor/hooks/deny-builtin.mjs')?.content).toContain(String.raw`\/home\/me\/other`);
    expect(byFile(after, '.git')).toEqual(byFile(before, '.git'));
    expect((await readdir(dir)).sort()).toEqual(['.cursor', '.git', 'AGENTS.md']);
  });

  it('rejects keys that are not session keys', async () => {
    const { manager } = await createManager();
    await expect(manager.ensureWorkspace('../escape', facts)).rejects.toBeInstanceOf(BridgeError);
    await expect(manager.ensureWorkspace('0123456789abcdef0123456789abcde', facts)).rejects.toThrow(
      /session key/,
    );
  });

  it('refuses to render into a symlink planted at the workspace path', async () => {
    const { manager } = await createManager();
    const outside = await temp.make();
    const key = createSessionKey();
    await mkdir(manager.root, { recursive: true });
    await symlink(outside, join(manager.root, key));
    await expect(manager.ensureWorkspace(key, facts)).rejects.toThrow(/not a directory/);
    expect(await readdir(outside)).toEqual([]);
  });
});

describe('WorkspaceManager memory', () => {
  it('keeps a digest of each file it rendered, not the content (every workspace’s files differ)', async () => {
    const overrides = await temp.make('cb-tpl-');
    await writeFile(join(overrides, 'AGENTS.md'), 'retained-probe {{scratchDir}} end');
    const templates = await TemplateStore.load({
      defaultDir: resolveDefaultTemplateDir(),
      overrideDir: overrides,
    });
    const manager = new WorkspaceManager({
      root: await temp.make(),
      templates,
      logger: createCapturingLogger().logger,
    });
    managers.push(manager);
    const reserved = await manager.reserveWorkspace(facts);
    const session = createSessionKey();
    const sessionDir = await manager.ensureWorkspace(session, facts);
    const rendered = (dir: string): Buffer =>
      Buffer.concat([Buffer.from('retained-probe '), Buffer.from(dir), Buffer.from(' end')]);
    expect(await readFile(join(sessionDir, 'AGENTS.md'))).toEqual(rendered(sessionDir));

    // The scan finds such a string while something holds it…
    let held: string | undefined = await readFile(join(sessionDir, 'AGENTS.md'), 'utf8');
    expect(await heapHolds(rendered(sessionDir))).toBe(true);
    expect(held).toHaveLength(rendered(sessionDir).length);
    held = undefined;
    // …and neither the session's workspace nor the reservation keeps one.
    expect(await heapHolds(rendered(sessionDir))).toBe(false);
    expect(await heapHolds(rendered(reserved.dir))).toBe(false);
    // Identical turns still skip all I/O; the digest is what they compare.
    const before = await stat(join(sessionDir, 'AGENTS.md'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await manager.ensureSessionWorkspace(session, facts)).toEqual({ dir: sessionDir, changed: false });
    expect((await stat(join(sessionDir, 'AGENTS.md'))).mtimeMs).toBe(before.mtimeMs);
    expect(held).toBeUndefined();
  }, 60_000);
});

describe('WorkspaceManager removal', () => {
  it('removes a session workspace on dispose', async () => {
    const { manager } = await createManager();
    const key = createSessionKey();
    const dir = await manager.ensureWorkspace(key, facts);
    expect(await manager.removeWorkspace(key)).toBe(true);
    await expect(lstat(dir)).rejects.toThrow(/ENOENT/);
    expect(manager.liveSessionKeys()).toEqual([]);
    expect(await manager.removeWorkspace(key)).toBe(false);
  });

  it('never follows a symlink and never removes a non-key entry on dispose', async () => {
    const { manager, records } = await createManager();
    const outside = await temp.make();
    await writeFile(join(outside, 'keep.txt'), 'precious');
    const key = createSessionKey();
    await mkdir(manager.root, { recursive: true });
    await symlink(outside, join(manager.root, key));
    expect(await manager.removeWorkspace(key)).toBe(false);
    expect(await readFile(join(outside, 'keep.txt'), 'utf8')).toBe('precious');
    expect((await lstat(join(manager.root, key))).isSymbolicLink()).toBe(true);
    expect(await manager.removeWorkspace('my-project')).toBe(false);
    expect(records.filter((record) => record.level === 40)).toHaveLength(2);
  });

  it('sweeps only stale session-key directories directly under the root', async () => {
    const { manager } = await createManager();
    const root = manager.root;
    const outside = await temp.make();
    await writeFile(join(outside, 'keep.txt'), 'precious');

    const stale = createSessionKey();
    await mkdir(join(root, stale, '.cursor'), { recursive: true });
    await writeFile(join(root, stale, 'AGENTS.md'), 'old');
    await age(join(root, stale), 25 * 60 * 60 * 1000);

    const staleSymlink = createSessionKey();
    await symlink(outside, join(root, staleSymlink));
    await age(outside, 25 * 60 * 60 * 1000);

    const shortName = createSessionKey().slice(1);
    await mkdir(join(root, shortName));
    await age(join(root, shortName), 2 * dayMs);

    const fresh = createSessionKey();
    await mkdir(join(root, fresh));

    const cursorCwd = join(root, 'my-project');
    await mkdir(cursorCwd);
    await writeFile(join(cursorCwd, 'main.ts'), 'code');
    await age(cursorCwd, 2 * dayMs);

    const staleFile = createSessionKey();
    await writeFile(join(root, staleFile), 'not a dir');
    await age(join(root, staleFile), 2 * dayMs);

    const live = createSessionKey();
    await manager.ensureWorkspace(live, facts);
    await age(join(root, live), 2 * dayMs);

    expect(await manager.sweep({ olderThanMs: dayMs })).toEqual([stale]);
    expect((await readdir(root)).sort()).toEqual(
      [staleSymlink, shortName, fresh, 'my-project', staleFile, live].sort(),
    );
    expect(await readFile(join(outside, 'keep.txt'), 'utf8')).toBe('precious');
    expect(await readFile(join(cursorCwd, 'main.ts'), 'utf8')).toBe('code');
  });

  it('sweeps on start and on an unref’d interval until closed', async () => {
    const { manager } = await createManager();
    const stale = createSessionKey();
    await mkdir(join(manager.root, stale), { recursive: true });
    await age(join(manager.root, stale), 2 * dayMs);
    manager.startSweeping({ intervalMs: 20, olderThanMs: dayMs });
    // A safety net, not a speed claim: the sweeps run on their own timer and file system.
    const eventually = { timeout: 30_000, interval: 10 };
    await vi.waitFor(() => expect(lstat(join(manager.root, stale))).rejects.toThrow(/ENOENT/), eventually);

    const later = createSessionKey();
    await mkdir(join(manager.root, later));
    await age(join(manager.root, later), 2 * dayMs);
    await vi.waitFor(() => expect(lstat(join(manager.root, later))).rejects.toThrow(/ENOENT/), eventually);

    await manager.close();
    const afterClose = createSessionKey();
    await mkdir(join(manager.root, afterClose));
    await age(join(manager.root, afterClose), 2 * dayMs);
    // Absence: four intervals or more (as long as the machine takes), and the directory is still there.
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect((await lstat(join(manager.root, afterClose))).isDirectory()).toBe(true);
    await expect(manager.ensureWorkspace(createSessionKey(), facts)).rejects.toThrow(/closed/);
  });

  it('treats a missing root as nothing to sweep', async () => {
    const { manager } = await createManager(join(await temp.make(), 'not-yet'));
    expect(await manager.sweep()).toEqual([]);
  });
});

describe('WorkspaceManager.rerenderAll', () => {
  it('re-renders every live workspace with its latest facts', async () => {
    const defaultDir = await temp.copyDefaults();
    const templates = await TemplateStore.load({ defaultDir });
    const { logger } = createCapturingLogger();
    const manager = new WorkspaceManager({ root: await temp.make(), templates, logger });
    managers.push(manager);
    const one = await manager.ensureWorkspace(createSessionKey(), facts);
    const two = await manager.ensureWorkspace(createSessionKey(), undefined);
    await writeFile(join(defaultDir, 'AGENTS.md'), 'v2 {{#if hasRoot}}{{root}}{{else}}no root{{/if}}\n');
    await templates.reload();
    await manager.rerenderAll();
    expect(await readFile(join(one, 'AGENTS.md'), 'utf8')).toBe('v2 /home/me/proj\n');
    expect(await readFile(join(two, 'AGENTS.md'), 'utf8')).toBe('v2 no root\n');
  });
});

describe('WorkspaceManager reservations (pre-warmed workspaces)', () => {
  it('renders a reservation under its own key; a new session adopts it without rewriting a byte', async () => {
    const { manager } = await createManager();
    const reserved = await manager.reserveWorkspace(facts);
    expect(isSessionKey(reserved.key)).toBe(true);
    expect(reserved.dir).toBe(join(manager.root, reserved.key));
    const agents = await readFile(join(reserved.dir, 'AGENTS.md'), 'utf8');
    expect(agents).toContain(reserved.dir);
    expect(agents).toContain('/home/me/proj');
    const before = await snapshot(reserved.dir);
    await new Promise((resolve) => setTimeout(resolve, 30));

    const session = createSessionKey();
    expect(manager.isLive(session)).toBe(false);
    const ensured = await manager.ensureSessionWorkspace(session, facts, reserved.key);
    expect(ensured).toEqual({ dir: reserved.dir, changed: false });
    expect(manager.isLive(session)).toBe(true);
    expect(await snapshot(reserved.dir)).toEqual(before);
    // Taken: a second session cannot adopt it, and the key is no longer a reservation.
    const other = await manager.ensureSessionWorkspace(createSessionKey(), facts, reserved.key);
    expect(other.dir).not.toBe(reserved.dir);
    expect(await manager.releaseReservation(reserved.key)).toBe(false);

    expect(await manager.removeWorkspace(session)).toBe(true);
    expect(await readdir(manager.root)).not.toContain(reserved.key);
  });

  it('says when an adopted reservation had to be rewritten for the session’s facts', async () => {
    const { manager } = await createManager();
    const reserved = await manager.reserveWorkspace(facts);
    const ensured = await manager.ensureSessionWorkspace(
      createSessionKey(),
      { ...facts, root: '/home/me/other' },
      reserved.key,
    );
    expect(ensured).toEqual({ dir: reserved.dir, changed: true });
    expect(await readFile(join(reserved.dir, 'AGENTS.md'), 'utf8')).toContain('/home/me/other');
  });

  it('gives the same render key to facts that render the same files, whatever the directory', async () => {
    const { manager } = await createManager();
    expect(manager.renderKey(facts)).toBe(manager.renderKey({ ...facts, facts: [...facts.facts] }));
    expect(manager.renderKey(facts)).not.toBe(manager.renderKey({ ...facts, root: '/home/me/other' }));
    expect(manager.renderKey(facts)).not.toBe(manager.renderKey(undefined));
  });

  it('never sweeps a reservation; releasing one removes its directory', async () => {
    const { manager } = await createManager();
    const reserved = await manager.reserveWorkspace(undefined);
    await age(reserved.dir, 2 * dayMs);
    expect(await manager.sweep({ olderThanMs: dayMs })).toEqual([]);
    expect(await manager.releaseReservation(reserved.key)).toBe(true);
    expect(await readdir(manager.root)).toEqual([]);
  });

  it('never sweeps an adopted reservation while its session lives', async () => {
    const { manager } = await createManager();
    const reserved = await manager.reserveWorkspace(undefined);
    await manager.ensureSessionWorkspace(createSessionKey(), undefined, reserved.key);
    await age(reserved.dir, 2 * dayMs);
    expect(await manager.sweep({ olderThanMs: dayMs })).toEqual([]);
    expect(await readdir(manager.root)).toEqual([reserved.key]);
  });
});
