/**
 * A fact about `@cursor/sdk` 1.0.32 that decides whether the bridge can push backpressure up to Cursor's
 * backend: a pending `onDelta` promise holds up the *later* `onDelta` calls (the SDK chains its update
 * handling), but it does **not** stop the SDK from reading the backend stream.
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
 * tested end to end in `test/reliability/backend-flow-sdk.test.ts`). If this test fails after an SDK upgrade, the SDK
 * started awaiting its handlers, and a pending `onDelta` would be the simpler way to the same effect.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { SdkTestEnv } from '../../fakes/cursor-backend/sdk-test-env.js';
import { startSdkTestEnv } from '../../fakes/cursor-backend/sdk-test-env.js';
import { InMemoryAgentStore } from '../../../src/upstream/cursor/in-memory-agent-store.js';

/** 12 MiB of text in 64 KiB deltas: far beyond what loopback socket buffers hold. */
const deltaBytes = 64 * 1024;
const deltaCount = 192;

let env: SdkTestEnv;
let backlogAfterWrite = Number.NaN;
/** Resolves once the socket took every byte the backend wrote (its backlog fell to 0). */
let backlogDrained: () => void = () => undefined;
const drained = new Promise<void>((resolve) => (backlogDrained = resolve));

beforeAll(async () => {
  env = await startSdkTestEnv({
    scenario: async (run) => {
      const chunk = 'x'.repeat(deltaBytes);
      for (let index = 0; index < deltaCount; index += 1) run.text(chunk);
      backlogAfterWrite = run.writeBacklog;
      // Only a client that keeps reading the stream empties the backlog: if the SDK ever awaits its
      // handlers, this waits until the test times out.
      while (run.open && run.writeBacklog > 0) await new Promise((resolve) => setTimeout(resolve, 10));
      backlogDrained();
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
    let textCalls = 0;
    let received = 0;
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let firstCalled: () => void = () => undefined;
    const first = new Promise<void>((resolve) => (firstCalled = resolve));
    const run = await agent.send('a long answer', {
      onDelta: async ({ update }) => {
        if (update.type !== 'text-delta') return;
        textCalls += 1;
        received += update.text.length;
        // The first text delta is "slow to consume": a client that stopped reading, seen by the bridge.
        // It stays pending until the test releases it.
        if (textCalls === 1) {
          firstCalled();
          await held;
        }
      },
    });
    // What the backend had queued right after writing: megabytes, far beyond the socket buffers …
    await Promise.all([first, drained]);
    expect(backlogAfterWrite).toBeGreaterThan(4 * 1024 * 1024);
    // … yet the SDK read the whole stream while the first onDelta was still pending, so no backpressure
    // reached the backend; and the later deltas wait for that pending promise: none was handed over yet.
    expect(textCalls).toBe(1);
    release();
    const result = await run.wait();
    agent.close();

    expect(result.status).toBe('finished');
    expect(received).toBe(deltaBytes * deltaCount);
    expect(textCalls).toBeGreaterThan(1);
  });
});
