/**
 * The workspace lifecycle, through the bridge's own composition (templates, workspaces, warm pool,
 * engine) over a scripted upstream:
 * - Scratch workspaces are removed when their session is disposed (idle TTL, LRU eviction, or explicit
 *   disposal). The upstream's `prewarm` leases stand for the SDK's executors: with the pool on, an
 *   evicted conversation's directory and executor are never handed to another conversation — the pool
 *   pre-warms fresh workspaces (a new directory under a new key) instead.
 * - Directories left behind by a crash or kill are swept hourly once they are older than 24 hours.
 */

import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createBridgeEngine, type BridgeEngine } from '../../src/bridge/create-bridge.js';
import { resolveConfig } from '../../src/config/load-config.js';
import { ScriptedUpstream, type Script } from '../../src/upstream/scripted/scripted-upstream.js';
import type { UpstreamSessionOptions } from '../../src/upstream/upstream-port.js';
import { createSessionKey } from '../../src/workspace/session-key.js';
import { WorkspaceManager } from '../../src/workspace/workspace-manager.js';
import { collect, never, request, user, withId } from '../helpers/engine-helpers.js';
import { createGate } from '../helpers/gate.js';

/** A scripted upstream whose `prewarm` hands out executor leases, one per workspace directory warmed. */
class PrewarmingUpstream extends ScriptedUpstream {
  /** Directories an executor was pre-warmed for, in order. */
  readonly warmed: string[] = [];
  /** Directories whose pre-warmed executor was released. */
  readonly released: string[] = [];

  async prewarm(options: UpstreamSessionOptions): Promise<() => Promise<void>> {
    this.warmed.push(options.workspaceDir);
    let held = true;
    return async () => {
      if (held) this.released.push(options.workspaceDir);
      held = false;
    };
  }
}

/** A safety net for what the bridge does in the background, never a speed claim. */
const eventually = { timeout: 30_000, interval: 10 };

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

const finishedTurn: Script = [
  { type: 'text-delta', text: 'ok' },
  { type: 'end', status: 'finished' },
];

/**
 * A bridge of two sessions and two warm workspaces whose pool warms nothing beyond the cap
 * (`cursorWarmWorkspacesAtCap` 0): its own warm-ups stop at two executors, entries and sessions together.
 */
const start = async (idleTtlMs?: number, script: Script = finishedTurn) => {
  const home = await mkdtemp(join(tmpdir(), 'cursor-bridge-eviction-'));
  const env = { HOME: home, CURSOR_API_KEY: 'crsr_test' };
  const config = resolveConfig(
    { cursorWarmWorkspaces: 2, cursorMaxSessions: 2, cursorWarmWorkspacesAtCap: 0 },
    { path: join(home, 'config.json'), env, homedir: home },
  );
  const upstream = new PrewarmingUpstream(script);
  const parts: BridgeEngine = await createBridgeEngine({
    config,
    env,
    homedir: home,
    logger: pino({ level: 'silent' }),
    upstream,
    ...(idleTtlMs === undefined ? {} : { engine: { idleTtlMs } }),
  });
  cleanup.push(async () => {
    await parts.close();
    await rm(home, { recursive: true, force: true });
  });
  /** One finished turn of a new conversation; resolves to the directory its agent ran in. */
  const converse = async (id: string): Promise<string> => {
    await collect(await parts.engine.handleTurn(request([user(`conversation ${id}`)], withId(id)), never));
    const call = upstream.calls.at(-1);
    if (call === undefined) throw new Error('no run was started');
    return call.sessionOptions.workspaceDir;
  };
  const metrics = () => parts.metrics.snapshot();
  return { parts, upstream, converse, metrics };
};

type Started = Awaited<ReturnType<typeof start>>;

/** A starts cold, the pool warms the one executor the bound leaves, and B adopts it. */
const coldThenWarm = async ({ converse, metrics, upstream }: Started) => {
  const a = await converse('a');
  await vi.waitFor(async () => expect((await metrics()).warmWorkspaces).toBe(1), eventually);
  const b = await converse('b');
  expect(await metrics()).toMatchObject({ warmHits: 1, warmMisses: 1, warmWorkspaces: 0 });
  expect(b).toBe(upstream.warmed[0]);
  return { a, b };
};

/** What no conversation other than the evicted one may ever see: its directory, on disk, and its executor. */
const expectGone = async (upstream: PrewarmingUpstream, dirs: string[]) => {
  await vi.waitFor(() => {
    for (const dir of dirs) expect(existsSync(dir), dir).toBe(false);
  }, eventually);
  // The adopted workspace's executor lease went with it (a cold session holds none of the pool's).
  const adopted = dirs.filter((dir) => upstream.warmed.includes(dir));
  await vi.waitFor(() => expect(upstream.released).toEqual(expect.arrayContaining(adopted)), eventually);
};

describe('an evicted conversation’s workspace and executor (removed when the session is disposed)', () => {
  it('after an idle-TTL eviction, the next new conversation gets a fresh pre-warmed workspace, never the evicted one', async () => {
    // The engine's idle sweep runs on an interval: the test moves it; everything else runs on real time.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const bridge = await start(0);
    const { a, b } = await coldThenWarm(bridge);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(await bridge.metrics()).toMatchObject({ evicted: 2, sessions: 0 });
    // Both executors are released, so the pool warms again, up to the demand it saw: one entry (B found
    // its workspace ready), not its cap of two.
    await vi.waitFor(async () => expect((await bridge.metrics()).warmWorkspaces).toBe(1), eventually);
    await vi.waitFor(() => expect(bridge.parts.warmPool?.state).toBe('idle'), eventually);
    expect((await bridge.metrics()).warmWorkspaces).toBe(1);

    const c = await bridge.converse('c');
    expect(await bridge.metrics()).toMatchObject({ warmHits: 2, warmMisses: 1 });
    expect([a, b]).not.toContain(c);
    // A fresh workspace: warmed for no one before, under a new 32-character key of its own.
    expect(bridge.upstream.warmed.filter((dir) => dir === c)).toHaveLength(1);
    expect(new Set(bridge.upstream.warmed).size).toBe(bridge.upstream.warmed.length);
    expect(basename(c)).toMatch(/^[0-9a-f]{32}$/);
    await expectGone(bridge.upstream, [a, b]);
  });

  it('after an LRU eviction, the new conversation that evicted it runs in a new directory, and the evicted one is removed', async () => {
    const bridge = await start();
    const { a, b } = await coldThenWarm(bridge);
    // C finds nothing warm (two sessions hold the bound) and evicts A; D evicts B, which had adopted an entry.
    const c = await bridge.converse('c');
    const d = await bridge.converse('d');
    expect([a, b, c]).not.toContain(d);
    // Nothing warm for D either: it started cold, on an executor of its own.
    expect(await bridge.metrics()).toMatchObject({ evicted: 2, sessions: 2, warmHits: 1, warmMisses: 3 });
    expect(basename(d)).toMatch(/^[0-9a-f]{32}$/);
    // D's agent was created over its own directory, not over B's executor.
    expect(bridge.upstream.calls.map((call) => call.sessionOptions.workspaceDir)).toEqual([a, b, c, d]);
    await expectGone(bridge.upstream, [a, b]);
    expect(existsSync(c) && existsSync(d)).toBe(true);
  });
});

describe('the warm pool and live turns (background work never delays a live turn)', () => {
  it('starts no warm-up while a turn is in flight, and warms one entry once it has ended', async () => {
    const gate = createGate();
    const bridge = await start(undefined, [
      { type: 'wait', until: gate.opened },
      { type: 'text-delta', text: 'ok' },
      { type: 'end', status: 'finished' },
    ]);
    // The pool asks the engine for its turns in progress before each warm-up it would start.
    const looked = vi.spyOn(bridge.parts.engine, 'turnsInProgress');
    const turn = bridge.converse('a');
    await vi.waitFor(() => expect(looked.mock.calls.length).toBeGreaterThanOrEqual(2), eventually);
    expect(bridge.upstream.warmed).toEqual([]);
    expect(bridge.parts.warmPool?.state).toBe('waiting');

    gate.open();
    await turn;
    await vi.waitFor(() => expect(bridge.parts.warmPool?.state).toBe('idle'), eventually);
    expect(bridge.upstream.warmed).toHaveLength(1);
    expect(await bridge.metrics()).toMatchObject({ warmMisses: 1, warmWorkspaces: 1 });
  });

  it('warms while a conversation is parked on its client running a tool: that turn waits on the client', async () => {
    const bridge = await start(undefined, [
      { type: 'tool-call', toolCallId: 'call-1', toolName: 'Bash', input: { command: 'ls' } },
      { type: 'tool-batch-end' },
      { type: 'await-tool-results' },
      { type: 'end', status: 'finished' },
    ]);
    // The response ends at the tool batch; the run stays parked until the client posts a result.
    await bridge.converse('a');
    expect(bridge.parts.engine.turnsInProgress()).toBe(0);
    expect((await bridge.metrics()).parkedCalls).toBe(1);
    await vi.waitFor(() => expect(bridge.upstream.warmed).toHaveLength(1), eventually);
    expect((await bridge.metrics()).parkedCalls).toBe(1);
  });
});

describe('leftover workspaces (swept hourly once they are older than 24 hours)', () => {
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
