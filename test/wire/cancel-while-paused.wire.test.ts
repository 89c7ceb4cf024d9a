/**
 * The last subscriber's stop is a real SDK cancellation whose bounded retirement is awaited. A client that
 * stopped reading (the bridge paused the backend stream behind it) and then left must still get its run
 * cancelled and retired at once — not only at the retire bound, which would abandon the agent and cost the
 * conversation a full replay.
 */

import { connect } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Scenario } from '../fakes/cursor-backend/run-context.js';
import { closeWireBackend, startWireBridge, type WireBridge } from '../helpers/wire-bridge.js';

let wire: WireBridge | undefined;
afterEach(async () => {
  await wire?.close();
  wire = undefined;
});
afterAll(closeWireBackend);

const chunk = 'x'.repeat(64 * 1024);
let cancelled = 0;

const scenario: Scenario = async (run) => {
  if (!run.prompt.includes('long answer') || run.prompt.includes('shorter')) {
    run.text('short answer');
    return;
  }
  // A long answer at once: what the bridge does not read stays in the backend's write buffer.
  for (let index = 0; index < 128; index += 1) run.text(chunk);
  await new Promise<void>((resolve) => run.signal.addEventListener('abort', () => resolve(), { once: true }));
  cancelled += 1;
};

const anthropicBody = (messages: unknown[]) =>
  JSON.stringify({ model: 'composer-2', max_tokens: 100, stream: true, messages });

describe('a client that stopped reading, then left', () => {
  it('has its paused run cancelled and retired: the conversation continues slim on the same agent', async () => {
    wire = await startWireBridge({ scenario });
    const post = (messages: unknown[]) =>
      fetch(`${wire!.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: anthropicBody(messages),
      }).then((response) => response.text());
    const opening = [
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'short answer' },
    ];
    expect(await post(opening.slice(0, 1))).toContain('short answer');
    const { port } = new URL(wire.url);
    const payload = anthropicBody([...opening, { role: 'user', content: 'long answer please' }]);
    const socket = connect(Number(port), '127.0.0.1');
    socket.write(
      `POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n` +
        `content-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
    );
    socket.pause();
    // Never read: the bridge pauses the backend behind this client.
    await expect
      .poll(() => wire!.logs.some((line) => line.includes('pausing the backend stream')), { timeout: 30_000 })
      .toBe(true);
    socket.destroy();
    await expect.poll(() => cancelled, { timeout: 30_000 }).toBe(1);

    const next = await post([
      ...opening,
      { role: 'user', content: 'long answer please' },
      { role: 'assistant', content: 'xxxx' },
      { role: 'user', content: 'shorter please' },
    ]);
    expect(next).toContain('short answer');
    const runs = wire.runRequests();
    expect(runs).toHaveLength(3);
    expect(await wire.bridge.engine.metrics()).toMatchObject({ abandonedAgents: 0, slim: 2 });
    expect(runs[2]?.conversationId).toBe(runs[0]?.conversationId);
  });
});
