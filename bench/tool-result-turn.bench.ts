/**
 * The bridge's own share of "tool_result → first text delta", in process and without the SDK: the real HTTP
 * server, protocol adapters, engine, coalescer and metrics, in front of
 * `tool-result-turn/instant-upstream.ts` (a run that answers a tool result at once). A `node:http` client in
 * this process parks `BENCH_BATCH` conversations on a tool call (not timed), then sends each its tool_result,
 * one at a time, like the side-by-side bench (Messages, streaming, Claude Code's session header). Per
 * tool_result turn it takes marks (`performance.now()`):
 *
 * - the server's `request` event → `handleTurn` (body, JSON, zod, the adapter), then `handleTurn` → the
 *   run's `resolveToolCalls` (identity, admission, coalescer join, the response's start, planning,
 *   resume): the inbound share;
 * - `outbound`: the run queues its first text delta → the response's `write` of the `text_delta` frame
 *   (the engine's pump, the coalescer, the encoder, SSE framing);
 * - `hops`: the microtasks between the two, counted by a chain that starts as the delta is queued
 *   and re-queues itself until the write. The SDK delivers a backend read as a long chain of microtasks
 *   (see `SseWriter.#flush`), which the bridge's hops interleave with: each hop waits behind the SDK's
 *   queued work, so with the SDK this count, not this bench's `outbound`, sets the bridge's share;
 * - `client`: the client's request start → the first chunk with `text_delta` (what the side-by-side
 *   bench reports, here without a second process);
 * - `turn`: the client's request start → the end of the response.
 *
 * It prints their medians and spread (p10, p90), the timed phase's wall and CPU per turn (the client's
 * share included), and the functions with the most self time, and with a bridge function on the stack,
 * in a V8 CPU profile of the timed phases only (written to `BENCH_CPU_PROF=<dir>` when set, for
 * DevTools). Sampling every 50 µs slows every figure: take timings with `BENCH_PROFILE=0`.
 *
 *   npm run bench -- tool-result-turn        # BENCH_TURNS (default 4000), BENCH_BATCH (default 200)
 *
 * Here every path runs thousands of times and is optimised; in the side-by-side bench (25 rounds) it
 * runs cold, and costs several times as much. Without V8's optimising tiers this bench comes close:
 *
 *   BENCH_PROFILE=0 node_modules/.bin/node --no-opt --no-maglev --import tsx bench/tool-result-turn.bench.ts
 */

import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { Agent, request as httpRequest, ServerResponse, type IncomingMessage } from 'node:http';
import { Session as InspectorSession } from 'node:inspector/promises';
import type { AddressInfo } from 'node:net';
import { findSourceMap } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Profiler } from 'node:inspector';
import { resolveConfig } from '../src/config/load-config.js';
import { engineModelResolver } from '../src/bridge/create-bridge.js';
import { createStaticWorkspace } from '../src/engine/engine-deps.js';
import { Engine } from '../src/engine/engine.js';
import { createLogger } from '../src/logging/logger.js';
import { BridgeMetrics } from '../src/metrics/bridge-metrics.js';
import { anthropicAdapter } from '../src/protocols/anthropic/anthropic-adapter.js';
import { openaiChatAdapter } from '../src/protocols/openai-chat/openai-chat-adapter.js';
import { openaiResponsesAdapter } from '../src/protocols/openai-responses/openai-responses-adapter.js';
import { createBridgeServer } from '../src/hosts/http/create-server.js';
import { ScratchPathGuards } from '../src/workspace/scratch-path-guards.js';
import { InstantUpstream } from './tool-result-turn/instant-upstream.js';

const turns = Number(process.env['BENCH_TURNS'] ?? 4_000);
const batch = Number(process.env['BENCH_BATCH'] ?? 200);
const profiling = process.env['BENCH_PROFILE'] !== '0';
const profileDir = process.env['BENCH_CPU_PROF'];

// ---- the bridge, wired as `createBridge` wires it (minus templates and scratch directories: a resumed
// turn never touches its workspace) -----------------------------------------------------------------------
const home = await mkdtemp(join(tmpdir(), 'cb-bench-trt-'));
const env = { HOME: home, CURSOR_API_KEY: 'crsr_bench' };
const config = resolveConfig({}, { path: join(home, 'config.json'), env, homedir: home });
// `serve`'s logger at the side-by-side bench's level: nothing on the turn's path is written.
const logger = createLogger({ level: 'warn', destination: { write: () => {} } });
const metrics = new BridgeMetrics({ processMetrics: true });
const upstream = new InstantUpstream();
const engine = new Engine({
  upstream,
  metrics,
  workspace: createStaticWorkspace(join(home, 'workspace')),
  guard: new ScratchPathGuards({ logger, scratchRoot: home }),
  logger,
  // Every conversation of a batch stays parked until its result.
  maxSessions: batch,
  resolveModel: engineModelResolver(config),
});
const server = createBridgeServer({
  adapters: {
    anthropic: anthropicAdapter,
    openaiChat: openaiChatAdapter,
    openaiResponses: openaiResponsesAdapter,
  },
  handleTurn: (request, signal) => {
    if (current !== undefined) current.handleAt = performance.now();
    return engine.handleTurn(request, signal);
  },
  logger,
  listModels: () => config.cursor.models,
  stallTimeoutMs: config.stallTimeoutMs,
  metrics,
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address() as AddressInfo;

// ---- marks ----------------------------------------------------------------------------------------------
type Marks = { requestAt: number; handleAt: number; writeAt: number; hops: number };
let current: Marks | undefined;
server.prependListener('request', () => {
  if (current !== undefined) current.requestAt = performance.now();
});
const write = ServerResponse.prototype.write;
ServerResponse.prototype.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
  if (
    current !== undefined &&
    current.writeAt === 0 &&
    typeof chunk === 'string' &&
    chunk.includes('"text_delta"')
  )
    current.writeAt = performance.now();
  return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
} as typeof write;

// The competing microtask chain (see `hops`): bounded, so a write that never comes cannot starve the loop.
upstream.marks.onDelta = () => {
  const marks = current;
  if (marks === undefined) return;
  const tick = (): void => {
    if (marks.writeAt !== 0 || marks.hops >= 10_000) return;
    marks.hops += 1;
    queueMicrotask(tick);
  };
  queueMicrotask(tick);
};

// ---- the client -----------------------------------------------------------------------------------------
const agent = new Agent({ keepAlive: true, maxSockets: 8 });
const tools = [
  {
    name: 'Bash',
    description: 'Run a shell command',
    input_schema: { type: 'object', properties: { command: { type: 'string' } } },
  },
];
type Message = { role: 'user' | 'assistant'; content: unknown };
type Answer = { body: string; textAt: number; endAt: number };

/** POST one streaming Messages request; times from `start` to the first `text_delta` chunk and the end. */
const post = (session: string, messages: Message[]): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const start = performance.now();
    const payload = JSON.stringify({ model: 'composer-2', max_tokens: 50, stream: true, tools, messages });
    const outgoing = httpRequest(
      {
        agent,
        host: '127.0.0.1',
        port,
        path: '/v1/messages',
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          'x-claude-code-session-id': session,
        },
      },
      (response: IncomingMessage) => {
        if (response.statusCode !== 200) reject(new Error(`bridge answered ${response.statusCode}`));
        response.setEncoding('utf8');
        let body = '';
        let textAt = 0;
        response.on('data', (chunk: string) => {
          if (textAt === 0 && chunk.includes('"text_delta"')) textAt = performance.now() - start;
          body += chunk;
        });
        response.on('end', () => resolve({ body, textAt, endAt: performance.now() - start }));
        response.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(payload);
  });

type Parked = { session: string; messages: Message[] };
/** A new conversation, parked on its tool call; returns what its tool_result turn sends. */
const park = async (index: number): Promise<Parked> => {
  const session = `bench-${index}`;
  const first: Message[] = [{ role: 'user', content: `please use the tool ${index}` }];
  const { body } = await post(session, first);
  const id = /"type":"tool_use","id":"([^"]+)"/.exec(body)?.[1];
  if (id === undefined) throw new Error(`no tool_use in ${body}`);
  return {
    session,
    messages: [
      ...first,
      { role: 'assistant', content: [{ type: 'tool_use', id, name: 'Bash', input: { command: 'true' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: 'parked' }] },
    ],
  };
};

// ---- the run --------------------------------------------------------------------------------------------
const samples = {
  request: [] as number[],
  engine: [] as number[],
  outbound: [] as number[],
  hops: [] as number[],
  client: [] as number[],
  turn: [] as number[],
};
let timedWall = 0;
let timedCpu = 0;
let timedTurns = 0;
const profiles: Profiler.Profile[] = [];
const inspector = new InspectorSession();
inspector.connect();
if (profiling) {
  await inspector.post('Profiler.enable');
  await inspector.post('Profiler.setSamplingInterval', { interval: 50 });
}

let conversation = 0;
const runBatch = async (timed: boolean): Promise<void> => {
  const parked: Parked[] = [];
  for (let index = 0; index < batch; index += 1) parked.push(await park((conversation += 1)));
  if (timed && profiling) await inspector.post('Profiler.start');
  const cpuBefore = process.cpuUsage();
  const wallBefore = performance.now();
  for (const { session, messages } of parked) {
    const marks: Marks = { requestAt: 0, handleAt: 0, writeAt: 0, hops: 0 };
    current = marks;
    const answer = await post(session, messages);
    current = undefined;
    if (!answer.body.includes('done ok')) throw new Error(`unexpected answer: ${answer.body}`);
    if (!timed) continue;
    samples.request.push(marks.handleAt - marks.requestAt);
    samples.engine.push(upstream.marks.resolvedAt - marks.handleAt);
    samples.hops.push(marks.hops);
    samples.outbound.push(marks.writeAt - upstream.marks.deltaAt);
    samples.client.push(answer.textAt);
    samples.turn.push(answer.endAt);
  }
  if (!timed) return;
  timedWall += performance.now() - wallBefore;
  const cpu = process.cpuUsage(cpuBefore);
  timedCpu += (cpu.user + cpu.system) / 1000;
  timedTurns += parked.length;
  if (profiling) profiles.push((await inspector.post('Profiler.stop')).profile);
};

await runBatch(false);
while (timedTurns < turns) await runBatch(true);

// ---- report ---------------------------------------------------------------------------------------------
const quantile = (values: number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
};
const us = (ms: number): string => `${(ms * 1000).toFixed(0)} µs`;
console.log(`${timedTurns} tool_result turns (batches of ${batch}), node ${process.version}`);
console.log(`${'mark (µs)'.padEnd(56)} ${'p10'.padStart(8)} ${'median'.padStart(8)} ${'p90'.padStart(8)}`);
for (const [name, values] of [
  ['request event → handleTurn (body, JSON, zod, adapter)', samples.request],
  ['handleTurn → resolveToolCalls (engine)', samples.engine],
  ['outbound: first delta queued → write of its frame', samples.outbound],
  ['client: request start → first text_delta chunk', samples.client],
  ['turn: request start → end of the response', samples.turn],
] as const) {
  const cells = [0.1, 0.5, 0.9].map((q) => us(quantile(values, q)).padStart(8));
  console.log(`${name.padEnd(56)} ${cells.join(' ')}`);
}
const hops = [0.1, 0.5, 0.9].map((q) => String(quantile(samples.hops, q)).padStart(8));
console.log(`${'microtask hops: first delta queued → its write'.padEnd(56)} ${hops.join(' ')}`);
console.log(
  `timed phase: ${us(timedWall / timedTurns)} wall and ${us(timedCpu / timedTurns)} CPU per tool_result turn (client and bridge)`,
);

if (profiling) {
  // Self time per function over every timed batch's profile: the time up to the next sample belongs to
  // a sample (as DevTools counts it); positions in tsx-compiled files are mapped back to the source.
  const self = new Map<string, number>();
  // Time with the function on the stack, for the bridge's own functions (src/, mcp/).
  const inclusive = new Map<string, number>();
  let total = 0;
  const where = (url: string, line: number, column: number): string => {
    const entry = url.startsWith('file://') ? findSourceMap(url)?.findEntry(line, column) : undefined;
    const original =
      entry !== undefined && 'originalLine' in entry && typeof entry.originalLine === 'number'
        ? entry.originalLine
        : line;
    const file = url.replace(/^file:\/\//, '').replace(`${process.cwd()}/`, '');
    return file === '' ? '' : `${file}:${original + 1}`;
  };
  for (const profile of profiles) {
    const byId = new Map(profile.nodes.map((node) => [node.id, node]));
    const parent = new Map<number, number>();
    for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
    const keys = new Map<number, string>();
    const keyOf = (id: number): string => {
      let key = keys.get(id);
      if (key === undefined) {
        const { functionName, url, lineNumber, columnNumber } = byId.get(id)!.callFrame;
        key = `${functionName || '(anonymous)'} ${where(url, lineNumber, columnNumber)}`;
        keys.set(id, key);
      }
      return key;
    };
    const ids = profile.samples ?? [];
    const deltas = profile.timeDeltas ?? [];
    for (let index = 0; index + 1 < ids.length; index += 1) {
      const node = byId.get(ids[index]!);
      if (node === undefined) continue;
      const key = keyOf(node.id);
      const ms = (deltas[index + 1] ?? 0) / 1000;
      self.set(key, (self.get(key) ?? 0) + ms);
      total += ms;
      const onStack = new Set<string>();
      for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
        const frame = keyOf(id);
        if (/ (src|mcp)\//.test(frame)) onStack.add(frame);
      }
      for (const frame of onStack) inclusive.set(frame, (inclusive.get(frame) ?? 0) + ms);
    }
  }
  console.log(
    `\nCPU profile of the timed phases: self time per tool_result turn (top 30 of ${us(total / timedTurns)})`,
  );
  for (const [key, ms] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30))
    console.log(`  ${us(ms / timedTurns).padStart(8)}  ${key}`);
  console.log('\nthe same profile: time with a bridge function on the stack, per tool_result turn (top 40)');
  for (const [key, ms] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, 40))
    console.log(`  ${us(ms / timedTurns).padStart(8)}  ${key}`);
  if (profileDir !== undefined) {
    await mkdir(profileDir, { recursive: true });
    const file = join(profileDir, `tool-result-turn-${Date.now()}.cpuprofile`);
    await writeFile(file, JSON.stringify(profiles.at(-1)));
    console.log(`last batch's profile: ${file}`);
  }
}

inspector.disconnect();
agent.destroy();
await engine.close();
await new Promise<void>((resolve) => server.close(() => resolve()));
await rm(home, { recursive: true, force: true });
