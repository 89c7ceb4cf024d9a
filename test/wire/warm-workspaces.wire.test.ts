/**
 * Pre-warmed scratch workspaces through the whole bridge and the real SDK: a new conversation whose host
 * environment was seen before starts on a workspace and executor built ahead of it — its rules and
 * deny-hooks are its own (its own directory, its own host root), and the `git` lookups of its executor's
 * build began before it and were not made twice — while a conversation from another environment never
 * gets a workspace rendered for someone else.
 */

import { existsSync } from 'node:fs';
import type * as ChildProcessModule from 'node:child_process';
import { createRequire } from 'node:module';
import { readdir } from 'node:fs/promises';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { fakeShellArgs } from '../fakes/cursor-backend/exec-args.js';
import type { JsonObject } from '../fakes/cursor-backend/client-message.js';
import type { Scenario } from '../fakes/cursor-backend/run-context.js';
import { requestContextOf } from '../helpers/request-context.js';
import { until } from '../helpers/until.js';
import { closeWireBackend, startWireBridge, type WireBridge } from '../helpers/wire-bridge.js';

// Counts the child processes this process spawns (the bridge and the SDK run in it).
const require = createRequire(import.meta.url);
const childProcess = require('node:child_process') as typeof ChildProcessModule;
type SpawnOptions = { file: string; args: string[]; cwd?: string };
const spawned: Array<{ command: string; cwd: string | undefined }> = [];
const prototype = childProcess.ChildProcess.prototype as unknown as {
  spawn: (this: unknown, options: SpawnOptions) => unknown;
};
const originalSpawn = prototype.spawn;
prototype.spawn = function (this: unknown, options: SpawnOptions) {
  spawned.push({ command: options.args.join(' '), cwd: options.cwd });
  return originalSpawn.call(this, options);
};

let wire: WireBridge | undefined;
afterEach(async () => {
  await wire?.close();
  wire = undefined;
});
afterAll(async () => {
  prototype.spawn = originalSpawn;
  await closeWireBackend();
});

type Probe = { rules: string; workspace: string; shellRefusal: string; prompt: string };

/** Asks the SDK for its request context and to run a shell built-in, then answers. */
const probeScenario =
  (found: (probe: Probe) => void): Scenario =>
  async (run) => {
    const context = requestContextOf((await run.exec('requestContextArgs', {})) as JsonObject);
    const shell = (await run.exec(
      'shellArgs',
      fakeShellArgs('true', { toolCallId: 'builtin-shell' }),
    )) as JsonObject;
    found({
      rules: context.rules.map((rule) => rule.content).join('\n'),
      workspace: context.env.workspacePaths[0] ?? '',
      shellRefusal: JSON.stringify(shell),
      prompt: run.prompt,
    });
    run.text('probed');
  };

const environment = (root: string): string =>
  `# Environment\nYou have been invoked in the following environment:\n - Primary working directory: ${root}\n - Platform: linux\n`;

const ask = async (url: string, system: string, text: string): Promise<void> => {
  const client = new Anthropic({ baseURL: url, apiKey: 'sk-test', maxRetries: 0 });
  await client.messages
    .stream({ model: 'composer-2', max_tokens: 100, system, messages: [{ role: 'user', content: text }] })
    .finalMessage();
};

/**
 * A bridge with a cap of three pre-warmed workspaces (one environment's first conversation warms one),
 * kept in `wire` for the cleanup, and a reader of its metrics.
 */
const startThreeWarm = async (scenario: Scenario) => {
  const bridge = await startWireBridge({ scenario, config: { cursorWarmWorkspaces: 3 } });
  wire = bridge;
  return { bridge, metrics: () => bridge.bridge.metrics.snapshot() };
};

describe('pre-warmed scratch workspaces', { timeout: 60_000 }, () => {
  it('serve a new conversation from a seen environment with its own rules, hooks and directory, off the request path', async () => {
    const probes: Probe[] = [];
    const { bridge, metrics } = await startThreeWarm(probeScenario((probe) => probes.push(probe)));

    /** `git` lookups forked in a workspace among `spawns` (the pool warms others meanwhile). */
    const gitSpawnsIn = (dir: string | undefined, spawns = spawned): number =>
      spawns.filter((spawn) => spawn.command.startsWith('git rev-parse') && spawn.cwd === dir).length;
    spawned.length = 0;
    await ask(bridge.url, environment('/home/ada/alpha'), 'first conversation');
    expect(await metrics()).toMatchObject({ warmHits: 0, warmMisses: 1 });
    // The first conversation of an environment warms one workspace for the next (demand, not the cap).
    await until(async () => (await metrics()).warmWorkspaces === 1, 'a warm workspace');

    const coldSpawns = gitSpawnsIn(probes[0]?.workspace);

    const beforeSecond = spawned.length;
    await ask(bridge.url, environment('/home/ada/alpha'), 'second conversation');
    expect(await metrics()).toMatchObject({ warmHits: 1, warmMisses: 1 });
    const [cold, warm] = probes;
    // The executor (rules, hooks, git root lookups) was built ahead — its lookups began before the
    // conversation did — and only once: its workspace saw no more lookups in all than the cold one, whose
    // executor was built on its request path. (The SDK makes some of an executor's lookups after
    // `prewarmLocalWorkspace` resolves, so on which side of the request they fall is timing; their
    // number is not.)
    expect(coldSpawns).toBeGreaterThan(1);
    expect(gitSpawnsIn(warm?.workspace, spawned.slice(0, beforeSecond))).toBeGreaterThan(0);
    expect(gitSpawnsIn(warm?.workspace)).toBeLessThanOrEqual(coldSpawns);

    expect(warm?.workspace).not.toBe(cold?.workspace);
    for (const probe of [cold, warm]) {
      // Each conversation's rules name its own scratch directory and the host root it reported.
      expect(probe?.rules).toContain(probe?.workspace);
      expect(probe?.rules).toContain('/home/ada/alpha');
      // The deny-hook of its workspace refuses Cursor's built-in shell.
      expect(probe?.shellRefusal).toMatch(/rejected|permissionDenied/);
    }
    // The adopted workspace lives under the workspace root like any other.
    expect((await readdir(bridge.workspacesDir)).length).toBeGreaterThanOrEqual(2);
  });

  it('never gives a conversation a workspace rendered for another environment', async () => {
    const probes: Probe[] = [];
    const { bridge, metrics } = await startThreeWarm(probeScenario((probe) => probes.push(probe)));
    await ask(bridge.url, environment('/home/ada/alpha'), 'alpha');
    await until(async () => (await metrics()).warmWorkspaces === 1, 'a warm workspace');

    await ask(bridge.url, environment('/home/bob/beta'), 'beta');
    expect(await metrics()).toMatchObject({ warmHits: 0, warmMisses: 2 });
    const beta = probes[1];
    expect(beta?.rules).toContain('/home/bob/beta');
    expect(beta?.rules).not.toContain('/home/ada/alpha');
    expect(beta?.rules).toContain(beta?.workspace);
  });

  it('removes its warm workspaces and the adopted ones when the bridge closes', async () => {
    const { bridge, metrics } = await startThreeWarm((run) => void run.text('ok'));
    await ask(bridge.url, environment('/home/ada/alpha'), 'one');
    await until(async () => (await metrics()).warmWorkspaces === 1, 'a warm workspace');
    const dirs = await readdir(bridge.workspacesDir);
    expect(dirs).toHaveLength(2);
    const root = bridge.workspacesDir;
    await bridge.close();
    wire = undefined;
    for (const dir of dirs) expect(existsSync(`${root}/${dir}`)).toBe(false);
  });

  it('is off with cursorWarmWorkspaces 0', async () => {
    wire = await startWireBridge({
      scenario: (run) => void run.text('ok'),
      config: { cursorWarmWorkspaces: 0 },
    });
    await ask(wire.url, environment('/home/ada/alpha'), 'one');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await wire.bridge.metrics.snapshot()).toMatchObject({
      warmHits: 0,
      warmMisses: 0,
      warmWorkspaces: 0,
    });
    expect(await readdir(wire.workspacesDir)).toHaveLength(1);
  });

  describe('at the session cap', () => {
    /**
     * Scratch workspaces are removed when their session is disposed (idle TTL, LRU eviction, or explicit
     * disposal): nothing of an evicted conversation serves another. A bridge with a cap of two sessions whose
     * pool warms nothing beyond it (`cursorWarmWorkspacesAtCap` 0): A starts cold and fills the one slot left
     * (the executor bound: 1 session + 1 entry), B takes it, C starts cold (nothing warm: 2 sessions at the
     * cap) and evicts A; D evicts B, which had adopted the pre-warmed workspace and executor.
     */
    it("gives the conversation that evicts another a new directory and executor, never the evicted one's", async () => {
      const probes: Probe[] = [];
      wire = await startWireBridge({
        scenario: probeScenario((probe) => probes.push(probe)),
        config: { cursorWarmWorkspaces: 2, cursorMaxSessions: 2, cursorWarmWorkspacesAtCap: 0 },
      });
      const bridge = wire;
      const metrics = () => bridge.bridge.metrics.snapshot();
      const alpha = environment('/home/ada/alpha');
      await ask(bridge.url, alpha, 'conversation A');
      await until(async () => (await metrics()).warmWorkspaces === 1, 'one warm workspace');
      await ask(bridge.url, alpha, 'conversation B: the secret word is PELICAN-7f3a');
      await ask(bridge.url, alpha, 'conversation C');
      expect(await metrics()).toMatchObject({ warmHits: 1, warmMisses: 2, evicted: 1 });
      const [a, b, c] = probes.map((probe) => probe.workspace);
      spawned.length = 0;
      await ask(bridge.url, alpha, 'conversation D');
      const d = probes[3];

      // D's agent runs in a directory of its own, under a new key, not in A's or B's.
      expect([a, b, c]).not.toContain(d?.workspace);
      expect(d?.workspace.split('/').at(-1)).toMatch(/^[0-9a-f]{32}$/);
      expect(await metrics()).toMatchObject({ warmHits: 1, warmMisses: 3, evicted: 2 });
      // On an executor the SDK built for it: its own `git` lookups in its directory (B's executor made them
      // before B's first turn).
      const gitSpawns = spawned.filter(
        (spawn) => spawn.command.startsWith('git rev-parse') && spawn.cwd === d?.workspace,
      ).length;
      expect(gitSpawns).toBeGreaterThan(1);
      // Its own rules and hooks.
      expect(d?.rules).toContain(d?.workspace);
      expect(d?.rules).toContain('/home/ada/alpha');
      expect(d?.shellRefusal).toMatch(/rejected|permissionDenied/);
      // Nothing of B: not in D's prompt, rules or the whole run request the SDK sent.
      const dRequest = bridge.runRequests().at(-1);
      // (B's own run request carried it: the check below can see it.)
      expect(bridge.runRequests().some((run) => JSON.stringify(run.json).includes('PELICAN-7f3a'))).toBe(
        true,
      );
      expect(dRequest?.text).toContain('conversation D');
      for (const seen of [d?.prompt, d?.rules, JSON.stringify(dRequest?.json)])
        expect(seen).not.toContain('PELICAN-7f3a');
      // The evicted conversations' directories are gone; C's and D's remain.
      await until(async () => !existsSync(a ?? '') && !existsSync(b ?? ''), "A's and B's removal");
      expect((await readdir(bridge.workspacesDir)).sort()).toEqual(
        [c, d?.workspace].map((dir) => dir?.split('/').at(-1)).sort(),
      );
    });
  });
});
