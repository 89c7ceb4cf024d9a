/**
 * Clients that stop reading a long answer must not grow the bridge's memory without bound, and must be cut
 * off (run cancelled, response closed) past the stall deadline. Measured in a child process (the real CLI and
 * SDK against the fake backend), so the figures are the bridge's.
 *
 * No figure here depends on the machine's speed: each test waits for the events it claims (the backend
 * saw every run cancelled, the sockets closed, nothing in flight), with a generous `vi.waitFor` only as a
 * safety net, and the clients start reading only once every run was cancelled.
 */

import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunContext, Scenario } from '../fakes/cursor-backend/index.js';
import { sampleRssPeak, startBridgeProcess, type BridgeProcess } from '../helpers/bridge-process.js';
import { neverReading } from '../helpers/never-reading-client.js';

const chunk = 'lorem ipsum '.repeat(1_365); // ~16 KiB
const chunksPerAnswer = 2_048; // ~32 MiB per answer, at most ~1.6 MiB/s: a 20 s answer
const answerBytes = chunk.length * chunksPerAnswer;
const chunkIntervalMs = 10;
const clients = 5;
/** Long enough that a reader slower than the backend (the last test) never looks stalled. */
const stallTimeoutMs = 5_000;
/**
 * What the backend keeps unsent before it waits for the bridge to take more, as a TCP sender does: the
 * backend never produces faster than the bridge reads, whatever the machine's speed.
 */
const sendWindowBytes = 1 << 20;
/** A safety net for waits on events: far above any run's time, never the claim. */
const eventually = { timeout: 60_000, interval: 50 };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A reader slower than the backend: 8 MiB, ≈ 2 ms per read of the body. */
const slowReaderChunks = 512;
const markedChunk = (index: number): string => `[${index}]`.padEnd(chunk.length, '.');

/** Set once the test lets the never-reading clients read (or leave): later cancellations are theirs. */
let clientsReading = false;
let produced = 0;
/** The 'long answer' runs the bridge cancelled: when (epoch ms), and whether the clients still did not read. */
const cancellations: Array<{ at: number; whileStalled: boolean }> = [];
/** Per 'burst' run: the backend's unsent bytes, last sampled before the bridge cancelled it. */
const burstBacklogs = new Map<string, number>();
/**
 * The 'burst' conversations whose run the bridge cancelled. A set: on a starved machine the SDK may re-send
 * a paused run (its 30 s stall detector), and the re-sent attempt is cancelled too; what counts is that
 * every never-reading client's run ends.
 */
const burstsCancelled = new Set<string>();
let burstAttemptsCancelled = 0;

/** Until the bridge took all but `bytes` of what the backend wrote, or the stream closed. */
const waitForBacklog = async (run: RunContext, bytes: number): Promise<void> => {
  while (run.open && run.writeBacklog > bytes) await sleep(5);
};

const scenario: Scenario = async (run) => {
  if (run.request.text.includes('short')) {
    run.text('ok');
    run.turnEnded();
    return;
  }
  if (run.request.text.includes('slow reader')) {
    // The whole answer at once, each chunk marked with its index; the turn ends once the bridge took it.
    for (let index = 0; index < slowReaderChunks; index += 1) run.text(markedChunk(index));
    await waitForBacklog(run, 0);
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
    burstsCancelled.add(run.request.text);
    burstAttemptsCancelled += 1;
    return;
  }
  // A long answer, produced no faster than the bridge takes it, stopping when the bridge cancels.
  for (let index = 0; index < chunksPerAnswer; index += 1) {
    await waitForBacklog(run, sendWindowBytes);
    if (run.signal.aborted) {
      cancellations.push({ at: Date.now(), whileStalled: !clientsReading });
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

let bridge: BridgeProcess;
const metrics = async (): Promise<string> => (await fetch(`${bridge.url}/metrics`)).text();
/** Until nothing is in flight: no admitted turn, running run or parked call. */
const untilIdle = () =>
  vi.waitFor(
    async () => expect(await metrics()).toMatch(/^cursor_bridge_sessions_in_flight 0$/m),
    eventually,
  );
/** A short turn read to its end, then the bridge idle: what a baseline is measured after. */
const warmUp = async (): Promise<void> => {
  const response = await fetch(`${bridge.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'sk-test' },
    body: body('short warm-up'),
  });
  await response.text();
  await untilIdle();
};
const stallLines = () =>
  bridge
    .log()
    .split('\n')
    .filter((line) => line.includes('client stopped reading'));

beforeAll(async () => {
  bridge = await startBridgeProcess({
    scenario,
    env: { CURSOR_BRIDGE_STALL_TIMEOUT_MS: String(stallTimeoutMs), LOG_LEVEL: 'debug' },
  });
}, 60_000);
afterAll(async () => bridge?.close());

describe('slow and never-reading clients', () => {
  it('5 clients never reading a 32 MiB answer: the runs are cancelled at the stall deadline, RSS stays bounded', async () => {
    await warmUp();
    const baseline = await bridge.rssMb();
    const sampler = sampleRssPeak(bridge, baseline);
    const sockets = await Promise.all(
      Array.from({ length: clients }, (_, index) => neverReading(bridge.port, body(`long answer ${index}`))),
    );
    // The bridge cancels each run on its own: no client reads or leaves before all were cancelled.
    await vi.waitFor(() => expect(cancellations).toHaveLength(clients), eventually);
    const peak = await sampler.stop();
    const producedWhenCancelled = produced;
    clientsReading = true;
    // The bridge destroyed the stalled responses: the sockets see the close once they read again.
    const isClosed = (socket: Socket) => socket.destroyed || socket.readableEnded;
    const closedBeforeReading = sockets.filter(isClosed).length;
    for (const socket of sockets) {
      socket.on('error', () => undefined);
      socket.resume();
    }
    await vi.waitFor(() => expect(sockets.filter(isClosed)).toHaveLength(clients), eventually);
    for (const socket of sockets) socket.destroy();
    // Nothing of the dropped responses is in flight any more.
    await untilIdle();
    const after = await bridge.rssMb();
    await vi.waitFor(() => expect(stallLines()).toHaveLength(clients), eventually);
    const answerMb = answerBytes / 2 ** 20;
    console.log(
      `[slow-clients] ${clients} never-reading clients × ${answerMb.toFixed(0)} MiB answers, stall deadline ${stallTimeoutMs} ms: ` +
        `RSS baseline ${baseline} MB, peak ${peak} MB (+${peak - baseline}), after ${after} MB; produced by the backend ` +
        `${(produced / 2 ** 20).toFixed(1)} MiB of ${(clients * answerMb).toFixed(0)}; runs cancelled ${cancellations.length}, ` +
        `all while the clients were not reading; sockets closed by the bridge ${clients}/${clients} ` +
        `(${closedBeforeReading} seen before reading)`,
    );
    expect(cancellations.every((cancellation) => cancellation.whileStalled)).toBe(true);
    // The bridge logged each stall before the backend saw that run cancelled (pino's `time` and the
    // scenario's clock are the same system clock).
    const stalledAt = stallLines()
      .map((line) => (JSON.parse(line) as { time: number }).time)
      .sort((a, b) => a - b);
    const cancelledAt = cancellations.map((cancellation) => cancellation.at).sort((a, b) => a - b);
    stalledAt.forEach((at, index) => expect(at).toBeLessThanOrEqual(cancelledAt[index] ?? -1));
    // The backend was asked for nothing once the runs were cancelled (no run was re-sent), and backpressure
    // held it to what the bridge's buffers take: far from the whole answers.
    expect(produced).toBe(producedWhenCancelled);
    expect(produced).toBeLessThan(clients * answerBytes * 0.5);
    expect(peak - baseline).toBeLessThan(200);
  }, 240_000);

  it('a backend that sends a whole 32 MiB answer at once is held back by the clients that do not read it', async () => {
    // Each test may run alone: the first conversation's one-time cost is not the answers'.
    await warmUp();
    const baseline = await bridge.rssMb();
    const sampler = sampleRssPeak(bridge, baseline);
    const sockets = await Promise.all(
      Array.from({ length: clients }, (_, index) => neverReading(bridge.port, body(`burst answer ${index}`))),
    );
    await vi.waitFor(() => expect(burstsCancelled.size).toBe(clients), eventually);
    const peak = await sampler.stop();
    for (const socket of sockets) socket.destroy();
    const backlogs = [...burstBacklogs.values()];
    console.log(
      `[slow-clients] ${clients} never-reading clients, the backend sending ${(answerBytes / 2 ** 20).toFixed(0)} MiB at once: ` +
        `RSS baseline ${baseline} MB, peak ${peak} MB (+${peak - baseline}); the backend's unsent bytes when the ` +
        `stall deadline cancelled the runs: ${backlogs.map((bytes) => (bytes / 2 ** 20).toFixed(2)).join(', ')} MiB ` +
        `(run attempts cancelled: ${burstAttemptsCancelled})`,
    );
    // Backpressure reached the backend: the bridge took at most a few MiB of each answer (its bound on
    // pending text, the SDK's and the sockets' buffers). Without it the SDK read every answer whole
    // (0 bytes left unsent, +520 MB of RSS at the peak).
    expect(backlogs).toHaveLength(clients);
    for (const bytes of backlogs) expect(bytes).toBeGreaterThan(answerBytes - 12 * 2 ** 20);
    expect(peak - baseline).toBeLessThan(150);
    await untilIdle();
  }, 240_000);

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
  }, 120_000);
});
