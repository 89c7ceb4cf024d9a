/**
 * A cleanup failure retires the agent and replays the full transcript, and a stop is a real SDK
 * cancellation whose bounded retirement is awaited before a replacement session can be created. A run
 * whose cancel never retires must not keep the conversation's agent: the next turn gets a fresh agent
 * with the whole transcript.
 */

import { describe, expect, it } from 'vitest';
import type { UpstreamRun, UpstreamSession } from '../../src/upstream/upstream-port.js';
import { captureLog } from '../helpers/capture-log.js';
import {
  assistant,
  collect,
  createTestEngine,
  never,
  request,
  textOf,
  user,
} from '../helpers/engine-helpers.js';

const neverSettles = new Promise<never>(() => {});

/** Every run's `cancel()` hangs (or fails): the stuck SDK run the bound exists for. */
const withStuckCancel = (session: UpstreamSession, cancel: () => Promise<void>): UpstreamSession => ({
  id: session.id,
  dispose: () => session.dispose(),
  startRun: async (input) => {
    const run = await session.startRun(input);
    const stuck: UpstreamRun = {
      id: run.id,
      events: run.events,
      pendingToolCalls: () => run.pendingToolCalls(),
      historyAdvanced: () => run.historyAdvanced(),
      resolveToolCalls: (results) => run.resolveToolCalls(results),
      cancel,
    };
    return stuck;
  },
});

const scripts = [
  [
    { type: 'text-delta' as const, text: 'first answer' },
    { type: 'end' as const, status: 'finished' as const },
  ],
  [
    { type: 'text-delta' as const, text: 'partial' },
    // Only a cancel that reaches the run would end this wait; the stuck one never does.
    { type: 'wait' as const, until: neverSettles },
    { type: 'end' as const, status: 'finished' as const },
  ],
  [
    { type: 'text-delta' as const, text: 'third answer' },
    { type: 'end' as const, status: 'finished' as const },
  ],
];

describe.each([
  ['never settles', () => neverSettles],
  ['rejects', () => Promise.reject(new Error('cancel failed'))],
])('a run whose cancel %s', (_name, cancel) => {
  it('abandons its agent: the next turn gets a fresh agent and the full transcript, counted and logged once', async () => {
    const { lines, logger } = captureLog('warn');
    const { engine, upstream } = createTestEngine(scripts, { retireTimeoutMs: 50, logger });
    const createSession = upstream.createSession.bind(upstream);
    upstream.createSession = async (options) => withStuckCancel(await createSession(options), cancel);

    const q1 = [user('q1')];
    expect(textOf(await collect(await engine.handleTurn(request(q1), never)))).toBe('first answer');

    // q2: the client leaves after the first delta; the cancel never retires the run.
    const q2 = [...q1, assistant('first answer'), user('q2')];
    const abort = new AbortController();
    for await (const event of await engine.handleTurn(request(q2), abort.signal)) {
      if (event.type === 'text-delta') abort.abort();
    }

    const q3 = [...q2, user('q3 instead')];
    const third = await collect(await engine.handleTurn(request(q3), never));
    expect(third.filter((event) => event.type === 'error')).toEqual([]);
    expect(textOf(third)).toBe('third answer');

    // One conversation, two agents: the stuck one was replaced, and the new one heard everything.
    expect(new Set(upstream.calls.map((call) => call.sessionId)).size).toBe(2);
    expect(upstream.calls[2]?.sessionId).not.toBe(upstream.calls[1]?.sessionId);
    const prompt = upstream.calls[2]?.input.prompt.text ?? '';
    for (const text of ['q1', 'first answer', 'q2', 'q3 instead']) expect(prompt).toContain(text);
    expect(await engine.metrics()).toMatchObject({ slim: 1, replayed: 2, abandonedAgents: 1 });
    // The stuck agent was disposed, not leaked.
    await expect.poll(() => upstream.sessions[0]?.disposed).toBe(true);
    const abandoned = lines.filter((line) => String(line['msg']).includes('abandoned'));
    expect(abandoned).toHaveLength(1);
    await engine.close();
  });
});
