/**
 * Issue 11, item 1, end to end through the real `@cursor/sdk` against the fake backend: a CursorRun
 * whose consumer stops taking events pauses the SDK's backend stream (the backend's writes block, the
 * SDK holds a bounded part of the answer), the run's silence bound does not count that pause, and when
 * the consumer reads again the whole answer arrives in order from the same stream. Held past the SDK's
 * own 30 s stall detector, the trickle keeps the SDK from abandoning and retrying the stream.
 *
 * `sdk-delta-backpressure.test.ts` shows the same answer without the flow: the SDK drains the backend
 * while `onDelta` is pending.
 */

import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { SdkTestEnv } from '../../fakes/cursor-backend/sdk-test-env.js';
import { startSdkTestEnv } from '../../fakes/cursor-backend/sdk-test-env.js';
import { CursorRun } from '../../../src/upstream/cursor/cursor-run.js';
import { InMemoryAgentStore } from '../../../src/upstream/cursor/in-memory-agent-store.js';
import type { UpstreamEvent } from '../../../src/upstream/upstream-port.js';

/** 24 MiB of text in 64 KiB deltas, each starting with its index so that order and loss show. */
const deltaBytes = 64 * 1024;
const deltaCount = 384;
const maxPendingChars = 1024 * 1024;
const delta = (index: number): string => `<${index}>`.padEnd(deltaBytes, 'x');
const expected = Array.from({ length: deltaCount }, (_, index) => delta(index)).join('');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let env: SdkTestEnv;
/** The backend's unsent bytes of the current run, sampled every 100 ms after writing. */
let backlog: number[] = [];
let written: () => void = () => undefined;

beforeAll(async () => {
  env = await startSdkTestEnv({
    scenario: async (run) => {
      backlog = [];
      for (let index = 0; index < deltaCount; index += 1) run.text(delta(index));
      written();
      while (run.open && run.writeBacklog > 0) {
        backlog.push(run.writeBacklog);
        await sleep(100);
      }
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
    host: { resolve: () => false, settleAll: () => undefined },
    logger: pino({ level: 'silent' }),
    // Far shorter than the pauses below: the pause must not count as the backend's silence. (Not shorter:
    // a starved test process can take a second between two of the SDK's deltas.)
    idleTimeoutMs: 2_000,
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
      await sleep(4_000);
      // The backend is blocked with most of the answer unsent, and the SDK holds about the bound.
      expect(run.flow.attached).toBe(1);
      expect(run.flow.paused).toBe(true);
      // Sampled every 100 ms (fewer on a busy machine) since the backend wrote the answer.
      expect(backlog.length).toBeGreaterThanOrEqual(5);
      expect(Math.min(...backlog.slice(-5))).toBeGreaterThan(8 * 1024 * 1024);
      expect(progress.delivered).toBeLessThan(6 * 1024 * 1024);

      const { text, events } = await readAll(run);
      expect(events.filter((event) => event.type === 'error')).toEqual([]);
      expect(events.at(-1)).toEqual({ type: 'end', status: 'finished' });
      expect(text.length).toBe(expected.length);
      expect(text === expected).toBe(true);
      expect(env.backend.runRequests).toHaveLength(1);
    } finally {
      agent.close();
    }
  });

  it('held past the SDK’s 30 s stall detector, the stream survives: no retry, nothing lost', async () => {
    const runsBefore = env.backend.runRequests.length;
    const { agent, run, progress } = await startRun();
    try {
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
