/**
 * A new conversation over a WAN: the fake Cursor backend answers every request `BENCH_BACKEND_DELAY_MS`
 * late (default 60: a round trip from a laptop on a good network), so each request a new conversation
 * waits on costs a round trip. One interleaved run, every side once a round (the order rotated):
 *
 * - `cursor-bridge serve` (the real CLI, its own process, the default warm pool), timed in its own client
 *   worker (`side-by-side/bridge-client-worker.ts`) from the request's start to the SSE event;
 * - the bare `@cursor/sdk` in one long-lived process with one shared executor (`side-by-side/
 *   bare-sdk-worker.ts`, variant `shared`: every agent in one directory, so the SDK keeps one executor warm
 *   and its agent client's access token cached), timed there from `Agent.create` to the SDK's callback;
 * - with `BENCH_OTHER_BRIDGE=<built checkout>`, that checkout's `serve` as well (an A/B of two builds).
 *
 * Figures, p50 over `BENCH_ROUNDS` (default 25) rounds: a new conversation's first text delta (request →
 * first `text_delta`), and request → tool_use of a new conversation with one tool (bare: `execute`). Each
 * side has a fake backend of its own (same scenario, same delay), so the requests each side made are
 * counted apart: per new conversation, by path, all of them (the billing read and the pool's refill
 * included) and those that came before the conversation's run stream (`RunSSE`): what the SDK waited on
 * before it could start the run, with whatever ran beside it. Between conversations a side rests
 * `BENCH_SETTLE_MS` (default 500), so what a conversation set off is done before the next starts.
 *
 * Benchmarks measure; they never fail on a number.
 */

import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBuilt } from '../test/helpers/ensure-built.js';
import {
  startFakeCursorBackend,
  type FakeCursorBackend,
} from '../test/fakes/cursor-backend/fake-cursor-backend.js';
import type { BareRequest, Reply } from './side-by-side/bare-sdk-worker.js';
import {
  bridgeSettingsFromEnv,
  startBenchServe,
  stopProcesses,
  writeBenchConfig,
} from './side-by-side/bench-serve.js';
import type { ClientReply, ClientRequest, Message, Posted } from './side-by-side/bridge-client-worker.js';
import { ipc } from './side-by-side/child-process.js';
import { median, printTable, startRunClock } from './side-by-side/report.js';
import { benchScenario } from './side-by-side/scenario.js';

const delayMs = Number(process.env['BENCH_BACKEND_DELAY_MS'] ?? 60);
const rounds = Number(process.env['BENCH_ROUNDS'] ?? 25);
const settleMs = Number(process.env['BENCH_SETTLE_MS'] ?? 500);
const warmUps = 3;
const here = dirname(fileURLToPath(import.meta.url));
const otherCheckout = process.env['BENCH_OTHER_BRIDGE'];

type Side = 'bridge' | 'other' | 'bare';
/** A worker request without its `id` (distributed over the union). */
type Op<Request> = Request extends unknown ? Omit<Request, 'id'> : never;
const sides: Side[] = otherCheckout === undefined ? ['bridge', 'bare'] : ['bridge', 'other', 'bare'];
const sideName = (side: Side): string => (side === 'bare' ? 'bare SDK' : side);

await ensureBuilt();
const root = await realpath(await mkdtemp(join(tmpdir(), 'cb-bench-wan-')));
const configPath = join(root, 'config.json');
await writeBenchConfig(configPath);
const path = process.env['PATH'] ?? '/usr/bin:/bin';
const workers: ChildProcess[] = [];

const backends = new Map<Side, FakeCursorBackend>();
for (const side of sides) {
  backends.set(side, await startFakeCursorBackend({ scenario: benchScenario(1), delayMs }));
}
const backendOf = (side: Side): FakeCursorBackend => backends.get(side)!;
const sideEnv = (side: Side): Record<string, string> => ({
  PATH: path,
  CURSOR_API_KEY: 'crsr_bench',
  CURSOR_BACKEND_URL: backendOf(side).url,
});

// ---- the sides: each new conversation, timed where its client sees it --------------------------------
/** One side's two figures: ms to the first text delta, and to the tool call (then released). */
type Runner = {
  text: (prompt: string) => Promise<number>;
  tool: (prompt: string) => Promise<{ ms: number; release: () => Promise<unknown> }>;
};

const startBridge = async (side: 'bridge' | 'other'): Promise<Runner> => {
  const { child, port } = await startBenchServe({
    configPath,
    home: join(root, `${side}-home`),
    cwd: root,
    env: { ...sideEnv(side), ...bridgeSettingsFromEnv(), LOG_LEVEL: 'warn' },
    ...(side === 'other' && otherCheckout !== undefined ? { checkout: otherCheckout } : {}),
  });
  workers.push(child);
  const clientChild = fork(join(here, 'side-by-side', 'bridge-client-worker.ts'), {
    execArgv: ['--experimental-strip-types', '--disable-warning=ExperimentalWarning'],
    env: { PATH: path, BENCH_BRIDGE_URL: `http://127.0.0.1:${port}/v1/messages` },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  workers.push(clientChild);
  const channel = ipc<ClientRequest, ClientReply>(clientChild);
  await channel.ready;
  const call = (request: Op<ClientRequest>): Promise<ClientReply> =>
    channel.call(request as Omit<ClientRequest, 'id'>);
  const post = async (session: string, messages: Message[]): Promise<Posted> =>
    (await call({ op: 'post', session, messages, parse: true })).posted![0]!;
  return {
    text: async (prompt) =>
      (await post(randomUUID(), [{ role: 'user', content: prompt }])).textAt ?? Number.NaN,
    tool: async (prompt) => {
      const session = randomUUID();
      const messages: Message[] = [{ role: 'user', content: prompt }];
      const answer = await post(session, messages);
      const call = answer.content.find((block) => (block as { type: string }).type === 'tool_use') as {
        id: string;
      };
      return {
        ms: answer.toolAt ?? Number.NaN,
        release: () =>
          post(session, [
            ...messages,
            { role: 'assistant', content: answer.content },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'parked' }] },
          ]),
      };
    },
  };
};

const startBare = async (): Promise<Runner> => {
  const home = join(root, 'bare-home');
  await mkdir(home, { recursive: true });
  const child = fork(join(here, 'side-by-side', 'bare-sdk-worker.ts'), {
    execArgv: ['--experimental-strip-types', '--disable-warning=ExperimentalWarning'],
    env: {
      ...sideEnv('bare'),
      HOME: home,
      BENCH_BARE_ROOT: join(home, '.claude-code-router', 'cursor-sdk-workspaces'),
      BENCH_BARE_VARIANT: ['shared', process.env['BENCH_BARE_VARIANT'] ?? ''].join(','),
      ...(process.env['BENCH_BARE_OPTIONS'] === undefined
        ? {}
        : { BENCH_BARE_OPTIONS: process.env['BENCH_BARE_OPTIONS'] }),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  workers.push(child);
  const channel = ipc<BareRequest, Reply>(child);
  await channel.ready;
  const call = (request: Op<BareRequest>): Promise<Reply> => channel.call(request as Omit<BareRequest, 'id'>);
  return {
    text: async (prompt) => (await call({ op: 'text', prompt })).ms!,
    tool: async (prompt) => {
      const reply = await call({ op: 'tool', prompt });
      return { ms: reply.ms!, release: () => call({ op: 'result', conversation: reply.conversation! }) };
    },
  };
};

const runners = new Map<Side, Runner>();
for (const side of sides) runners.set(side, side === 'bare' ? await startBare() : await startBridge(side));
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, settleMs));

// ---- the run ------------------------------------------------------------------------------------------
const printRunClock = startRunClock();
// Warm-up: each side's first conversations list the catalog, start the SDK, fill the bridge's pool.
for (let index = 0; index < warmUps; index += 1) {
  for (const side of sides) {
    await runners.get(side)!.text(`warm up ${index}`);
    await settle();
  }
}

const figures = new Map<string, Record<Side, number[]>>();
const record = (name: string, side: Side, value: number): void => {
  const entry = figures.get(name) ?? { bridge: [], other: [], bare: [] };
  figures.set(name, entry);
  entry[side].push(value);
};
/** Per side: every request of the measured conversations, and those before each one's run stream. */
const counted = new Map<Side, { all: string[]; beforeRun: string[]; conversations: number }>(
  sides.map((side) => [side, { all: [], beforeRun: [], conversations: 0 }]),
);
/** Runs one new conversation on `side`, then counts its requests (after the settle: what it set off). */
const measure = async <T>(side: Side, conversation: () => Promise<T>): Promise<T> => {
  const backend = backendOf(side);
  const from = backend.requests.length;
  const result = await conversation();
  await settle();
  const paths = backend.requests.slice(from).map((request) => request.path);
  const runAt = paths.indexOf('/agent.v1.AgentService/RunSSE');
  const tally = counted.get(side)!;
  tally.all.push(...paths);
  tally.beforeRun.push(...paths.slice(0, runAt < 0 ? paths.length : runAt));
  tally.conversations += 1;
  return result;
};

for (let round = 0; round < rounds; round += 1) {
  for (let index = 0; index < sides.length; index += 1) {
    const side = sides[(round + index) % sides.length]!;
    const runner = runners.get(side)!;
    record('first text delta, new conversation', side, await measure(side, () => runner.text(`hi ${round}`)));
    const toolMs = await measure(side, async () => {
      const parked = await runner.tool(`please use the tool ${round}`);
      await parked.release();
      return parked.ms;
    });
    record('request → tool_use, new conversation', side, toolMs);
  }
}

// ---- report -------------------------------------------------------------------------------------------
console.log(
  `\nnew conversations over a ${delayMs} ms round trip: p50 of ${rounds} rounds (ratio: ÷ bare SDK, shared executor)`,
);
const quantile = (values: readonly number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
};
const bridgeSides = sides.filter((side) => side !== 'bare');
printTable(
  [
    'figure',
    ...sides.map((side) => `${sideName(side)} p50`),
    ...bridgeSides.map((side) => `${side} ratio`),
    ...sides.map((side) => `${sideName(side)} p90`),
  ],
  [...figures].map(([name, values]) => [
    name,
    ...sides.map((side) => `${median(values[side]).toFixed(1)} ms`),
    ...bridgeSides.map((side) => (median(values[side]) / median(values.bare)).toFixed(2)),
    ...sides.map((side) => `${quantile(values[side], 0.9).toFixed(1)} ms`),
  ]),
);

/** Requests by path per conversation, as `count` strings, for every path any side made. */
const perConversation = (pick: 'all' | 'beforeRun'): void => {
  const byPath = new Map<string, Map<Side, number>>();
  for (const [side, tally] of counted) {
    for (const requested of tally[pick]) {
      const key = requested.replace(/^\/v1\/agents\/[^/]+\/usage$/, '/v1/agents/{id}/usage');
      const counts = byPath.get(key) ?? new Map<Side, number>();
      byPath.set(key, counts);
      counts.set(side, (counts.get(side) ?? 0) + 1);
    }
  }
  printTable(
    ['path', ...sides.map(sideName)],
    [...byPath]
      .sort(([left], [right]) => left.localeCompare(right))
      .map(([key, counts]) => [
        key,
        ...sides.map((side) => ((counts.get(side) ?? 0) / counted.get(side)!.conversations).toFixed(2)),
      ]),
  );
};
console.log('\nbackend requests per new conversation, by path (all, billing read and pool refill included):');
perConversation('all');
console.log('\nof which before the conversation’s run stream (RunSSE):');
perConversation('beforeRun');
printRunClock();

await stopProcesses(workers.filter((worker) => worker.exitCode === null && worker.signalCode === null));
for (const backend of backends.values()) await backend.close();
await rm(root, { recursive: true, force: true });
