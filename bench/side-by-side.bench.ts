/**
 * The bridge against its floor, side by side in one interleaved run: `cursor-bridge serve` (the real
 * CLI from `dist/`, its own process) and `side-by-side/bare-sdk-worker.ts` (the bare `@cursor/sdk` with
 * the same in-memory store, its own process) talk to one fake Cursor backend in this process. The
 * bridge's client is `side-by-side/bridge-client-worker.ts`, its own process like a real client's. Where
 * each side is timed: every latency and wall time of the bridge's side in the client worker (`fetch` to
 * the bridge, from the request's start to the SSE event), of the bare side in the bare worker (from
 * `Agent.create` to the SDK's callback), so neither includes IPC or this process's event loop (busy
 * running the fake backend); CPU and RSS of the bridge's and the bare SDK's processes from /proc, read
 * here. Each figure is measured alternately on both (order swapped every round) and reported as medians
 * with the ratio bridge ÷ bare:
 *
 * - first text delta on a new conversation (request → first `text_delta`; bare: create → first text delta);
 * - request → tool_use on a new conversation (bare: create → the custom tool's `execute`);
 * - request → message_stop of that tool turn, when the client may run the tool (Claude Code waits for it;
 *   bare: the same `execute`, the floor); `BENCH_TOOL_LISTING` sets how the fake announces the batch's size
 *   (see `side-by-side/scenario.ts`);
 * - tool_result → first text delta;
 * - a 10k-delta answer (7 rounds): wall time (bridge: request → end of the body; bare: create → the
 *   run's end) and process CPU (every thread's schedstat); then the same as the second turn of a
 *   conversation (bare: send → the run's end), which leaves out creating the conversation;
 * - in fresh processes (`BENCH_FRESH_ROUNDS`, default 3, each side started twice a round): spawn → accepting
 *   requests; the first two new conversations' response headers (bare: `send` resolving with its run) and
 *   tool_use; 32 new conversations at once right after one turn: request → tool_use of each (median,
 *   slowest) and the process's whole CPU from the end of that turn until it is quiet again;
 * - 32 concurrent new conversations, started at once in the worker: time from their start until the last
 *   reaches its tool call (bridge: its tool_use event; bare: `execute`) (the first burst after
 *   the start apart from the two later ones), RSS with all 32 parked (total and above idle);
 * - CPU per new conversation and RSS after a soak of `BENCH_SOAK` (default 288, a multiple of 48) new conversations
 *   (with RSS each time a side passes another 1,000 of them, for long churn: `BENCH_SOAK=5040`):
 *   5 s after each side's last soak block (the figure this bench always printed) and after `BENCH_IDLE_MS`
 *   (default 60 s) of idling, sampled every second on both sides at once, with the time each took to come
 *   back within 10 % of its final value; then both processes' heap statistics at the end of the soak and
 *   after the idle period and their GC counts during the soak (from `side-by-side/memory-probe.mjs`).
 *
 * Reading the soak's RSS: 5 s after the soak it is the soak's peak V8 heap, not what is live. Both
 * processes then hold ≈ 200 MB more anonymous RSS than V8's heap total (pages V8 freed and keeps until its
 * memory reducer runs, ≈ 17–35 s into idling), and their heap used is mostly garbage awaiting the next major
 * collection (a process runs 0–4 of them in the soak). The peak follows what each promotes to the old
 * space per conversation and its live heap (which sets V8's old-generation limit); compare after idling
 * for what stays, and with `BENCH_BARE_OPTIONS=bridge` for the SDK's own cost of the bridge's options.
 *
 * `BENCH_OTHER_BRIDGE=<checkout>` (built) adds a third side, that checkout's `cursor-bridge serve` with
 * its own client worker and HOME, measured in the same interleaved rounds (the order rotates) and
 * printed with its own ratio to the same bare SDK: an A/B of two builds against one floor, e.g. the
 * commit an issue's figures were taken at (`git worktree add`, build, `BENCH_OTHER_BRIDGE=<its dir>`).
 *
 * `BENCH_PHASES` picks phases (default `fresh,latency,stream,burst,soak`, all of them).
 * `BENCH_ROUNDS` (default 15) sets the latency rounds; `BENCH_BARE_OPTIONS=bridge` gives the bare SDK the
 * agent options the bridge needs, `BENCH_BARE_VARIANT` more of the bridge's workspace (see the worker). Benchmarks measure; they never fail on a number.
 */

import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ensureBuilt } from '../test/helpers/ensure-built.js';
import { benchScenario } from './side-by-side/scenario.js';
import { startFakeCursorBackend } from '../test/fakes/cursor-backend/fake-cursor-backend.js';
import type { BareRequest, Reply } from './side-by-side/bare-sdk-worker.js';
import {
  bridgeSettingsFromEnv,
  startBenchServe,
  stopProcesses,
  writeBenchConfig,
} from './side-by-side/bench-serve.js';
import { cpuMs, ipc, rssMb, threadCpuMs, untilQuiet } from './side-by-side/child-process.js';
import { median, printTable, startRunClock } from './side-by-side/report.js';
import type {
  ClientReply,
  ClientRequest,
  Message,
  Post,
  Posted,
} from './side-by-side/bridge-client-worker.js';

const rounds = Number(process.env['BENCH_ROUNDS'] ?? 15);
/** `BENCH_PHASES=fresh,latency,stream,burst,soak` (the default: all): the phases to run, in this order. */
const phases = new Set((process.env['BENCH_PHASES'] ?? 'fresh,latency,stream,burst,soak').split(','));
const soak = Math.max(48, Math.ceil(Number(process.env['BENCH_SOAK'] ?? 288) / 48) * 48);
const concurrent = 32;
const streamDeltas = 10_000;
const streamRounds = 7;
const here = dirname(fileURLToPath(import.meta.url));

const backend = await startFakeCursorBackend({ scenario: benchScenario(streamDeltas) });

// ---- the bridge: `cursor-bridge serve`, its own process --------------------------------------------
await ensureBuilt();
const root = await realpath(await mkdtemp(join(tmpdir(), 'cb-bench-sbs-')));
const bareHome = join(root, 'bare-home');
const configPath = join(root, 'config.json');
await writeBenchConfig(configPath);
const baseEnv = {
  PATH: process.env['PATH'] ?? '/usr/bin:/bin',
  CURSOR_API_KEY: 'crsr_bench',
  CURSOR_BACKEND_URL: backend.url,
};
// `BENCH_CPU_PROF=<dir>`: every bridge and bare SDK process writes a V8 CPU profile there on exit (read it
// in DevTools).
const profileDir = process.env['BENCH_CPU_PROF'];
// Both processes load the same memory probe (see the file) and write its reports to one directory
// (`BENCH_PROBE_DIR` to keep them, with the profiles and snapshots `BENCH_HEAP_PROFILE=1` /
// `BENCH_HEAP_SNAPSHOT=1` ask for).
const probeDir = process.env['BENCH_PROBE_DIR'] ?? join(root, 'probe');
await mkdir(probeDir, { recursive: true });
const probeArgs = ['--import', pathToFileURL(join(here, 'side-by-side', 'memory-probe.mjs')).href];
const probeEnv = {
  BENCH_PROBE_DIR: probeDir,
  ...(process.env['BENCH_HEAP_SNAPSHOT'] === undefined
    ? {}
    : { BENCH_HEAP_SNAPSHOT: process.env['BENCH_HEAP_SNAPSHOT'] }),
  ...(process.env['BENCH_HEAP_PROFILE'] === undefined
    ? {}
    : { BENCH_HEAP_PROFILE: process.env['BENCH_HEAP_PROFILE'] }),
};
// The bridge's own settings from this environment (`CURSOR_BRIDGE_WARM_WORKSPACES=0 npm run bench …`).
const bridgeSettings = bridgeSettingsFromEnv();

/** A `cursor-bridge serve` under test and its own client worker. */
type Bridge = {
  child: ChildProcess;
  client: (request: ClientOp) => Promise<ClientReply>;
  /** Stops the bridge and its client worker (the fresh-process phase; the rest stop at the end). */
  stop: () => Promise<void>;
  /** ms from the spawn until its listening line. */
  readyMs: number;
};
type ClientOp = ClientRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;

/** Starts `cursor-bridge serve` (this checkout's, or `checkout`'s) with its own HOME and client worker. */
const startBridge = async (name: string, checkout?: string): Promise<Bridge> => {
  const { child, port, readyMs } = await startBenchServe({
    configPath,
    home: join(root, `${name}-home`),
    cwd: root,
    env: { ...baseEnv, ...probeEnv, ...bridgeSettings, LOG_LEVEL: 'warn' },
    nodeArgs: [
      ...probeArgs,
      ...(profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]),
    ],
    ...(checkout === undefined ? {} : { checkout }),
  });
  // The bridge's client: `side-by-side/bridge-client-worker.ts`, its own process. Like a real client and
  // like the bare worker, it times every figure of the bridge's side itself, so neither side's figures
  // include this process's scheduling (the fake backend runs here).
  const clientChild = fork(join(here, 'side-by-side', 'bridge-client-worker.ts'), {
    execArgv: ['--experimental-strip-types', '--disable-warning=ExperimentalWarning'],
    env: { PATH: baseEnv.PATH, BENCH_BRIDGE_URL: `http://127.0.0.1:${port}/v1/messages` },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  workers.push(clientChild);
  const channel = ipc<ClientRequest, ClientReply>(clientChild);
  await channel.ready;
  return {
    child,
    client: (request) => channel.call(request as Omit<ClientRequest, 'id'>),
    stop: () => stopProcesses([clientChild, child]),
    readyMs,
  };
};
/** Every worker and server this bench started, stopped at the end. */
const workers: ChildProcess[] = [];
const otherCheckout = process.env['BENCH_OTHER_BRIDGE'];
const bridges: Partial<Record<Side, Bridge>> = { bridge: await startBridge('bridge') };
if (otherCheckout !== undefined) bridges.other = await startBridge('other', otherCheckout);

// ---- the floor: the bare SDK, its own process ------------------------------------------------------
type BareOp = BareRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;
/** The bare SDK's worker with `home` as its HOME, resolved once it has imported the SDK. */
const startBare = async (
  home: string,
): Promise<{ child: ChildProcess; call: (request: BareOp) => Promise<Reply> }> => {
  await mkdir(home, { recursive: true });
  const child = fork(join(here, 'side-by-side', 'bare-sdk-worker.ts'), {
    execArgv: [
      '--experimental-strip-types',
      '--disable-warning=ExperimentalWarning',
      ...probeArgs,
      ...(profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]),
    ],
    env: {
      ...baseEnv,
      ...probeEnv,
      HOME: home,
      BENCH_BARE_ROOT: join(home, '.claude-code-router', 'cursor-sdk-workspaces'),
      ...(process.env['BENCH_BARE_OPTIONS'] === undefined
        ? {}
        : { BENCH_BARE_OPTIONS: process.env['BENCH_BARE_OPTIONS'] }),
      // `BENCH_BARE_VARIANT=bridge,agents,hooks`: the bare SDK also in a directory with an AGENTS.md and the
      // bridge's hooks.json and deny-hook script (see the worker), the whole workspace the bridge renders.
      ...(process.env['BENCH_BARE_VARIANT'] === undefined
        ? {}
        : {
            BENCH_BARE_VARIANT: process.env['BENCH_BARE_VARIANT'],
            BENCH_BARE_HOOK_SCRIPT: join(
              here,
              '..',
              'workspace-templates',
              '.cursor',
              'hooks',
              'deny-builtin.mjs',
            ),
          }),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const channel = ipc<BareRequest, Reply>(child);
  await channel.ready;
  return { child, call: (request) => channel.call(request as Omit<BareRequest, 'id'>) };
};
const { child: bareChild, call: bare } = await startBare(bareHome);

// ---- process figures from /proc ---------------------------------------------------------------------
/** What `side-by-side/memory-probe.mjs` writes on SIGUSR2 (bytes). */
type ProbeReport = {
  memoryUsage: NodeJS.MemoryUsage;
  heap: { total_heap_size: number; used_heap_size: number; malloced_memory: number; external_memory: number };
  spaces: Record<string, { size: number; used: number }>;
  gc: { minor: number; major: number; incremental: number; weakcb: number; pauseMs: number };
};
/** Asks a child's memory probe for a report and waits for it. */
const probe = async (child: ChildProcess): Promise<ProbeReport> => {
  const file = join(probeDir, `${child.pid}.json`);
  await rm(file, { force: true });
  child.kill('SIGUSR2');
  for (let waited = 0; waited < 30_000; waited += 20) {
    try {
      return JSON.parse(await readFile(file, 'utf8')) as ProbeReport;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  throw new Error(`no memory probe report from ${child.pid}`);
};
/**
 * Where a child's RSS is, from /proc/<pid>/smaps (MB): the brk heap (glibc's main malloc arena), file
 * mappings (code, the SDK's native modules), anonymous mappings (V8's heap pages, glibc's per-thread
 * arenas, other native allocations), and the thread count.
 */
type ProcMemory = { brk: number; file: number; anonymous: number; threads: number; largestAnonymous: string };
const procMemory = async (child: ChildProcess): Promise<ProcMemory> => {
  const smaps = await readFile(`/proc/${child.pid}/smaps`, 'utf8');
  const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
  const result = { brk: 0, file: 0, anonymous: 0 };
  const anonymous: { size: number; rss: number }[] = [];
  let kind: keyof typeof result = 'anonymous';
  let size = 0;
  for (const line of smaps.split('\n')) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (header !== null) {
      size = (parseInt(header[2]!, 16) - parseInt(header[1]!, 16)) / 1024 / 1024;
      const name = header[4] ?? '';
      kind = name === '[heap]' ? 'brk' : header[3] !== '0' || name.startsWith('/') ? 'file' : 'anonymous';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss === null) continue;
    const mb = Number(rss[1]) / 1024;
    result[kind] += mb;
    if (kind === 'anonymous') anonymous.push({ size, rss: mb });
  }
  const largestAnonymous = anonymous
    .sort((a, b) => b.rss - a.rss)
    .slice(0, 6)
    .map((mapping) => `${mapping.rss.toFixed(0)}/${mapping.size.toFixed(0)}`)
    .join(' ');
  return { ...result, threads: Number(/Threads:\s+(\d+)/.exec(status)?.[1]), largestAnonymous };
};
const settle = (ms = 1_500): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

// ---- the bridge's conversations (posted by its client worker) ---------------------------------------
/** POST one streaming Messages request from the bridge's client worker (`parse: false`: the 10k stream). */
const post = async (bridge: Bridge, session: string, messages: Message[], parse = true): Promise<Posted> =>
  (await bridge.client({ op: 'post', session, messages, parse })).posted![0]!;

type Parked = { session: string; messages: Message[]; answer: Posted };
const bridgeTool = async (bridge: Bridge, prompt: string): Promise<Parked> => {
  const session = randomUUID();
  const messages: Message[] = [{ role: 'user', content: prompt }];
  const answer = await post(bridge, session, messages);
  return { session, messages, answer };
};
/** `prompts` as new conversations all at once; `ms` from their start until the last tool_use (worker). */
const bridgeBurst = async (bridge: Bridge, prompts: string[]): Promise<{ ms: number; parked: Parked[] }> => {
  const posts: Post[] = prompts.map((prompt) => ({
    session: randomUUID(),
    messages: [{ role: 'user', content: prompt }],
    parse: true,
  }));
  const reply = await bridge.client({ op: 'burst', posts });
  return {
    ms: reply.ms!,
    parked: posts.map(({ session, messages }, index) => ({
      session,
      messages,
      answer: reply.posted![index]!,
    })),
  };
};
const bridgeResult = async (bridge: Bridge, { session, messages, answer }: Parked): Promise<number> => {
  const call = answer.content.find((block) => (block as { type: string }).type === 'tool_use') as {
    id: string;
  };
  const next = await post(bridge, session, [
    ...messages,
    { role: 'assistant', content: answer.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'parked' }] },
  ]);
  return next.textAt ?? Number.NaN;
};

// ---- the run ------------------------------------------------------------------------------------------
/** `other`: the bridge of `BENCH_OTHER_BRIDGE`, when set. */
type Side = 'bridge' | 'other' | 'bare';
const sides: Side[] = bridges.other === undefined ? ['bridge', 'bare'] : ['bridge', 'other', 'bare'];
const processOf = (side: Side): ChildProcess => (side === 'bare' ? bareChild : bridges[side]!.child);
const figures = new Map<string, Record<Side, number[]> & { unit: string }>();
const record = (name: string, side: Side, value: number, unit = 'ms'): void => {
  const entry = figures.get(name) ?? { bridge: [], other: [], bare: [], unit };
  if (!figures.has(name)) figures.set(name, entry);
  entry[side].push(value);
};
/** Every side once per round, the order rotated each round so none always follows the same one. */
const alternate = async (round: number, task: (side: Side) => Promise<void>): Promise<void> => {
  for (let index = 0; index < sides.length; index += 1) await task(sides[(round + index) % sides.length]!);
};
const printRunClock = startRunClock();

// ---- fresh processes: the first requests after a start, and a burst after one turn ---------------------
// A rolling restart behind HAProxy, a router's reload and Claude Code's parallel subagents all send a new
// process its first requests, or a burst of new conversations, at once. Each round starts each side twice,
// fresh (its own HOME; the bare SDK's worker has imported the SDK when it reports ready, the bridge
// when it prints its listening line): once for its first two new conversations, once for a burst of
// `concurrent` new conversations right after one text turn, with the process's whole CPU from the end of
// that turn until it is quiet again, so whatever the turn or the burst set off in the background (the
// bridge's pool warming workspaces) is counted with the burst.
const freshRounds = phases.has('fresh') ? Number(process.env['BENCH_FRESH_ROUNDS'] ?? 3) : 0;
/** A side in a fresh process: a new conversation with one tool parks until `release`. */
type Fresh = {
  child: ChildProcess;
  /** ms from the spawn until the process accepts requests (the bridge: its listening line). */
  readyMs: number;
  text: (prompt: string) => Promise<void>;
  /** `firstByte`: bridge, its response headers; bare SDK, `send` resolving with its run. */
  tool: (prompt: string) => Promise<{ firstByte: number; toolAt: number; release: () => Promise<unknown> }>;
  /** Each conversation's start → its tool call, all started at once. */
  burst: (prompts: string[]) => Promise<{ each: number[]; release: () => Promise<unknown> }>;
  stop: () => Promise<void>;
};
const startFresh = async (side: Side, name: string): Promise<Fresh> => {
  const spawnedAt = performance.now();
  if (side === 'bare') {
    const { child, call } = await startBare(join(root, name));
    return {
      child,
      readyMs: performance.now() - spawnedAt,
      text: async (prompt) => void (await call({ op: 'text', prompt })),
      tool: async (prompt) => {
        const reply = await call({ op: 'tool', prompt });
        return {
          firstByte: reply.sentMs!,
          toolAt: reply.ms!,
          release: () => call({ op: 'result', conversation: reply.conversation! }),
        };
      },
      burst: async (prompts) => {
        const reply = await call({ op: 'burst', prompts });
        return {
          each: reply.each!,
          release: () =>
            Promise.all(reply.conversations!.map((conversation) => call({ op: 'result', conversation }))),
        };
      },
      stop: async () => {
        await call({ op: 'closeAll' });
        await stopProcesses([child]);
      },
    };
  }
  const bridge = await startBridge(name, side === 'other' ? otherCheckout : undefined);
  return {
    child: bridge.child,
    readyMs: bridge.readyMs,
    text: async (prompt) => void (await post(bridge, randomUUID(), [{ role: 'user', content: prompt }])),
    tool: async (prompt) => {
      const parked = await bridgeTool(bridge, prompt);
      return {
        firstByte: parked.answer.headersAt,
        toolAt: parked.answer.toolAt ?? Number.NaN,
        release: () => bridgeResult(bridge, parked),
      };
    },
    burst: async (prompts) => {
      const { parked } = await bridgeBurst(bridge, prompts);
      return {
        each: parked.map(({ answer }) => answer.toolAt ?? Number.NaN),
        release: () => Promise.all(parked.map((one) => bridgeResult(bridge, one))),
      };
    },
    stop: bridge.stop,
  };
};
for (let round = 0; round < freshRounds; round += 1) {
  await alternate(round, async (side) => {
    const starting = await startFresh(side, `fresh-${side}-${round}-start`);
    record('fresh process: spawn → accepting requests', side, starting.readyMs);
    const first = await starting.tool(`please use the tool, first after start ${round}`);
    record('fresh process: first request → response headers', side, first.firstByte);
    record('fresh process: first request → tool_use', side, first.toolAt);
    const second = await starting.tool(`please use the tool, second after start ${round}`);
    record('fresh process: second new conversation → response headers', side, second.firstByte);
    record('fresh process: second new conversation → tool_use', side, second.toolAt);
    await Promise.all([first.release(), second.release()]);
    await starting.stop();

    const bursting = await startFresh(side, `fresh-${side}-${round}-burst`);
    await bursting.text(`warm up before the burst ${round}`);
    const cpuBefore = await threadCpuMs(bursting.child);
    const { each, release } = await bursting.burst(
      Array.from({ length: concurrent }, (_, index) => `use the tool, fresh burst ${round}.${index}`),
    );
    await untilQuiet(bursting.child);
    const figure = `fresh process, ${concurrent} new conversations at once after one turn`;
    record(`${figure}: request → tool_use, median`, side, median(each));
    record(`${figure}: request → tool_use, slowest`, side, Math.max(...each));
    record(`${figure}: process CPU until quiet`, side, (await threadCpuMs(bursting.child)) - cpuBefore);
    await release();
    await bursting.stop();
  });
}

// Warm-up: each side's first conversation lists the model catalog and starts the SDK.
const warmUps = ['latency', 'stream', 'burst', 'soak'].some((phase) => phases.has(phase)) ? 3 : 0;
for (let index = 0; index < warmUps; index += 1) {
  for (const side of sides) {
    if (side === 'bare') await bare({ op: 'text', prompt: `warm up ${index}` });
    else await post(bridges[side]!, randomUUID(), [{ role: 'user', content: `warm up ${index}` }]);
  }
}

for (let round = 0; phases.has('latency') && round < rounds; round += 1) {
  await alternate(round, async (side) => {
    if (side !== 'bare') {
      const bridge = bridges[side]!;
      const fresh = await post(bridge, randomUUID(), [
        { role: 'user', content: `fresh conversation ${round}` },
      ]);
      record('first text delta, new conversation', side, fresh.textAt ?? Number.NaN);
      const parked = await bridgeTool(bridge, `please use the tool ${round}`);
      record('request → tool_use, new conversation', side, parked.answer.toolAt ?? Number.NaN);
      record('request → message_stop, tool turn', side, parked.answer.stopAt ?? Number.NaN);
      record('tool_result → first text delta', side, await bridgeResult(bridge, parked));
    } else {
      record(
        'first text delta, new conversation',
        side,
        (await bare({ op: 'text', prompt: `fresh conversation ${round}` })).ms!,
      );
      const parked = await bare({ op: 'tool', prompt: `please use the tool ${round}` });
      record('request → tool_use, new conversation', side, parked.ms!);
      record('request → message_stop, tool turn', side, parked.ms!);
      record(
        'tool_result → first text delta',
        side,
        (await bare({ op: 'result', conversation: parked.conversation! })).ms!,
      );
    }
  });
}

// Wall time measured in the worker (bridge: request → end of the body; bare: create → the run's end),
// CPU of the bridge's / the bare SDK's process from /proc.
for (let round = 0; phases.has('stream') && round < streamRounds; round += 1) {
  await alternate(round, async (side) => {
    const child = processOf(side);
    const cpuBefore = await threadCpuMs(child);
    const wall =
      side !== 'bare'
        ? (
            await post(
              bridges[side]!,
              randomUUID(),
              [{ role: 'user', content: `long answer ${round}` }],
              false,
            )
          ).endAt
        : (await bare({ op: 'stream', prompt: `long answer ${round}` })).ms!;
    record(`${streamDeltas / 1000}k-delta answer: wall time`, side, wall);
    record(`${streamDeltas / 1000}k-delta answer: CPU`, side, (await threadCpuMs(child)) - cpuBefore);
  });
}

// The same answer as the second turn of a conversation a one-delta answer opened (and 300 ms after it, so
// what follows a new conversation, such as the bridge's pool refill, is done): the streaming alone, apart
// from creating the conversation.
for (let round = 0; phases.has('stream') && round < streamRounds; round += 1) {
  await alternate(round, async (side) => {
    const child = processOf(side);
    let next: () => Promise<number>;
    if (side !== 'bare') {
      const bridge = bridges[side]!;
      const session = randomUUID();
      const messages: Message[] = [{ role: 'user', content: `short answer ${round}` }];
      const first = await post(bridge, session, messages);
      const history: Message[] = [...messages, { role: 'assistant', content: first.content }];
      next = async () =>
        (await post(bridge, session, [...history, { role: 'user', content: `long answer ${round}` }], false))
          .endAt;
    } else {
      const { conversation } = await bare({ op: 'text', prompt: `short answer ${round}` });
      next = async () =>
        (await bare({ op: 'stream', prompt: `long answer ${round}`, conversation: conversation! })).ms!;
    }
    await settle(300);
    const cpuBefore = await threadCpuMs(child);
    record(`${streamDeltas / 1000}k-delta answer, second turn: wall time`, side, await next());
    record(
      `${streamDeltas / 1000}k-delta answer, second turn: CPU`,
      side,
      (await threadCpuMs(child)) - cpuBefore,
    );
  });
}

// Three bursts per side. The first after the start is reported apart from the later ones: it finds the
// bridge's pre-warmed workspaces as the earlier rounds left them (the environment's share of the pool),
// a later one what the pool refilled after the previous burst.
const burstFigure = (round: number): string =>
  `${concurrent} concurrent new conversations → last tool_use, ${round === 0 ? 'first burst' : 'later bursts'}`;
for (let round = 0; phases.has('burst') && round < 3; round += 1) {
  await alternate(round, async (side) => {
    const child = processOf(side);
    await settle();
    const idle = await rssMb(child);
    const prompts = Array.from(
      { length: concurrent },
      (_, index) => `use the tool, parked ${round}.${index}`,
    );
    if (side !== 'bare') {
      const bridge = bridges[side]!;
      const { ms, parked } = await bridgeBurst(bridge, prompts);
      record(burstFigure(round), side, ms);
      await settle();
      const atPark = await rssMb(child);
      record(`RSS, ${concurrent} conversations parked`, side, atPark, 'MB');
      record(`RSS above idle, ${concurrent} parked`, side, atPark - idle, 'MB');
      await Promise.all(parked.map((one) => bridgeResult(bridge, one)));
    } else {
      const { ms, conversations } = await bare({ op: 'burst', prompts });
      record(burstFigure(round), side, ms!);
      await settle();
      const atPark = await rssMb(child);
      record(`RSS, ${concurrent} conversations parked`, side, atPark, 'MB');
      record(`RSS above idle, ${concurrent} parked`, side, atPark - idle, 'MB');
      await Promise.all(conversations!.map((conversation) => bare({ op: 'result', conversation })));
    }
  });
}

// Soak: alternate blocks of 48 new conversations (4 at a time). Each side's memory is then read on its
// own clock, from the end of its own last block, the way an operator watching the process would see
// it: the probe's heap report at once, RSS every second for `BENCH_IDLE_MS` of idling (the sides idle
// at the same time; one starts while the others finish their last blocks).
const block = 48;
// 60 s: V8's memory reducer gives the soak's freed pages back 17–27 s into idling in the bare worker and
// 28–35 s in the bridge (its reducing GCs in a --trace-gc run: 28 s after the soak's last mark-compact), so
// a 30 s window caught the bridge's in some runs and not in others (RSS after idling 1.25 and 3.40).
const idleMs = Math.max(5_000, Number(process.env['BENCH_IDLE_MS'] ?? 60_000));
type Idle = {
  samples: { at: number; rss: number }[];
  endOfSoak: ProbeReport;
  afterIdle: ProbeReport;
  procAtEnd: ProcMemory;
  procAfterIdle: ProcMemory;
};
const beforeSoak = new Map<Side, ProbeReport>();
for (const side of phases.has('soak') ? sides : []) beforeSoak.set(side, await probe(processOf(side)));
const idles = new Map<Side, Promise<Idle>>();
const watchIdle = async (child: ChildProcess): Promise<Idle> => {
  const start = performance.now();
  const samples = [{ at: 0, rss: await rssMb(child) }];
  const endOfSoak = await probe(child);
  const procAtEnd = await procMemory(child);
  for (let second = 1; second * 1_000 <= idleMs; second += 1) {
    await new Promise((resolve) => setTimeout(resolve, start + second * 1_000 - performance.now()));
    samples.push({ at: (performance.now() - start) / 1_000, rss: await rssMb(child) });
  }
  return {
    samples,
    endOfSoak,
    procAtEnd,
    afterIdle: await probe(child),
    procAfterIdle: await procMemory(child),
  };
};
for (let done = 0; phases.has('soak') && done < soak; done += block) {
  await alternate(done / block, async (side) => {
    const child = processOf(side);
    const cpuBefore = await cpuMs(child);
    for (let index = 0; index < block; index += 4) {
      await Promise.all(
        Array.from({ length: 4 }, (_, offset) =>
          side !== 'bare'
            ? post(bridges[side]!, randomUUID(), [{ role: 'user', content: `soak ${done + index + offset}` }])
            : bare({ op: 'text', prompt: `soak ${done + index + offset}` }),
        ),
      );
    }
    record('CPU per new conversation (soak, 4 at a time)', side, ((await cpuMs(child)) - cpuBefore) / block);
    // Churn: RSS each time a side passes another 1,000 new conversations (not idled).
    const thousands = Math.floor((done + block) / 1_000);
    if (thousands > Math.floor(done / 1_000)) {
      record(`RSS after ${thousands},000+ new conversations (soak)`, side, await rssMb(child), 'MB');
    }
    if (done + block >= soak) idles.set(side, watchIdle(child));
  });
}
const idle = new Map<Side, Idle>();
for (const [side, watching] of idles) idle.set(side, await watching);
const idleSeconds = Math.floor(idleMs / 1_000);
for (const [side, { samples }] of idle) {
  // The figure this bench has always printed: RSS 5 s after the soak.
  record(`RSS after a soak of ${soak} conversations`, side, samples[5]!.rss, 'MB');
  record(`RSS after the soak + ${idleSeconds} s idle`, side, samples.at(-1)!.rss, 'MB');
  // From when on every sample stays within 10 % of the value at the end of the idle period.
  const limit = samples.at(-1)!.rss * 1.1;
  const backAt = samples.findLast((sample) => sample.rss > limit)?.at;
  record('time to come back within 10 % of that', side, backAt === undefined ? 0 : backAt + 1, 's');
}

// ---- report -------------------------------------------------------------------------------------------
const withOther = bridges.other !== undefined;
const rows = [...figures].map(([name, entry]) => {
  const floor = median(entry.bare);
  const cells = (side: 'bridge' | 'other'): string[] => {
    const value = median(entry[side]);
    return [`${value.toFixed(1)} ${entry.unit}`, (value / floor).toFixed(2)];
  };
  const [bridgeValue, bridgeRatio] = cells('bridge');
  return [
    name,
    bridgeValue!,
    ...(withOther ? [cells('other')[0]!] : []),
    `${floor.toFixed(1)} ${entry.unit}`,
    bridgeRatio!,
    ...(withOther ? [cells('other')[1]!] : []),
    String(entry.bridge.length),
  ];
});
const header = withOther
  ? ['figure (medians)', 'bridge', 'other', 'bare SDK', 'ratio', 'other ratio', 'n']
  : ['figure (medians)', 'bridge', 'bare SDK', 'ratio', 'n'];
printTable(header, rows);
printRunClock();

// The soak's memory details.
if (idle.size > 0) {
  const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  const sideNames = sides.map((side) => (side === 'bare' ? 'bare SDK' : side)).join(' | ');
  /** One line of the memory details: `name`, then each side's cell. */
  const detail = (name: string, cell: (side: Side) => string, width = 10): void =>
    console.log(`  ${name.padEnd(28)} ${sides.map((side) => cell(side).padStart(width)).join(' | ')}`);
  for (const [moment, pick, pickProc] of [
    [
      'at the end of the soak',
      (side: Side) => idle.get(side)!.endOfSoak,
      (side: Side) => idle.get(side)!.procAtEnd,
    ],
    [
      `after ${idleSeconds} s idle`,
      (side: Side) => idle.get(side)!.afterIdle,
      (side: Side) => idle.get(side)!.procAfterIdle,
    ],
  ] as const) {
    console.log(`\nmemory ${moment} (${sideNames}):`);
    for (const key of ['brk', 'file', 'anonymous'] as const) {
      detail(`RSS in ${key} mappings`, (side) => `${pickProc(side)[key].toFixed(1)} MB`);
    }
    detail('threads', (side) => String(pickProc(side).threads));
    console.log(
      `  largest anonymous (rss/size MB): ${sides.map((side) => pickProc(side).largestAnonymous).join(' | ')}`,
    );
    const show = (name: string, value: (report: ProbeReport) => number): void =>
      detail(name, (side) => mb(value(pick(side))));
    show('rss', (report) => report.memoryUsage.rss);
    show('heap total (V8 reserved)', (report) => report.memoryUsage.heapTotal);
    show('heap used', (report) => report.memoryUsage.heapUsed);
    show('external', (report) => report.memoryUsage.external);
    show('  of which array buffers', (report) => report.memoryUsage.arrayBuffers);
    show('malloced (V8)', (report) => report.heap.malloced_memory);
    for (const space of ['new_space', 'old_space', 'code_space', 'large_object_space']) {
      detail(
        `${space} used of size`,
        (side) => `${mb(pick(side).spaces[space]?.used ?? 0)} of ${mb(pick(side).spaces[space]?.size ?? 0)}`,
        0,
      );
    }
  }
  const gcDuring = (side: Side): string => {
    const [from, to] = [beforeSoak.get(side)!.gc, idle.get(side)!.endOfSoak.gc];
    return `${to.minor - from.minor} minor, ${to.major - from.major} major, ${(to.pauseMs - from.pauseMs).toFixed(0)} ms`;
  };
  console.log(`\nGCs during the soak: ${sides.map(gcDuring).join(' | ')} (${sideNames})`);
  console.log(`RSS while idling after the soak (s: ${sideNames}, MB):`);
  for (let index = 0; index < idle.get('bridge')!.samples.length; index += 5) {
    const at = (side: Side): string => (idle.get(side)!.samples[index]?.rss.toFixed(0) ?? '-').padStart(5);
    console.log(`  ${String(index).padStart(3)} s: ${sides.map(at).join(' | ')}`);
  }
}

await bare({ op: 'closeAll' });
await stopProcesses([
  ...workers.filter((worker) => worker.exitCode === null && worker.signalCode === null),
  bareChild,
  ...Object.values(bridges).map((bridge) => bridge.child),
]);
await backend.close();
await rm(root, { recursive: true, force: true });
