import { lstat, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { TurnRequest } from '../../src/turn/turn-request.js';
import { PromptGrounding } from '../../src/workspace/prompt-grounding.js';
import { createSessionKey } from '../../src/workspace/session-key.js';
import { TemplateStore } from '../../src/workspace/template-store.js';
import {
  defaultTemplateOverrideDir,
  defaultWorkspaceRoot,
  resolveDefaultTemplateDir,
} from '../../src/workspace/workspace-paths.js';
import { WorkspaceManager } from '../../src/workspace/workspace-manager.js';
import { WarmWorkspacePool, type WarmExecutor } from '../../src/workspace/warm-workspace-pool.js';
import { WorkspaceService } from '../../src/workspace/workspace-service.js';
import { createCapturingLogger, createTempDirs, waitFor } from '../helpers/workspace-test-helpers.js';

const temp = createTempDirs();
const managers: WorkspaceManager[] = [];
const pools: WarmWorkspacePool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
  await Promise.all(managers.splice(0).map((manager) => manager.close()));
  await temp.cleanup();
});

/** A service over a real manager and a real pool (2 entries at most) whose executors `warm` builds. */
const createPooledService = async (warm: WarmExecutor) => {
  const templates = await TemplateStore.load({ defaultDir: resolveDefaultTemplateDir() });
  const { logger } = createCapturingLogger();
  const manager = new WorkspaceManager({ root: await temp.make(), templates, logger });
  managers.push(manager);
  const pool = new WarmWorkspacePool({ manager, logger, size: 2, quietMs: 1, warm });
  pools.push(pool);
  return { service: new WorkspaceService(manager, new PromptGrounding(templates), pool), manager, pool };
};

const createService = async () => {
  const templates = await TemplateStore.load({ defaultDir: resolveDefaultTemplateDir() });
  const manager = new WorkspaceManager({
    root: await temp.make(),
    templates,
    logger: createCapturingLogger().logger,
  });
  managers.push(manager);
  return { service: new WorkspaceService(manager, new PromptGrounding(templates)), manager };
};

const request = (system: string, user: string): Pick<TurnRequest, 'system' | 'messages'> => ({
  system: [{ type: 'text', text: system }],
  messages: [{ role: 'user', content: [{ type: 'text', text: user }] }],
});

const openCodeEnv = (dir: string) =>
  `Here is some useful information about the environment you are running in:\n<env>\n  Working directory: ${dir}\n  Workspace root folder: /\n  Is directory a git repo: no\n  Platform: linux\n  Today's date: Sun Nov 29 2026\n</env>`;

describe('WorkspaceService.prepare', () => {
  it('grounds the prompt head and tail, and AGENTS.md, in the facts of this request', async () => {
    const { service } = await createService();
    const key = createSessionKey();
    const prepared = await service.prepare(key, request(openCodeEnv('/home/me/proj'), 'say hi'));
    expect(prepared.hostRoot).toBe('/home/me/proj');
    expect(prepared.facts?.source).toBe('opencode');
    expect(prepared.grounding.head).toMatch(/^<bridge_environment>/);
    expect(prepared.grounding.head).toContain(
      "Your tools run on the user's machine (Working directory: /home/me/proj;",
    );
    expect(prepared.grounding.head).toContain(prepared.workspaceDir);
    expect(prepared.grounding.tail).toMatch(
      /^<bridge_reminder>[\s\S]*\/home\/me\/proj[\s\S]*<\/bridge_reminder>$/,
    );
    expect(await readFile(join(prepared.workspaceDir, 'AGENTS.md'), 'utf8')).toContain('`/home/me/proj`');

    const moved = await service.prepare(key, request(openCodeEnv('/home/me/moved'), 'again'));
    expect(moved.workspaceDir).toBe(prepared.workspaceDir);
    expect(moved.grounding.head).toContain('/home/me/moved');
    expect(await readFile(join(prepared.workspaceDir, 'AGENTS.md'), 'utf8')).toContain('`/home/me/moved`');
  });

  it('never guesses a root when the request has no environment block', async () => {
    const { service } = await createService();
    const prepared = await service.prepare(createSessionKey(), request('You are helpful.', 'hi'));
    expect(prepared.hostRoot).toBeUndefined();
    expect(prepared.facts).toBeUndefined();
    expect(prepared.grounding.head).toContain('Use only absolute host paths that appear in the conversation');
    expect(prepared.grounding.tail).toContain('Use only absolute host paths that appear in the conversation');
    expect(prepared.grounding.head).not.toContain('(Working directory');
  });

  it('removes the workspace on dispose', async () => {
    const { service } = await createService();
    const key = createSessionKey();
    const { workspaceDir } = await service.prepare(key, request('', 'hi'));
    await service.remove(key);
    await expect(lstat(workspaceDir)).rejects.toThrow(/ENOENT/);
  });
});

describe('WorkspaceService.remove with a pool', () => {
  /** A service over a real manager and pool whose executors are leases held in `leases`. */
  const createPooled = async () => {
    const leases = new Set<string>();
    const { service, manager, pool } = await createPooledService(async (dir) => {
      leases.add(dir);
      return async () => {
        leases.delete(dir);
      };
    });
    const env = request(openCodeEnv('/home/me/proj'), 'hi');
    // Two first conversations at once: the second found nothing ready, so the pool keeps two entries
    // for this environment; a third conversation adopts one.
    await Promise.all([service.prepare(createSessionKey(), env), service.prepare(createSessionKey(), env)]);
    await waitFor(() => pool.size === 2);
    const session = createSessionKey();
    const adopted = await service.prepare(session, env);
    return { service, manager, pool, leases, env, session, dir: adopted.workspaceDir };
  };

  it('removes an adopted workspace and releases its executor lease; later conversations get fresh ones', async () => {
    const { service, manager, pool, leases, env, session, dir } = await createPooled();
    expect(leases.has(dir)).toBe(true);
    await service.remove(session);
    expect(manager.isLive(session)).toBe(false);
    expect(leases.has(dir)).toBe(false);
    await expect(lstat(dir)).rejects.toThrow(/ENOENT/);
    await waitFor(() => pool.size === 2);
    const next = [createSessionKey(), createSessionKey()];
    const dirs = await Promise.all(next.map(async (key) => (await service.prepare(key, env)).workspaceDir));
    expect(dirs).not.toContain(dir);
    expect(dirs.every((adoptedDir) => leases.has(adoptedDir))).toBe(true);
  });
});

describe('WorkspaceService.prepare with a warm-up in flight', () => {
  it('a new conversation arriving mid warm-up waits for it and runs in the warmed workspace', async () => {
    // The first warm-up waits until the test finishes it (`warming` holds the directory it was started
    // for); the pool's later ones (it replaces the entry it hands over) end at once.
    const warming: { dir: string; finish: () => void }[] = [];
    const leases = new Set<string>();
    const { service, manager, pool } = await createPooledService(
      (dir) =>
        new Promise((resolve) => {
          const finish = () => {
            leases.add(dir);
            resolve(async () => {
              leases.delete(dir);
            });
          };
          warming.push({ dir, finish });
          if (warming.length > 1) finish();
        }),
    );
    const env = request(openCodeEnv('/home/me/proj'), 'hi');

    // The environment's first conversation starts cold and makes the pool warm one entry for it.
    const first = await service.prepare(createSessionKey(), env);
    await waitFor(() => warming.length === 1);
    const [warmUp] = warming;

    // The next conversation arrives while that warm-up runs: it neither starts cold nor gets a second one.
    const session = createSessionKey();
    let preparedDir: string | undefined;
    const prepared = service.prepare(session, env).then((turn) => (preparedDir = turn.workspaceDir));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(preparedDir).toBeUndefined();
    expect(manager.isLive(session)).toBe(false);
    expect(warming).toHaveLength(1);
    expect(pool.state).toBe('warming');

    warmUp!.finish();
    await prepared;
    expect(preparedDir).toBe(warmUp!.dir);
    expect(preparedDir).not.toBe(first.workspaceDir);
    expect(manager.isLive(session)).toBe(true);
    expect(await readFile(join(warmUp!.dir, 'AGENTS.md'), 'utf8')).toContain('`/home/me/proj`');

    // The session holds the warmed executor's lease until it ends.
    expect(leases.has(warmUp!.dir)).toBe(true);
    await service.remove(session);
    expect(leases.has(warmUp!.dir)).toBe(false);
    await expect(lstat(warmUp!.dir)).rejects.toThrow(/ENOENT/);
  });
});

describe('workspace paths', () => {
  it('follow the documented defaults under the home directory', () => {
    expect(defaultWorkspaceRoot('/home/u')).toBe('/home/u/.claude-code-router/cursor-sdk-workspaces');
    expect(defaultTemplateOverrideDir('/home/u')).toBe('/home/u/.claude-code-router/cursor-templates');
  });

  it('find the shipped templates from a module nested anywhere in the package', () => {
    const root = resolveDefaultTemplateDir();
    expect(root.endsWith('workspace-templates')).toBe(true);
    const fromDist = new URL('../../dist/src/workspace/template-store.js', import.meta.url).href;
    expect(resolveDefaultTemplateDir(fromDist)).toBe(root);
    expect(() => resolveDefaultTemplateDir('file:///nowhere/at/all.js')).toThrow(/workspace-templates/);
  });
});
