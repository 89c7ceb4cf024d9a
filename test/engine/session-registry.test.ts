import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ToolCallGuard, WorkspacePort } from '../../src/engine/engine-deps.js';
import { Session, type ActiveRun } from '../../src/engine/session.js';
import { SessionRegistry } from '../../src/engine/session-registry.js';
import { ScriptedUpstream } from '../../src/upstream/scripted/scripted-upstream.js';
import { request, silentLogger, user } from '../helpers/engine-helpers.js';

const withId = (id: string) => ({ identity: { nativeSessionId: { value: id, source: 'x-session-id' } } });

/** A safety net for what the registry does in the background, never a speed claim. */
const eventually = { timeout: 30_000, interval: 5 };

afterEach(() => {
  vi.useRealTimers();
});

const createRegistry = (options: { maxSessions?: number; idleTtlMs?: number } = {}) => {
  const forgotten: string[] = [];
  const removed: string[] = [];
  const evicted: string[] = [];
  let now = 1_000_000;
  const guard: ToolCallGuard = {
    check: () => ({ forward: true }),
    endTurn: () => {},
    forget: (key) => forgotten.push(key),
  };
  const workspace: WorkspacePort = {
    prepare: async () => ({ workspaceDir: '/tmp/x', grounding: { head: '', tail: '' } }),
    remove: async (key) => {
      removed.push(key);
    },
    scratch: async () => ({ workspaceDir: '/tmp/x', release: async () => {} }),
  };
  const registry = new SessionRegistry({
    maxSessions: options.maxSessions ?? 2,
    idleTtlMs: options.idleTtlMs ?? 1_000,
    retireTimeoutMs: 100,
    guard,
    workspace,
    logger: silentLogger,
    onEvicted: (session) => evicted.push(session.key),
    now: () => now,
  });
  return { registry, forgotten, removed, evicted, advance: (ms: number) => (now += ms) };
};

/** A run that made one host tool call (`t1`, read from its events) and waits for its result. */
const scriptedRun = async () => {
  const upstream = new ScriptedUpstream([
    { type: 'tool-call', toolCallId: 't1', toolName: 'Bash', input: {} },
    { type: 'await-tool-results' },
  ]);
  const agent = await upstream.createSession({ workspaceDir: '/tmp/x' });
  const run = await agent.startRun({
    prompt: { text: 'p', images: [] },
    tools: [],
    model: 'm',
    reasoning: { requested: false },
  });
  await run.events.next();
  return { upstream, agent, run };
};

const active = (run: ActiveRun['run'], heldBeforeRun?: string[]): ActiveRun => ({
  run,
  toolNames: 'Bash',
  heldBeforeRun,
  workspaceDir: '/tmp/x',
  hostRoot: undefined,
});

describe('SessionRegistry', () => {
  it('admits a conversation once and finds it again by its identity', () => {
    const { registry } = createRegistry();
    const first = registry.admit(request([user('hello')], withId('a')));
    first.release();
    const again = registry.admit(request([user('hello')], withId('a')));
    expect(again.created).toBe(false);
    expect(again.session).toBe(first.session);
    expect(registry.admit(request([user('other')], withId('b'))).created).toBe(true);
  });

  it('evicts the least recently used idle session over the cap, never one in flight, and cleans up after it', async () => {
    const { registry, forgotten, removed, evicted } = createRegistry({ maxSessions: 2 });
    const a = registry.admit(request([user('a')], withId('a')));
    const b = registry.admit(request([user('b')], withId('b')));
    b.release();
    // a is still admitted (in flight): b, the idle one, goes.
    const c = registry.admit(request([user('c')], withId('c')));
    expect(evicted).toEqual([b.session.key]);
    await expect.poll(() => removed, eventually).toEqual([b.session.key]);
    expect(forgotten).toContain(b.session.key);
    expect(registry.size).toBe(2);
    // Every slot in flight: the cap is exceeded until a turn ends.
    registry.admit(request([user('d')], withId('d')));
    expect(registry.size).toBe(3);
    a.release();
    expect(registry.size).toBe(2);
    expect(evicted).toEqual([b.session.key, a.session.key]);
    expect(registry.inFlight).toBe(2);
    c.release();
  });

  it('evicts idle sessions after the TTL, but not a session whose run is parked', async () => {
    const { registry, evicted, advance } = createRegistry({ maxSessions: 8, idleTtlMs: 1_000 });
    const idle = registry.admit(request([user('idle')], withId('idle')));
    idle.release();
    const parked = registry.admit(request([user('parked')], withId('parked')));
    const { run } = await scriptedRun();
    parked.session.started(active(run));
    parked.session.park(['u'], 60_000, () => {});
    parked.release();
    expect(registry.parkedCalls).toBe(1);
    advance(999);
    await registry.evictIdle();
    expect(evicted).toEqual([]);
    advance(1);
    await registry.evictIdle();
    expect(evicted).toEqual([idle.session.key]);
    expect(registry.size).toBe(1);
    await registry.close();
    expect(registry.size).toBe(0);
    expect(run.pendingToolCalls()).toEqual([]);
  });

  it('forgets a session refused before it ran, so it takes no LRU slot', () => {
    const { registry } = createRegistry();
    const admission = registry.admit(request([user('bad model')], withId('x')));
    expect(registry.forgetUnused(admission.session)).toBe(false);
    admission.release();
    expect(registry.forgetUnused(admission.session)).toBe(true);
    expect(registry.size).toBe(0);
    expect(registry.admit(request([user('bad model')], withId('x'))).created).toBe(true);
  });
});

describe('Session transitions', () => {
  it('idle → running → parked → running → idle, with the committed history in the state', async () => {
    const { run } = await scriptedRun();
    const session = new Session(100);
    expect(session.state).toEqual({ kind: 'idle', committed: undefined, interrupted: false });
    session.started(active(run, ['u1', 'a1']));
    expect(session.state.kind).toBe('running');
    let expired = false;
    session.park(['u1', 'a1', 'u2', 'a2'], 60_000, () => (expired = true));
    expect(session.state).toMatchObject({ kind: 'parked', committed: ['u1', 'a1', 'u2', 'a2'] });
    // The run keeps its parked calls; the session reads them from it.
    expect(session.parkedToolCallIds()).toEqual(['t1']);
    expect(() => session.started(active(run))).toThrow('cannot start a run while parked');
    session.resume([]);
    expect(session.state.kind).toBe('running');
    session.finished(['u1', 'a1', 'u2', 'a2', 't', 'a3']);
    expect(session.state).toEqual({
      kind: 'idle',
      committed: ['u1', 'a1', 'u2', 'a2', 't', 'a3'],
      interrupted: false,
    });
    expect(() => session.resume([])).toThrow('cannot resume while idle');
    expect(expired).toBe(false);
  });

  it('a resumed run cut short falls back to what the agent held before the run started', async () => {
    const { run } = await scriptedRun();
    const session = new Session(100);
    session.started(active(run, ['u1', 'a1']));
    session.park(['u1', 'a1', 'u2', 'a2'], 60_000, () => {});
    session.resume([]);
    await session.retireRun();
    expect(session.state).toEqual({ kind: 'idle', committed: ['u1', 'a1'], interrupted: true });
  });

  it('a failed run leaves the history unknown; dispose releases the agent', async () => {
    const { run, agent } = await scriptedRun();
    const session = new Session(100);
    await session.ensureAgent(async () => agent);
    session.started(active(run, ['u1', 'a1']));
    await session.retireRun({ failed: true });
    expect(session.state).toEqual({ kind: 'idle', committed: undefined, interrupted: false });
    await session.dispose();
    expect(session.agent).toBeUndefined();
  });

  it("removes an evicted session's workspace once its agent is disposed, and at close", async () => {
    const { registry, removed } = createRegistry({ maxSessions: 1 });
    const { agent } = await scriptedRun();
    let disposeAgent = (): void => {};
    const agentDisposed = new Promise<void>((resolve) => (disposeAgent = resolve));
    agent.dispose = () => agentDisposed;
    const a = registry.admit(request([user('a')], withId('a')));
    await a.session.ensureAgent(async () => agent);
    a.release();
    const b = registry.admit(request([user('b')], withId('b')));
    disposeAgent();
    await vi.waitFor(() => expect(removed).toEqual([a.session.key]), eventually);
    b.release();
    await registry.close();
    expect(removed).toEqual([a.session.key, b.session.key]);
  });

  it("removes an evicted session's workspace after its agent's disposal, or its bound when it hangs", async () => {
    // The retirement bound (retireTimeoutMs 100) runs on a fake clock: the test moves it.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { registry, removed } = createRegistry({ maxSessions: 1 });
    const { agent } = await scriptedRun();
    agent.dispose = () => new Promise<void>(() => {});
    const a = registry.admit(request([user('a')], withId('a')));
    await a.session.ensureAgent(async () => agent);
    a.release();
    registry.admit(request([user('b')], withId('b')));
    await vi.advanceTimersByTimeAsync(99);
    expect(removed).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(removed).toEqual([a.session.key]);
  });
});
