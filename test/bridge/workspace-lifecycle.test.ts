/**
 * Spec, Workspace lifecycle, through the bridge's own composition (templates, workspaces, warm pool,
 * engine) over a scripted upstream:
 * - "Directories left behind by a crash or kill are swept hourly once they are older than 24 hours."
 */

import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createBridgeEngine } from '../../src/bridge/create-bridge.js';
import { resolveConfig } from '../../src/config/load-config.js';
import { ScriptedUpstream } from '../../src/upstream/scripted/scripted-upstream.js';
import { createSessionKey } from '../../src/workspace/session-key.js';
import { WorkspaceManager } from '../../src/workspace/workspace-manager.js';

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  try {
    for (const step of cleanup.reverse()) await step();
  } finally {
    cleanup = [];
    vi.useRealTimers();
    vi.restoreAllMocks();
  }
});

describe('leftover workspaces (spec: swept hourly once they are older than 24 hours)', () => {
  const minuteMs = 60_000;
  const hourMs = 60 * minuteMs;
  const dayMs = 24 * hourMs;

  it('are swept when the bridge starts and then every hour, each once it is 24 hours old', async () => {
    // The sweeper's interval and the clock it ages directories by are fake: the test moves them.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    const home = await mkdtemp(join(tmpdir(), 'cursor-bridge-sweep-'));
    cleanup.push(() => rm(home, { recursive: true, force: true }));
    const env = { HOME: home };
    const config = resolveConfig({}, { path: join(home, 'config.json'), env, homedir: home });
    /** A leftover session directory last modified `ageMs` ago. */
    const leftover = async (ageMs: number): Promise<string> => {
      const name = createSessionKey();
      const dir = join(config.workspacesDir, name);
      await mkdir(dir, { recursive: true });
      const seconds = (Date.now() - ageMs) / 1000;
      await utimes(dir, seconds, seconds);
      return name;
    };
    const stale = await leftover(dayMs + minuteMs);
    const young = await leftover(dayMs - minuteMs);
    const sweep = vi.spyOn(WorkspaceManager.prototype, 'sweep');
    const parts = await createBridgeEngine({
      config,
      env,
      homedir: home,
      logger: pino({ level: 'silent' }),
      upstream: new ScriptedUpstream([]),
    });
    cleanup.push(() => parts.close());

    // At start: what is older than 24 hours goes, what is younger stays.
    expect(sweep).toHaveBeenCalledTimes(1);
    expect(await sweep.mock.results[0]?.value).toEqual([stale]);
    expect(existsSync(join(config.workspacesDir, young))).toBe(true);
    // Not again within the hour, though `young` passes 24 hours meanwhile.
    await vi.advanceTimersByTimeAsync(hourMs - 1);
    expect(sweep).toHaveBeenCalledTimes(1);
    // At the hour: now older than 24 hours, it goes.
    await vi.advanceTimersByTimeAsync(1);
    expect(sweep).toHaveBeenCalledTimes(2);
    expect(await sweep.mock.results[1]?.value).toEqual([young]);
    expect(existsSync(join(config.workspacesDir, young))).toBe(false);
  });
});
