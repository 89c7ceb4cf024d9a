/**
 * Backpressure, end to end through the real `@cursor/sdk` against the fake backend: a CursorRun
 * whose consumer stops taking events pauses the SDK's backend stream (the backend's writes block, the
 * SDK holds a bounded part of the answer), the run's silence bound does not count that pause, and when
 * the consumer reads again the whole answer arrives in order from the same stream. Held past the SDK's
 * own 30 s stall detector, the trickle keeps the SDK from abandoning and retrying the stream.
 *
 * `sdk-delta-backpressure.test.ts` shows the same answer without the flow: the SDK drains the backend
 * while `onDelta` is pending.
 */

import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import type { RunContext } from '../fakes/cursor-backend/run-context.js';
import type { SdkTestEnv } from '../fakes/cursor-backend/sdk-test-env.js';
import { startSdkTestEnv } from '../fakes/cursor-backend/sdk-test-env.js';
import { CursorRun } from '../../src/upstream/cursor/cursor-run.js';
import { RunToolCalls } from '../../src/upstream/cursor/host-tools/run-tool-calls.js';
import { InMemoryAgentStore } from '../../src/upstream/cursor/in-memory-agent-store.js';
import type { UpstreamEvent } from '../../src/upstream/upstream-port.js';

/** 24 MiB of text in 64 KiB deltas, each starting with its index so that order and loss show. */
const deltaBytes = 64 * 1024;
const deltaCount = 384;
const maxPendingChars = 1024 * 1024;
const delta = (index: number): string => `<${index}>`.padEnd(deltaBytes, 'x');
const expected = Array.from({ length: deltaCount }, (_, index) => delta(index)).join('');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let env: SdkTestEnv;
/** The backend's side of the current run: `writeBacklog` is what its socket has not taken yet. */
let backend: RunContext | undefined;
let written: () => void = () => undefined;

beforeAll(async () => {
  env = await startSdkTestEnv({
    scenario: async (run) => {
      backend = run;
      for (let index = 0; index < deltaCount; index += 1) run.text(delta(index));
      written();
      // The turn ends once the SDK took the whole answer off the socket.
      while (run.open && run.writeBacklog > 0) await sleep(20);
      run.turnEnded({ inputTokens: 1, outputTokens: 1 });
    },
  });
});

afterAll(async () => {
  await env?.cleanup();
});

/** Starts a CursorRun on a fresh agent; `delivered` counts the text the SDK handed over. */
const startRun = async () => {
  const run = new CursorRun({
    toolCalls: (sink) =>
      new RunToolCalls({
        ...sink,
        batchQuietMs: 60,
        broker: { resolve: () => false, settleAll: () => undefined },
      }),
    logger: pino({ level: 'silent' }),
    // Shorter than the 36 s pause below, which must not count as the backend's silence; far longer than
    // any gap a starved test process leaves between two of the SDK's deltas (2 s was not: a loaded machine
    // ended the run at it). The bound's suspension itself is pinned with fake timers in cursor-run.test.ts.
    idleTimeoutMs: 20_000,
    maxPendingChars,
  });
  // As CursorSession does: the store hears the run's request id before the SDK opens the stream.
  const store = new InMemoryAgentStore({ onRunRequest: (_runId, requestId) => run.flow.expect(requestId) });
  const agent = await env.sdk.Agent.create({
    apiKey: 'crsr_test',
    model: { id: 'composer-2' },
    local: { cwd: env.workspace, store },
  });
  const progress = { delivered: 0 };
  const onDelta: typeof run.onDelta = (event) => {
    if (event.update.type === 'text-delta') progress.delivered += event.update.text.length;
    run.onDelta(event);
  };
  const wrote = new Promise<void>((resolve) => (written = resolve));
  const sdkRun = await agent.send('a long answer', { onDelta });
  run.attach(sdkRun);
  await wrote;
  // The consumer takes nothing: past `maxPendingChars` the run pauses the backend stream.
  await vi.waitFor(() => expect(run.flow.paused).toBe(true), { timeout: 30_000, interval: 10 });
  return { agent, run, progress };
};

const readAll = async (run: CursorRun): Promise<{ text: string; events: UpstreamEvent[] }> => {
  const events: UpstreamEvent[] = [];
  let text = '';
  for await (const event of run.events) {
    events.push(event);
    if (event.type === 'text-delta') text += event.text;
  }
  return { text, events };
};

describe('BackendFlow through @cursor/sdk', () => {
  it('a consumer that stops taking events stops the backend; reading again delivers the answer whole', async () => {
    const { agent, run, progress } = await startRun();
    try {
      expect(run.flow.attached).toBe(1);
      // An absence window for a broken pause to show (the SDK would drain the backend, as in
      // sdk-delta-backpressure.test.ts). Nothing below depends on how much happened in it: a slower
      // machine only makes the window longer.
      await sleep(4_000);
      // The backend is blocked with most of the answer unsent, and the SDK holds about the bound (plus at
      // most a trickle: 256 KiB per 10 s).
      expect(run.flow.paused).toBe(true);
      expect(backend?.writeBacklog).toBeGreaterThan(8 * 1024 * 1024);
      expect(progress.delivered).toBeLessThan(6 * 1024 * 1024);

      const { text, events } = await readAll(run);
      expect(events.filter((event) => event.type === 'error')).toEqual([]);
      expect(events.at(-1)).toEqual({ type: 'end', status: 'finished' });
      expect(text.length).toBe(expected.length);
      expect(text === expected).toBe(true);
      // How many run requests it took is the SDK's business (on a starved machine it may re-send one):
      // what this test names is the pause and the answer arriving whole, once.
      expect(env.backend.runRequests.length).toBeGreaterThanOrEqual(1);
    } finally {
      agent.close();
    }
  });

  it('held past the SDK’s 30 s stall detector, the stream survives: no retry, nothing lost', async () => {
    const runsBefore = env.backend.runRequests.length;
    const { agent, run, progress } = await startRun();
    try {
      // Real time past the SDK's stall detector (its own timers, which fake timers do not reach: it arms
      // them when the stream opens). An absence window again: the SDK's 30 s and the trickle's 10 s run on
      // the same clock, so a slower machine stretches both.
      await sleep(36_000);
      expect(run.flow.paused).toBe(true);
      // The trickle: 256 KiB per 10 s on top of what the bound holds.
      expect(progress.delivered).toBeLessThan(8 * 1024 * 1024);
      const { text, events } = await readAll(run);
      expect(events.filter((event) => event.type === 'error')).toEqual([]);
      expect(events.at(-1)).toEqual({ type: 'end', status: 'finished' });
      expect(text === expected).toBe(true);
      expect(env.backend.runRequests.length - runsBefore).toBe(1);
    } finally {
      agent.close();
    }
  }, 90_000);
});
