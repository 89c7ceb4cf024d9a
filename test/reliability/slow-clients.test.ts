/**
 * Issue 11, item 1: clients that stop reading a long answer must not grow the bridge's memory without
 * bound, and must be cut off (run cancelled, response closed) past the stall deadline. Measured in a
 * child process (the real CLI and SDK against the fake backend), so the figures are the bridge's.
 */

import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scenario } from '../fakes/cursor-backend/index.js';
import { startBridgeProcess, type BridgeProcess } from './helpers/bridge-process.js';

const chunk = 'lorem ipsum '.repeat(1_365); // ~16 KiB
const chunksPerAnswer = 2_048; // ~32 MiB per answer, at ~1.6 MiB/s: a 20 s answer
const chunkIntervalMs = 10;
const clients = 5;
const stallTimeoutMs = 2_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A reader slower than the backend: 8 MiB, ≈ 2 ms per read of the body. */
const slowReaderChunks = 512;
const markedChunk = (index: number): string => `[${index}]`.padEnd(chunk.length, '.');

let produced = 0;
let cancelledRuns = 0;
/** Per 'burst' run: the backend's unsent bytes, last sampled before the bridge cancelled it. */
const burstBacklogs = new Map<string, number>();
/** A long answer, produced as fast as the bridge takes it, stopping when the bridge cancels. */
const scenario: Scenario = async (run) => {
  if (run.text.length > 0 && run.request.text.includes('short')) {
    run.text('ok');
    run.turnEnded();
    return;
  }
  if (run.request.text.includes('slow reader')) {
    // The whole answer at once, each chunk marked with its index; the turn ends once the bridge took it.
    for (let index = 0; index < slowReaderChunks; index += 1) run.text(markedChunk(index));
    while (run.open && run.writeBacklog > 0) await sleep(20);
    run.turnEnded();
    return;
  }
  if (run.request.text.includes('burst')) {
    // The whole answer at once: what the bridge does not read stays in the backend's write buffer.
    for (let index = 0; index < chunksPerAnswer; index += 1) run.text(chunk);
    while (!run.signal.aborted) {
      burstBacklogs.set(run.request.text, run.writeBacklog);
      await sleep(50);
    }
    return;
  }
  for (let index = 0; index < chunksPerAnswer; index += 1) {
    if (run.signal.aborted) {
      cancelledRuns += 1;
      return;
    }
    run.text(chunk);
    produced += chunk.length;
    await sleep(chunkIntervalMs);
  }
  run.turnEnded();
};

const body = (text: string) =>
  JSON.stringify({
    model: 'composer-2',
    max_tokens: 100,
    stream: true,
    messages: [{ role: 'user', content: text }],
  });

/** Send a streaming request on a raw socket and never read the answer. */
const neverReading = (port: number, text: string): Promise<Socket> =>
  new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      const payload = body(text);
      socket.write(
        `POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n` +
          `x-api-key: sk-test\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
      );
      socket.pause();
      resolve(socket);
    });
    socket.on('error', reject);
  });

let bridge: BridgeProcess;
const warmUp = () =>
  fetch(`${bridge.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'sk-test' },
    body: body('short warm-up'),
  });
beforeAll(async () => {
  bridge = await startBridgeProcess({
    scenario,
    env: { CURSOR_BRIDGE_STALL_TIMEOUT_MS: String(stallTimeoutMs), LOG_LEVEL: 'debug' },
  });
}, 60_000);
afterAll(async () => bridge?.close());

describe('slow and never-reading clients (issue 11, item 1)', () => {
  it('5 clients never reading a 32 MiB answer: the runs are cancelled at the stall deadline, RSS stays bounded', async () => {
    await (await warmUp()).text();
    await sleep(500);
    const baseline = await bridge.rssMb();
    const sockets = await Promise.all(
      Array.from({ length: clients }, (_, index) => neverReading(bridge.port, `long answer ${index}`)),
    );
    let peak = baseline;
    const startedAt = Date.now();
    let producedMidway: number | undefined;
    while (Date.now() - startedAt < stallTimeoutMs + 5_000) {
      peak = Math.max(peak, await bridge.rssMb());
      if (producedMidway === undefined && Date.now() - startedAt >= stallTimeoutMs + 3_000)
        producedMidway = produced;
      await sleep(100);
    }
    // Read before any client reads again or leaves: what the backend was still asked for meanwhile.
    const producedLate = produced - (producedMidway ?? 0);
    const cancelledWhileStalled = cancelledRuns;
    const closedBeforeReading = sockets.filter((socket) => socket.destroyed || socket.readableEnded).length;
    // The bridge destroyed the stalled responses: the sockets see the close once they read again.
    const isClosed = (socket: Socket) => socket.destroyed || socket.readableEnded;
    for (const socket of sockets) {
      socket.on('error', () => undefined);
      socket.resume();
    }
    const closeDeadline = Date.now() + 5_000;
    while (Date.now() < closeDeadline && sockets.filter(isClosed).length < clients) await sleep(100);
    const ended = sockets.filter(isClosed).length;
    for (const socket of sockets) socket.destroy();
    await sleep(2_000);
    const after = await bridge.rssMb();
    const metrics = await (await fetch(`${bridge.url}/metrics`)).text();
    const answerMb = (chunk.length * chunksPerAnswer) / 2 ** 20;
    console.log(
      `[slow-clients] ${clients} never-reading clients × ${answerMb.toFixed(0)} MiB answers, stall deadline ${stallTimeoutMs} ms: ` +
        `RSS baseline ${baseline} MB, peak ${peak} MB (+${peak - baseline}), after ${after} MB; produced by the backend ` +
        `${(produced / 2 ** 20).toFixed(1)} MiB of ${(clients * answerMb).toFixed(0)}; runs cancelled ${cancelledRuns}; ` +
        `sockets closed by the bridge ${ended}/${clients} (${closedBeforeReading} seen before reading); ` +
        `runs cancelled while the clients were still connected ${cancelledWhileStalled}; ` +
        `produced in the last 2 s of the stall ${(producedLate / 2 ** 20).toFixed(1)} MiB`,
    );
    const stalls = bridge
      .log()
      .split('\n')
      .filter((line) => line.includes('client stopped reading')).length;
    expect(stalls).toBe(clients);
    expect(ended).toBe(clients);
    expect(cancelledWhileStalled).toBe(clients);
    expect(producedLate).toBe(0);
    // Without a stall deadline the SDK pulls every answer into the bridge, and nothing ends it.
    expect(produced).toBeLessThan(clients * chunk.length * chunksPerAnswer * 0.5);
    expect(peak - baseline).toBeLessThan(200);
    // Nothing of the dropped responses is in flight any more.
    expect(metrics).toMatch(/^cursor_bridge_sessions_in_flight 0$/m);
  }, 60_000);

  it('a backend that sends a whole 32 MiB answer at once is held back by the clients that do not read it', async () => {
    // Each test may run alone: the first conversation's one-time cost is not the answers'.
    await (await warmUp()).text();
    await sleep(500);
    const baseline = await bridge.rssMb();
    const sockets = await Promise.all(
      Array.from({ length: clients }, (_, index) => neverReading(bridge.port, `burst answer ${index}`)),
    );
    let peak = baseline;
    const startedAt = Date.now();
    while (Date.now() - startedAt < stallTimeoutMs + 3_000) {
      peak = Math.max(peak, await bridge.rssMb());
      await sleep(100);
    }
    for (const socket of sockets) socket.destroy();
    const answerBytes = chunk.length * chunksPerAnswer;
    const backlogs = [...burstBacklogs.values()];
    console.log(
      `[slow-clients] ${clients} never-reading clients, the backend sending ${(answerBytes / 2 ** 20).toFixed(0)} MiB at once: ` +
        `RSS baseline ${baseline} MB, peak ${peak} MB (+${peak - baseline}); the backend's unsent bytes when the ` +
        `stall deadline cancelled the runs: ${backlogs.map((bytes) => (bytes / 2 ** 20).toFixed(2)).join(', ')} MiB`,
    );
    // Backpressure reached the backend: the bridge took at most a few MiB of each answer (its bound on
    // pending text, the SDK's and the sockets' buffers). Without it the SDK read every answer whole
    // (0 bytes left unsent, +520 MB of RSS at the peak).
    expect(backlogs).toHaveLength(clients);
    for (const bytes of backlogs) expect(bytes).toBeGreaterThan(answerBytes - 12 * 2 ** 20);
    expect(peak - baseline).toBeLessThan(150);
    const deadline = Date.now() + 5_000;
    while (
      Date.now() < deadline &&
      !/^cursor_bridge_sessions_in_flight 0$/m.test(await (await fetch(`${bridge.url}/metrics`)).text())
    )
      await sleep(100);
    expect(await (await fetch(`${bridge.url}/metrics`)).text()).toMatch(
      /^cursor_bridge_sessions_in_flight 0$/m,
    );
  }, 60_000);

  it('a client reading slower than the backend sends gets the whole answer, in order, through the pauses', async () => {
    const response = await fetch(`${bridge.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'sk-test' },
      body: body('slow reader'),
    });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    let text = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let newline: number;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (!line.startsWith('data: ')) continue;
        const event = JSON.parse(line.slice(6)) as { type: string; delta?: { type: string; text?: string } };
        if (event.type === 'content_block_delta' && event.delta?.type === 'text_delta')
          text += event.delta.text;
        if (event.type === 'error') throw new Error(`the answer failed: ${line}`);
      }
      await sleep(2);
    }
    const expected = Array.from({ length: slowReaderChunks }, (_, index) => markedChunk(index)).join('');
    expect(text.length).toBe(expected.length);
    expect(text === expected).toBe(true);
    // The bridge held the backend back at least once on the way (its debug line per pause).
    expect(bridge.log()).toContain('pausing the backend stream');
  }, 60_000);
});
