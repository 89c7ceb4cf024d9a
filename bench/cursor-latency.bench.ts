/**
 * Latency through the whole bridge with the real @cursor/sdk against the fake Cursor backend:
 * - first byte: request sent → first response byte at the client (target ≤ 20 ms; the stream opens
 *   before the agent exists);
 * - tool call: the backend sends the exec request → the client receives the tool_use block (target
 *   ≤ 50 ms; a peer bridge waits a fixed 1.5 s settle window).
 */

import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import { createBridge } from '../src/bridge/create-bridge.js';
import { resolveConfig } from '../src/config/load-config.js';
import { startFakeCursorBackend } from '../test/fakes/cursor-backend/fake-cursor-backend.js';

const iterations = Number(process.env['BENCH_ITERATIONS'] ?? 20);
const home = await mkdtemp(join(tmpdir(), 'cursor-bridge-bench-'));
process.env['HOME'] = home;
let execSentAt = 0;
const backend = await startFakeCursorBackend({
  scenario: async (run) => {
    if (run.prompt.includes('use the tool')) {
      execSentAt = performance.now();
      const [result] = await run.toolCalls([{ toolName: 'Bash', args: { command: 'true' } }]);
      run.text(`done ${result?.status ?? ''}`);
    } else {
      run.text('hello');
    }
    run.turnEnded({ inputTokens: 10, outputTokens: 1 });
  },
});
process.env['CURSOR_BACKEND_URL'] = backend.url;
const env = { HOME: home, CURSOR_API_KEY: 'crsr_bench' };
const config = resolveConfig({}, { path: join(home, 'config.json'), env, homedir: home });
const bridge = await createBridge({ config, env, homedir: home, logger: pino({ level: 'silent' }) });
await new Promise<void>((resolve) => bridge.server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(bridge.server.address() as AddressInfo).port}/v1/messages`;

const tools = [
  { name: 'Bash', input_schema: { type: 'object', properties: { command: { type: 'string' } } } },
];
const post = (text: string) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'composer-2',
      max_tokens: 50,
      stream: true,
      tools,
      messages: [{ role: 'user', content: text }],
    }),
  });

/** Read a response to its end; returns when `marker` first appeared (ms since `start`) and the first byte time. */
const drain = async (response: Response, start: number, marker?: string) => {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let firstByte: number | undefined;
  let markerAt: number | undefined;
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    firstByte ??= performance.now() - start;
    text += decoder.decode(value, { stream: true });
    if (marker !== undefined && markerAt === undefined && text.includes(marker)) markerAt = performance.now();
  }
  return { firstByte: firstByte ?? Number.NaN, markerAt, text };
};

const stats = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const pick = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  return `median ${pick(0.5).toFixed(1)} ms, p90 ${pick(0.9).toFixed(1)} ms, max ${(sorted.at(-1) ?? Number.NaN).toFixed(1)} ms (n=${values.length})`;
};

// Warm-up: the first request per process lists the model catalog and starts the SDK's executor.
await drain(await post('warm up'), performance.now());

const firstBytes: number[] = [];
for (let index = 0; index < iterations; index += 1) {
  const start = performance.now();
  const response = await post(`fresh conversation ${index}`);
  firstBytes.push((await drain(response, start)).firstByte);
}

const toolLatencies: number[] = [];
for (let index = 0; index < iterations; index += 1) {
  const start = performance.now();
  const response = await post(`please use the tool ${index}`);
  const { markerAt } = await drain(response, start, '"type":"tool_use"');
  if (markerAt !== undefined) toolLatencies.push(markerAt - execSentAt);
}

console.log(
  `first byte (request → first response byte, new conversation each): ${stats(firstBytes)}; target ≤ 20 ms`,
);
console.log(
  `tool call (backend exec request → client tool_use event): ${stats(toolLatencies)}; target ≤ 50 ms`,
);

await bridge.close();
await backend.close();
await rm(home, { recursive: true, force: true });
