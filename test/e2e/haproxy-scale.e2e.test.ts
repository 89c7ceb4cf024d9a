/**
 * Acceptance: three `cursor-bridge serve` processes (the real CLI and `@cursor/sdk`, each against its own
 * fake Cursor backend) behind the real HAProxy running `deploy/haproxy/haproxy.cfg` on loopback. The client
 * is the official `@anthropic-ai/sdk`, streaming, sending Claude Code's session header; it executes every
 * tool call it receives and counts executions per call id.
 */

import { afterEach, beforeAll, describe, expect, it, onTestFailed, onTestFinished } from 'vitest';
import { ensureBuilt } from '../helpers/ensure-built.js';
import { createGateWithSafetyNet } from '../helpers/gate.js';
import { startBridgeCluster, type BridgeCluster } from '../helpers/e2e/haproxy-cluster.js';
import { ensureHaproxy } from '../helpers/e2e/haproxy-lb.js';
import {
  createConversationBackend,
  runConversation,
  type ConversationBackend,
  type ConversationOutcome,
} from '../helpers/e2e/scale-conversations.js';

const shell = { name: 'Bash', input: (command: string) => ({ command }) };
/** `CURSOR_BRIDGE_DRAIN_TIMEOUT` of the rolling-restart cluster, in seconds. */
const drainTimeoutSeconds = 120;

let cluster: BridgeCluster | undefined;
let backends: ConversationBackend[] = [];

const start = async (env: Record<string, string> = {}): Promise<BridgeCluster> => {
  backends = [createConversationBackend(), createConversationBackend(), createConversationBackend()];
  cluster = await startBridgeCluster({
    scenario: { turns: [] },
    shell,
    backendScenario: (index) => (backends[index] ?? createConversationBackend()).scenario,
    env,
  });
  const started = cluster;
  onTestFailed(() => console.error(started.describe()));
  return started;
};

afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

/** The indexes of the processes whose backend played any run of `conversation`. */
const processesOf = (conversation: string): number[] =>
  backends.flatMap((backend, index) =>
    backend.runs.some((run) => run.conversation === conversation) ? [index] : [],
  );

/** Checks that hold for every conversation of a cluster: one process, one agent, no loss, no repeat. */
const expectServedOnce = (outcome: ConversationOutcome, index: number): void => {
  const { conversation } = outcome;
  expect(outcome.firstAnswer).toBe(`${conversation} done: ${conversation}-a, ${conversation}-b`);
  expect(outcome.secondAnswer).toBe(`${conversation} second`);
  // 0 duplicate executions: two calls, each executed once.
  expect([...outcome.executions.entries()]).toEqual([
    [`call_${conversation}_a`, 1],
    [`call_${conversation}_b`, 1],
  ]);
  const all = backends[index]?.runs.filter((run) => run.conversation === conversation) ?? [];
  const runs = all.filter((run) => run.outcome === 'answered');
  // Every turn answered once, on the same agent of the same process: turn 1 (resumed twice by results)
  // and turn 2.
  expect(runs.map((run) => run.turn)).toEqual([1, 2]);
  expect(runs[1]?.agentId).toBe(runs[0]?.agentId);
  // 0 lost tool results: each reached the parked run that asked for it.
  expect(runs[0]?.toolResults).toEqual([`${conversation}-a`, `${conversation}-b`]);
  // On a starved machine the SDK itself may re-send a run whose stream it saw stall (its agent retries):
  // the attempt it gave up stays unanswered on the backend, on the same agent. The bridge never
  // starts a second run of a turn; a replay would be a new agent.
  const abandoned = all.filter((run) => run.outcome !== 'answered');
  for (const run of abandoned) expect(run.agentId).toBe(runs[0]?.agentId);
  if (abandoned.length > 0) {
    console.warn(
      `${conversation}: ${abandoned.length} run attempt(s) the SDK re-sent (turns ${abandoned.map((run) => run.turn).join(', ')})`,
    );
  }
};

/** Runs every backend played that answered (an attempt the SDK re-sent stays open: see above). */
const answeredRuns = (): number =>
  backends.reduce(
    (total, backend) => total + backend.runs.filter((run) => run.outcome === 'answered').length,
    0,
  );

describe('three bridges behind HAProxy', { timeout: 180_000 }, () => {
  beforeAll(async () => {
    await Promise.all([ensureHaproxy(), ensureBuilt()]);
  }, 600_000);

  it('keeps each of 30 concurrent conversations on one process, loses no tool result, runs none twice, and uses all three', async () => {
    const { baseUrl } = await start();
    const outcomes = await Promise.all(
      Array.from({ length: 30 }, (_, index) =>
        runConversation({ baseUrl, conversation: `conv-${index + 1}` }),
      ),
    );

    const served = outcomes.map((outcome) => processesOf(outcome.conversation));
    expect(served.every((processes) => processes.length === 1)).toBe(true);
    for (const [index, outcome] of outcomes.entries()) expectServedOnce(outcome, served[index]?.[0] ?? -1);
    expect(new Set(served.flat()).size).toBe(3);
    // Nothing beyond the 60 runs of the 30 conversations was answered by any backend.
    expect(answeredRuns()).toBe(60);
  });

  it('rolling restart: SIGTERM while a call is parked; the result completes the turn within the drain bound, new conversations go elsewhere, exit 0', async () => {
    const { baseUrl, bridges, lb } = await start({
      CURSOR_BRIDGE_DRAIN_TIMEOUT: String(drainTimeoutSeconds),
    });
    let drained = -1;
    let during: ConversationOutcome[] = [];
    const held = await runConversation({
      baseUrl,
      conversation: 'conv-0',
      beforeToolResult: async (toolUseId) => {
        if (toolUseId !== 'call_conv-0_a') return;
        // The call is parked in the process that holds the conversation: drain exactly that one.
        drained = processesOf('conv-0')[0] ?? -1;
        const target = bridges[drained];
        if (target === undefined) throw new Error('no process holds conv-0');
        process.kill(target.pid, 'SIGTERM');
        const server = `bridge${drained + 1}`;
        await lb.waitForStates((states) => states[server] === 'DOWN', 60_000);

        // The draining process itself: health says so, and a new conversation sent to it directly
        // gets a retryable 503 with retry-after in the Anthropic envelope.
        const health = await fetch(`http://127.0.0.1:${target.port}/health`);
        expect([health.status, await health.json()]).toEqual([503, { status: 'draining' }]);
        const refused = await fetch(`http://127.0.0.1:${target.port}/v1/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-claude-code-session-id': 'direct-new' },
          body: JSON.stringify({
            model: 'composer-2',
            max_tokens: 10,
            messages: [{ role: 'user', content: 'Conversation conv-99: hello.' }],
          }),
        });
        expect(refused.status).toBe(503);
        expect(refused.headers.get('retry-after')).toBe('2');
        expect(await refused.json()).toMatchObject({ type: 'error', error: { type: 'api_error' } });

        // Meanwhile new conversations through HAProxy reach only the two other processes.
        during = await Promise.all(
          Array.from({ length: 6 }, (_, index) =>
            runConversation({ baseUrl, conversation: `conv-${index + 1}` }),
          ),
        );
      },
    });
    const target = bridges[drained];
    if (target === undefined) throw new Error('the drained process was never chosen');
    const exit = await target.exited;

    // The parked call's result (and the second call's) completed the turn on the draining process.
    expect(held.firstAnswer).toBe('conv-0 done: conv-0-a, conv-0-b');
    expect(
      backends[drained]?.runs.find((run) => run.conversation === 'conv-0' && run.turn === 1),
    ).toMatchObject({
      toolResults: ['conv-0-a', 'conv-0-b'],
      outcome: 'answered',
    });
    expect([...held.executions.values()]).toEqual([1, 1]);
    // The second turn came after the drain: on whichever process now holds it (documented in
    // docs/scaling.md: a replay there when the drained process had already gone).
    expect(held.secondAnswer).toBe('conv-0 second');

    for (const outcome of during) {
      const processes = processesOf(outcome.conversation);
      expect(processes).toHaveLength(1);
      expect(processes[0]).not.toBe(drained);
      expectServedOnce(outcome, processes[0] ?? -1);
    }
    expect(exit).toEqual({ code: 0, signal: null });
    // It exited because every live conversation finished, not because the drain deadline passed.
    expect(target.output().stdout).toContain('drained: every live conversation finished');
    expect(target.output().stdout).not.toContain('drain deadline passed');
  });

  it('streams through HAProxy unbuffered: the first text and keepalives reach the client while the model is still silent', async () => {
    // The model says its first words, then stays silent until the client has seen them and a keepalive
    // through HAProxy (the serve helper's keepalive interval is 1 s). A proxy that buffered the stream
    // would hold both back: the model would only go on when the safety net below gives up, and the order
    // assertions fail.
    const clientSawThem = createGateWithSafetyNet(60_000);
    onTestFinished(() => clientSawThem.dispose());
    cluster = await startBridgeCluster({
      scenario: { turns: [] },
      shell,
      backendScenario: () => async (run) => {
        run.text('first words');
        await clientSawThem.opened;
        run.text(' and the rest');
        run.turnEnded({ inputTokens: 10, outputTokens: 5 });
      },
    });
    const started = cluster;
    onTestFailed(() => console.error(started.describe()));
    const response = await fetch(`${cluster.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-claude-code-session-id': 'unbuffered-1' },
      body: JSON.stringify({
        model: 'composer-2',
        max_tokens: 100,
        stream: true,
        messages: [{ role: 'user', content: 'Talk slowly.' }],
      }),
    });
    const decoder = new TextDecoder();
    let received = '';
    let seenBeforeRelease = '';
    for await (const chunk of response.body ?? []) {
      received += decoder.decode(chunk, { stream: true });
      if (!clientSawThem.isOpen && received.includes('first words') && received.includes('event: ping')) {
        seenBeforeRelease = received;
        clientSawThem.open();
      }
    }

    expect(clientSawThem.bySafetyNet).toBe(false);
    expect(seenBeforeRelease).toContain('first words');
    expect(seenBeforeRelease).toContain('event: ping');
    expect(seenBeforeRelease).not.toContain(' and the rest');
    expect(received).toContain(' and the rest');
    expect(received).toContain('event: message_stop');
  });
});
