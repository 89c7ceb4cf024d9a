/**
 * Whether a `cursor-bridge serve` process (the real CLI and SDK, the fake Cursor backend in this process) gives
 * its memory back once a load has gone. Two scenarios, each against a fresh process:
 *
 * - **slow**: `BENCH_SLOW_CLIENTS` (default 3) clients request a `BENCH_ANSWER_MB` (default 64) MiB answer the
 *   backend sends at once, and never read it; the bridge's stall deadline (`CURSOR_BRIDGE_STALL_TIMEOUT_MS`,
 *   default here 5000) cancels the runs, then the clients leave;
 * - **fuzz**: `BENCH_FUZZ_REQUESTS` (default 3012) malformed and oversized requests, 8 at a time, to the three
 *   turn endpoints: bodies that are not JSON, truncated, nested too deep, of the wrong shape, with huge strings,
 *   and every `BENCH_FUZZ_LARGE_EVERY`-th (default 40) a body over the 64 MiB limit, sent chunked (read up to the
 *   limit) or announced by its content-length (refused unread).
 *
 * For each it prints RSS at the start (after a warm-up), at the peak (sampled every 100 ms) and
 * `BENCH_SETTLE_MS` (default 15000) after the load left, with the process's own `process.memoryUsage()` (heap
 * used, external, array buffers, through `side-by-side/memory-probe.mjs`) at each point, then RSS each second
 * up to `BENCH_IDLE_MS` (default 60000) after release. `BENCH_SCENARIOS=slow,fuzz` picks scenarios;
 * `BENCH_NODE_ARGS` adds node flags to `serve`, and `MALLOC_*` / `CURSOR_BRIDGE_*` settings pass through to it
 * (e.g. `MALLOC_ARENA_MAX=2`). `BENCH_HEAP_SNAPSHOT=1,2,3` writes heap snapshots at the start, peak and settle
 * reports into `BENCH_PROBE_DIR` (a snapshot forces a full GC: for investigations only).
 */

import { mkdir, mkdtemp, readFile, stat } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Scenario } from '../test/fakes/cursor-backend/index.js';
import { sampleRssPeak, startBridgeProcess, type BridgeProcess } from '../test/helpers/bridge-process.js';
import { neverReading } from '../test/helpers/never-reading-client.js';

const here = dirname(fileURLToPath(import.meta.url));
const numberFrom = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const slowClients = numberFrom('BENCH_SLOW_CLIENTS', 3);
const answerBytes = numberFrom('BENCH_ANSWER_MB', 64) * 2 ** 20;
const fuzzRequests = numberFrom('BENCH_FUZZ_REQUESTS', 3012);
const largeEvery = numberFrom('BENCH_FUZZ_LARGE_EVERY', 40);
const settleMs = numberFrom('BENCH_SETTLE_MS', 15_000);
const idleMs = numberFrom('BENCH_IDLE_MS', 60_000);
const scenarios = new Set((process.env['BENCH_SCENARIOS'] ?? 'slow,fuzz').split(','));
const fuzzConcurrency = 8;
/** The bridge's default request body limit. */
const bodyLimit = 64 * 2 ** 20;

const probeDir = process.env['BENCH_PROBE_DIR'] ?? (await mkdtemp(join(tmpdir(), 'cb-memory-release-')));
await mkdir(probeDir, { recursive: true });
const passThrough = Object.fromEntries(
  Object.entries(process.env).filter(
    (entry): entry is [string, string] =>
      (entry[0].startsWith('MALLOC_') || entry[0].startsWith('CURSOR_BRIDGE_')) && entry[1] !== undefined,
  ),
);
const nodeArgs = [
  '--import',
  pathToFileURL(join(here, 'side-by-side', 'memory-probe.mjs')).href,
  ...(process.env['BENCH_NODE_ARGS'] ?? '').split(' ').filter((arg) => arg !== ''),
];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const mb = (bytes: number): string => (bytes / 2 ** 20).toFixed(1);

const chunk = 'lorem ipsum '.repeat(1_365); // ~16 KiB
let cancelled = 0;
const scenario: Scenario = async (run) => {
  if (!run.request.text.includes('long answer')) {
    run.text('ok');
    run.turnEnded();
    return;
  }
  // The whole answer at once: what the bridge does not read stays in the backend's write buffer.
  for (let sent = 0; sent < answerBytes; sent += chunk.length) run.text(chunk);
  while (!run.signal.aborted) await sleep(50);
  cancelled += 1;
};

type ProbeReport = {
  memoryUsage: NodeJS.MemoryUsage;
  heap: { total_heap_size: number; used_heap_size: number };
};

/** Asks the bridge's memory probe for a report and waits for it. */
const probe = async (bridge: BridgeProcess): Promise<ProbeReport> => {
  const file = join(probeDir, `${bridge.pid}.json`);
  const before = await stat(file).then(
    (info) => info.mtimeMs,
    () => 0,
  );
  process.kill(bridge.pid, 'SIGUSR2');
  for (let attempt = 0; attempt < 2_400; attempt += 1) {
    await sleep(50);
    const after = await stat(file).then(
      (info) => info.mtimeMs,
      () => 0,
    );
    if (after > before) return JSON.parse(await readFile(file, 'utf8')) as ProbeReport;
  }
  throw new Error(`no memory probe report from ${bridge.pid}`);
};

type Point = { rss: number; report: ProbeReport };
const point = async (bridge: BridgeProcess): Promise<Point> => {
  const report = await probe(bridge);
  return { rss: await bridge.rssMb(), report };
};
const describePoint = (name: string, { rss, report }: Point, baseline?: Point): string => {
  const usage = report.memoryUsage;
  const delta = baseline === undefined ? '' : ` (${rss - baseline.rss >= 0 ? '+' : ''}${rss - baseline.rss})`;
  return (
    `  ${name.padEnd(22)} RSS ${String(rss).padStart(4)} MB${delta.padEnd(7)}  heap used ${mb(usage.heapUsed)} MB ` +
    `of ${mb(usage.heapTotal)}, external ${mb(usage.external)} MB, array buffers ${mb(usage.arrayBuffers)} MB`
  );
};

const untilIdle = async (bridge: BridgeProcess): Promise<void> => {
  for (;;) {
    const metrics = await (await fetch(`${bridge.url}/metrics`)).text();
    if (/^cursor_bridge_sessions_in_flight 0$/m.test(metrics)) return;
    await sleep(100);
  }
};

const turnBody = (text: string) =>
  JSON.stringify({
    model: 'composer-2',
    max_tokens: 100,
    stream: true,
    messages: [{ role: 'user', content: text }],
  });

const warmUp = async (bridge: BridgeProcess): Promise<void> => {
  for (let index = 0; index < 3; index += 1) {
    const response = await fetch(`${bridge.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'sk-bench' },
      body: turnBody(`short warm-up ${index}`),
    });
    await response.text();
  }
  await untilIdle(bridge);
  await sleep(2_000);
};

const endpoints = ['/v1/messages', '/v1/chat/completions', '/v1/responses'] as const;
const largeBody = Buffer.alloc(bodyLimit + 2 ** 20, 'x');
/** mulberry32: the same requests every run. */
const createRandom = (seed: number) => {
  let state = seed >>> 0;
  return (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
};

type FuzzCase = { body: string | Buffer; contentType: string; chunked: boolean };
const fuzzCase = (index: number, random: () => number): FuzzCase => {
  const json = 'application/json';
  if (index % largeEvery === largeEvery - 1)
    return { body: largeBody, contentType: json, chunked: random() < 0.5 };
  const huge = 'é'.repeat([1_000, 20_000, 200_000, 2_000_000][Math.floor(random() * 4)] ?? 1_000);
  const depth = [10, 64, 200, 3_000][Math.floor(random() * 4)] ?? 10;
  const shapes: Array<() => FuzzCase> = [
    () => ({ body: 'garbage', contentType: json, chunked: false }),
    () => ({
      body: turnBody(huge).slice(0, 1 + Math.floor(random() * 1_000)),
      contentType: json,
      chunked: false,
    }),
    () => ({
      body: `{"model":"composer-2","messages":${'['.repeat(depth)}${']'.repeat(depth)}}`,
      contentType: json,
      chunked: random() < 0.5,
    }),
    () => ({
      body: JSON.stringify({ model: 'composer-2', messages: huge }),
      contentType: json,
      chunked: random() < 0.5,
    }),
    () => ({
      body: JSON.stringify({ model: 42, messages: [{ role: 'nope', content: huge }] }),
      contentType: json,
      chunked: false,
    }),
    () => ({
      body: JSON.stringify({ messages: [{ role: 'user', content: [{ type: 'image', source: huge }] }] }),
      contentType: json,
      chunked: false,
    }),
    () => ({ body: turnBody(huge), contentType: 'text/plain', chunked: false }),
  ];
  return (shapes[Math.floor(random() * shapes.length)] ?? shapes[0]!)();
};

/** One fuzzed request; resolves with its status (0 when the connection failed). */
const send = (port: number, path: string, fuzz: FuzzCase): Promise<number> =>
  new Promise((resolve) => {
    const headers: Record<string, string | number> = {
      'content-type': fuzz.contentType,
      'x-api-key': 'sk-bench',
    };
    if (!fuzz.chunked) headers['content-length'] = Buffer.byteLength(fuzz.body);
    const request = httpRequest({ host: '127.0.0.1', port, path, method: 'POST', headers }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
      response.on('error', () => resolve(response.statusCode ?? 0));
    });
    request.on('error', () => resolve(0));
    if (fuzz.chunked && typeof fuzz.body !== 'string') {
      // Sent in 1 MiB pieces, as a streaming upload would.
      for (let at = 0; at < fuzz.body.length; at += 2 ** 20)
        request.write(fuzz.body.subarray(at, at + 2 ** 20));
      request.end();
    } else request.end(fuzz.body);
  });

const runScenario = async (name: string, load: (bridge: BridgeProcess) => Promise<string>): Promise<void> => {
  const bridge = await startBridgeProcess({
    scenario,
    nodeArgs,
    env: {
      BENCH_PROBE_DIR: probeDir,
      ...(process.env['BENCH_HEAP_SNAPSHOT'] === undefined
        ? {}
        : { BENCH_HEAP_SNAPSHOT: process.env['BENCH_HEAP_SNAPSHOT'] }),
      CURSOR_BRIDGE_STALL_TIMEOUT_MS: '5000',
      LOG_LEVEL: 'warn',
      ...passThrough,
    },
  });
  try {
    await warmUp(bridge);
    const start = await point(bridge);
    const sampler = sampleRssPeak(bridge);
    const summary = await load(bridge);
    const releasedAt = Date.now();
    const peakRss = await sampler.stop();
    const atRelease = await point(bridge);
    await untilIdle(bridge);
    await sleep(Math.max(0, releasedAt + settleMs - Date.now()));
    const settled = await point(bridge);
    const timeline: string[] = [];
    for (let second = Math.ceil(settleMs / 1000) + 1; second * 1000 <= idleMs; second += 1) {
      await sleep(Math.max(0, releasedAt + second * 1000 - Date.now()));
      timeline.push(`${second}s ${await bridge.rssMb()}`);
    }
    const idle = await point(bridge);
    console.log(
      [
        `[${name}] ${summary}`,
        describePoint('start', start),
        `  peak                   RSS ${String(peakRss).padStart(4)} MB (+${peakRss - start.rss})`,
        describePoint('at release', atRelease, start),
        describePoint(`${settleMs / 1000} s after release`, settled, start),
        describePoint(`${idleMs / 1000} s after release`, idle, start),
        `  RSS (MB) by second after release: ${timeline.join(', ')}`,
      ].join('\n'),
    );
  } finally {
    await bridge.close();
  }
};

console.log(
  `memory-release: serve with ${nodeArgs.slice(2).join(' ') || 'no extra node flags'}, ` +
    `${
      Object.entries(passThrough)
        .map(([key, value]) => `${key}=${value}`)
        .join(' ') || 'no MALLOC_/CURSOR_BRIDGE_ settings'
    }; probe reports in ${probeDir}`,
);

if (scenarios.has('slow'))
  await runScenario('slow', async (bridge) => {
    cancelled = 0;
    const sockets = await Promise.all(
      Array.from({ length: slowClients }, (_, index) =>
        neverReading(bridge.port, turnBody(`long answer ${index}`), 'sk-bench'),
      ),
    );
    while (cancelled < slowClients) await sleep(50);
    for (const socket of sockets) socket.destroy();
    return `${slowClients} never-reading clients × ${mb(answerBytes)} MiB answers sent at once, cancelled at the stall deadline, then gone`;
  });

if (scenarios.has('fuzz'))
  await runScenario('fuzz', async (bridge) => {
    const random = createRandom(1);
    const statuses = new Map<number, number>();
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < fuzzRequests) {
        const index = next++;
        const status = await send(
          bridge.port,
          endpoints[index % endpoints.length] ?? '/v1/messages',
          fuzzCase(index, random),
        );
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    };
    await Promise.all(Array.from({ length: fuzzConcurrency }, worker));
    return `${fuzzRequests} malformed and oversized requests, ${fuzzConcurrency} at a time: statuses ${JSON.stringify(Object.fromEntries(statuses))}`;
  });
