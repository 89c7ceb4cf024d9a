/**
 * A fact about `@cursor/sdk` 1.0.32 that decides whether the bridge can push backpressure up to Cursor's
 * backend (issue 11, item 1): a pending `onDelta` promise holds up the *later* `onDelta` calls (the SDK
 * chains its update handling), but it does **not** stop the SDK from reading the backend stream.
 *
 * Where the promise is dropped: `ClientInteractionController.run` (dist/esm/34.js) reads the backend's
 * interaction stream in a `for await` loop and, per update, only chains the handler without awaiting it:
 *
 *   "interactionUpdate"===t.case&&(h=h.then((()=>this.handleInteractionUpdate(e,t.value))).catch(…))
 *
 * (`yield h` comes after the loop). `handleInteractionUpdate` → `interactionListener.sendUpdate` →
 * the agent's `sendUpdate` (dist/esm/index.js: `yield k.apply(t)` awaits the accumulator, which awaits
 * `onDelta`; then the live `run.stream()` push and `appendRunMessage`) all run inside that chain. So a
 * slow consumer only grows the SDK's chain of pending updates; the socket keeps being read.
 *
 * So the bridge pauses the backend stream itself, below the SDK (`src/upstream/cursor/backend-flow.ts`,
 * tested end to end in `backend-flow-sdk.test.ts`). If this test fails after an SDK upgrade, the SDK
 * started awaiting its handlers, and a pending `onDelta` would be the simpler way to the same effect.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { SdkTestEnv } from '../../fakes/cursor-backend/sdk-test-env.js';
import { startSdkTestEnv } from '../../fakes/cursor-backend/sdk-test-env.js';
import { InMemoryAgentStore } from '../../../src/upstream/cursor/in-memory-agent-store.js';

/** 24 MiB of text in 64 KiB deltas: far beyond what loopback socket buffers hold. */
const deltaBytes = 64 * 1024;
const deltaCount = 384;
const holdMs = 2_000;

let env: SdkTestEnv;
/** The backend's unsent bytes, sampled every 100 ms after writing (epoch ms, bytes). */
const backlog: Array<{ at: number; bytes: number }> = [];
let backlogAfterWrite = Number.NaN;
let allWritten: () => void = () => undefined;
const written = new Promise<void>((resolve) => (allWritten = resolve));

beforeAll(async () => {
  env = await startSdkTestEnv({
    scenario: async (run) => {
      const chunk = 'x'.repeat(deltaBytes);
      for (let index = 0; index < deltaCount; index += 1) run.text(chunk);
      backlogAfterWrite = run.writeBacklog;
      allWritten();
      // Sample the write side while the client's first onDelta is held.
      for (let sample = 0; sample < 15; sample += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        backlog.push({ at: Date.now(), bytes: run.writeBacklog });
      }
      run.turnEnded({ inputTokens: 1, outputTokens: 1 });
    },
  });
});

afterAll(async () => {
  await env?.cleanup();
});

describe('@cursor/sdk onDelta and backpressure (fact probe)', () => {
  it('serialises onDelta calls, but keeps reading the backend while an onDelta promise is pending', async () => {
    const agent = await env.sdk.Agent.create({
      apiKey: 'crsr_test',
      model: { id: 'composer-2' },
      local: { cwd: env.workspace, store: new InMemoryAgentStore() },
    });
    const textCalls: number[] = [];
    let received = 0;
    const run = await agent.send('a long answer', {
      onDelta: async ({ update }) => {
        if (update.type !== 'text-delta') return;
        textCalls.push(Date.now());
        received += update.text.length;
        // The first text delta is "slow to consume": a client that stopped reading, seen by the bridge.
        if (textCalls.length === 1) await new Promise((resolve) => setTimeout(resolve, holdMs));
      },
    });
    await written;
    const result = await run.wait();
    agent.close();

    expect(result.status).toBe('finished');
    expect(received).toBe(deltaBytes * deltaCount);
    // Later deltas wait for the pending promise: the second call comes only after it resolved …
    const [first, second] = textCalls;
    expect(second! - first!).toBeGreaterThanOrEqual(holdMs - 50);
    // … but the SDK read the whole 24 MiB stream meanwhile: what the backend had queued (megabytes right
    // after writing) drained to nothing within the hold, so no backpressure reached the backend.
    expect(backlogAfterWrite).toBeGreaterThan(8 * 1024 * 1024);
    const whileHeld = backlog.filter(({ at }) => at > first! && at < first! + holdMs - 50);
    expect(whileHeld.length).toBeGreaterThanOrEqual(5);
    expect(whileHeld.at(-1)?.bytes).toBe(0);
  });
});
