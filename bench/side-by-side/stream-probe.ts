/**
 * The 10k-delta answer alone, on the bridge and on any number of bare-SDK variants, interleaved: to bisect
 * which of the bridge's agent options cost the SDK time on a long streamed answer, and to measure the
 * bridge's own delta path before and after a change without the ≈ 80 s of the whole side-by-side bench.
 * Same fake backend scenario and workers as `side-by-side.bench.ts`; wall time in the worker, CPU as the
 * sum of every thread's `/proc/<pid>/task/<tid>/schedstat`. Each round, per side: a one-delta answer on
 * a new conversation, a pause, the 10k-delta answer on a new conversation, a pause, the 10k-delta answer
 * as the second turn of the one-delta answer's conversation, a pause (`BENCH_STREAM_SETTLE_MS`, 200).
 *
 * `BENCH_STREAM_SIDES` (`;`-separated, default `bridge;bare:;bare:bridge`): `bridge` is `cursor-bridge
 * serve`, `bridge:nopool` the same with `CURSOR_BRIDGE_WARM_WORKSPACES=0`, `bridge:other` the CLI of the
 * checkout in `BENCH_OTHER_BRIDGE` (built; e.g. `main`, for an A/B); `bare:<features>` a bare-SDK worker
 * with `BENCH_BARE_VARIANT=<features>` (see the worker; `bare:bridge` is `BENCH_BARE_OPTIONS=bridge`).
 * `BENCH_STREAM_ROUNDS` (default 7, after one warm-up round); `BENCH_STREAM_TURN2_ONLY=1` skips the answer
 * on a new conversation; `BENCH_STREAM_TOOL=1` adds a tool round trip to every round (a new conversation
 * whose answer is one call of the client's tool, a pause, the tool's result and the answer after it:
 * request → tool_use, request → message_stop and tool_result → first text delta, timed as in the
 * side-by-side bench; `BENCH_TOOL_LISTING` as there), and
 * `BENCH_STREAM_TOOL=only` runs just that (an A/B of the tool path with `bridge:other` in ≈ 1 s a round); `BENCH_CPU_PROF=<dir>` writes a CPU profile of every side there on exit;
 * `BENCH_PROBE_DIR=<dir>` (with `BENCH_HEAP_SNAPSHOT=1`) a memory report (and heap snapshot) of every
 * side after the rounds; `BENCH_BRIDGE_LOG=<file>` keeps the bridge's log, at debug. Run with
 * `node_modules/.bin/node --import tsx bench/side-by-side/stream-probe.ts` (Node 22, for the SDK).
 */

import { fork, spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { benchScenario } from './scenario.js';
import { startFakeCursorBackend } from '../../test/fakes/cursor-backend/fake-cursor-backend.js';
import { ensureBuilt } from '../../test/helpers/ensure-built.js';
import { serveArgs, waitForServePort } from '../../test/helpers/serve-command-line.js';
import type { BareRequest, Reply } from './bare-sdk-worker.js';
import type { ClientReply, ClientRequest, Message, Post } from './bridge-client-worker.js';
import { ipc, rssMb, threadCpuMs } from './child-process.js';

const here = dirname(fileURLToPath(import.meta.url));
const deltas = 10_000;
const rounds = Number(process.env['BENCH_STREAM_ROUNDS'] ?? 7);
const sides = (process.env['BENCH_STREAM_SIDES'] ?? 'bridge;bare:;bare:bridge').split(';');
const profileDir = process.env['BENCH_CPU_PROF'];
const logFile = process.env['BENCH_BRIDGE_LOG'];
/** `BENCH_STREAM_TURN2_ONLY=1`: skip the answer on a new conversation (to profile the streaming alone). */
const turnTwoOnly = process.env['BENCH_STREAM_TURN2_ONLY'] === '1';
/** `BENCH_STREAM_TOOL=1`: a tool round trip in every round too; `only`: nothing else. */
const toolTrips = process.env['BENCH_STREAM_TOOL'] === '1' || process.env['BENCH_STREAM_TOOL'] === 'only';
const toolOnly = process.env['BENCH_STREAM_TOOL'] === 'only';
/** Pause after each answer, so work that follows one (the bridge's pool refill) is not counted in the next. */
const settleMs = Number(process.env['BENCH_STREAM_SETTLE_MS'] ?? 200);
// `BENCH_HEAP_SNAPSHOT=1`: every side writes a heap snapshot after the rounds (to `BENCH_PROBE_DIR`), read
// with `side-by-side/memory-probe.mjs` as in the side-by-side bench.
const probeDir = process.env['BENCH_PROBE_DIR'];
const probeArgs =
  probeDir === undefined ? [] : ['--import', pathToFileURL(join(here, 'memory-probe.mjs')).href];
const probeEnv =
  probeDir === undefined
    ? {}
    : { BENCH_PROBE_DIR: probeDir, BENCH_HEAP_SNAPSHOT: process.env['BENCH_HEAP_SNAPSHOT'] ?? '' };
const profileArgs = profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`];

const backend = await startFakeCursorBackend({ scenario: benchScenario(deltas) });
await ensureBuilt();
const root = await realpath(await mkdtemp(join(tmpdir(), 'cb-stream-probe-')));
const baseEnv = {
  PATH: process.env['PATH'] ?? '/usr/bin:/bin',
  CURSOR_API_KEY: 'crsr_bench',
  CURSOR_BACKEND_URL: backend.url,
};

/** A conversation one side has open: what its next turn needs. */
type Conversation = { bridge?: { session: string; messages: Message[] }; bare?: string };
type Side = {
  name: string;
  process: ChildProcess;
  /** A one-delta answer on a new conversation: wall ms and the conversation. */
  short: (prompt: string) => Promise<{ wall: number; conversation: Conversation }>;
  /** The 10k-delta answer: on a new conversation, or as the next turn of `conversation`. */
  stream: (prompt: string, conversation?: Conversation) => Promise<{ wall: number; first: number }>;
  /**
   * A new conversation answered with a tool call: request → tool_use and → message_stop (bare: both its
   * `execute`); `result` posts the tool's result.
   */
  tool: (prompt: string) => Promise<{ toolUse: number; toolStop: number; result: () => Promise<number> }>;
  stop: () => void;
};

const startBridge = async (name: string, index: number): Promise<Side[]> => {
  const home = join(root, `bridge-home-${index}`);
  await mkdir(home, { recursive: true });
  const configPath = join(root, `config-${index}.json`);
  await writeFile(
    configPath,
    JSON.stringify({
      LOG_LEVEL: 'warn',
      Providers: [{ name: 'cursor', models: ['composer-2'] }],
      Router: { default: 'cursor,composer-2' },
    }),
  );
  const settings = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => name.startsWith('CURSOR_BRIDGE_')),
  );
  // `bridge:other` runs the CLI of another checkout (`BENCH_OTHER_BRIDGE=<dir>`, built), for an A/B of a
  // change in one interleaved run.
  const args = serveArgs(configPath, [...probeArgs, ...profileArgs]);
  const other = process.env['BENCH_OTHER_BRIDGE'];
  if (name === 'bridge:other') {
    if (other === undefined) throw new Error('bridge:other needs BENCH_OTHER_BRIDGE=<checkout>');
    const cli = args.findIndex((arg) => arg.endsWith(join('bin', 'cursor-bridge.js')));
    args[cli] = join(other, 'bin', 'cursor-bridge.js');
  }
  const bridge = spawn(process.execPath, args, {
    cwd: root,
    env: {
      ...baseEnv,
      ...probeEnv,
      ...settings,
      // `bridge:nopool`: without the warm-workspace pool (whose refill after a new conversation runs
      // during the answer).
      ...(name === 'bridge:nopool' ? { CURSOR_BRIDGE_WARM_WORKSPACES: '0' } : {}),
      HOME: home,
      LOG_LEVEL: logFile === undefined ? 'warn' : 'debug',
    },
    stdio: ['ignore', logFile === undefined ? 'ignore' : 'pipe', 'pipe'],
  });
  bridge.stdout?.on('data', (chunk: Buffer) => appendFileSync(logFile!, chunk));
  const port = await waitForServePort(bridge);
  // Keep reading its stderr (a full pipe would block it); `BENCH_BRIDGE_LOG=<file>` keeps it, at debug.
  bridge.stderr?.on('data', (chunk: Buffer) => {
    if (logFile !== undefined) appendFileSync(logFile, chunk);
  });
  const client = fork(join(here, 'bridge-client-worker.ts'), {
    execArgv: ['--experimental-strip-types', '--disable-warning=ExperimentalWarning'],
    env: { PATH: baseEnv.PATH, BENCH_BRIDGE_URL: `http://127.0.0.1:${port}/v1/messages` },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const channel = ipc<ClientRequest, ClientReply>(client);
  await channel.ready;
  return [
    {
      name,
      process: bridge,
      short: async (prompt) => {
        const session = randomUUID();
        const messages: Message[] = [{ role: 'user', content: prompt }];
        const request: Post & { op: 'post' } = { op: 'post', session, messages, parse: true };
        const posted = (await channel.call(request)).posted![0]!;
        return {
          wall: posted.endAt,
          conversation: {
            bridge: { session, messages: [...messages, { role: 'assistant', content: posted.content }] },
          },
        };
      },
      stream: async (prompt, conversation) => {
        const request: Post & { op: 'post' } = {
          op: 'post',
          session: conversation?.bridge?.session ?? randomUUID(),
          messages: [...(conversation?.bridge?.messages ?? []), { role: 'user', content: prompt }],
          parse: false,
        };
        const posted = (await channel.call(request)).posted![0]!;
        return { wall: posted.endAt, first: posted.textAt ?? Number.NaN };
      },
      tool: async (prompt) => {
        const session = randomUUID();
        const messages: Message[] = [{ role: 'user', content: prompt }];
        const post = async (all: Message[]) => {
          const request: Post & { op: 'post' } = { op: 'post', session, messages: all, parse: true };
          return (await channel.call(request)).posted![0]!;
        };
        const answer = await post(messages);
        const call = answer.content.find((block) => (block as { type: string }).type === 'tool_use') as {
          id: string;
        };
        return {
          toolUse: answer.toolAt ?? Number.NaN,
          toolStop: answer.stopAt ?? Number.NaN,
          result: async () =>
            (
              await post([
                ...messages,
                { role: 'assistant', content: answer.content },
                { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'parked' }] },
              ])
            ).textAt ?? Number.NaN,
        };
      },
      stop: () => {
        client.kill('SIGTERM');
        bridge.kill('SIGTERM');
      },
    },
  ];
};

const startBare = async (features: string, index: number): Promise<Side> => {
  const home = join(root, `bare-home-${index}`);
  await mkdir(home, { recursive: true });
  const worker = fork(join(here, 'bare-sdk-worker.ts'), {
    execArgv: [
      '--experimental-strip-types',
      '--disable-warning=ExperimentalWarning',
      ...probeArgs,
      ...profileArgs,
    ],
    env: {
      ...baseEnv,
      ...probeEnv,
      HOME: home,
      BENCH_BARE_ROOT: join(home, '.claude-code-router', 'cursor-sdk-workspaces'),
      BENCH_BARE_HOOK_SCRIPT: join(
        here,
        '..',
        '..',
        'workspace-templates',
        '.cursor',
        'hooks',
        'deny-builtin.mjs',
      ),
      ...(features === 'bridge' ? { BENCH_BARE_OPTIONS: 'bridge' } : { BENCH_BARE_VARIANT: features }),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const channel = ipc<BareRequest, Reply>(worker);
  await channel.ready;
  return {
    name: `bare:${features}`,
    process: worker,
    short: async (prompt) => {
      const request: Omit<Extract<BareRequest, { op: 'text' }>, 'id'> = { op: 'text', prompt };
      const reply = await channel.call(request);
      // `text` times the first delta; the answer is one delta, so its end follows at once.
      return { wall: reply.ms!, conversation: { bare: reply.conversation! } };
    },
    stream: async (prompt, conversation) => {
      const request: Omit<Extract<BareRequest, { op: 'stream' }>, 'id'> = {
        op: 'stream',
        prompt,
        ...(conversation?.bare === undefined ? {} : { conversation: conversation.bare }),
      };
      const reply = await channel.call(request);
      return { wall: reply.ms!, first: reply.firstMs ?? Number.NaN };
    },
    tool: async (prompt) => {
      const toolRequest: Omit<Extract<BareRequest, { op: 'tool' }>, 'id'> = { op: 'tool', prompt };
      const parked = await channel.call(toolRequest);
      const resultRequest: Omit<Extract<BareRequest, { op: 'result' }>, 'id'> = {
        op: 'result',
        conversation: parked.conversation!,
      };
      return {
        toolUse: parked.ms!,
        toolStop: parked.ms!,
        result: async () => (await channel.call(resultRequest)).ms!,
      };
    },
    stop: () => worker.disconnect(),
  };
};

const started: Side[] = [];
// A probe that fails midway still stops what it started (by PID).
process.on('exit', () => {
  for (const side of started) if (side.process.exitCode === null) side.process.kill('SIGKILL');
});
for (const [index, spec] of sides.entries()) {
  if (spec.startsWith('bridge')) started.push(...(await startBridge(spec, index)));
  else started.push(await startBare(spec.replace(/^bare:/, ''), index));
}
type Figures = Record<
  | 'wall'
  | 'cpu'
  | 'shortWall'
  | 'shortCpu'
  | 'settleCpu'
  | 'turnWall'
  | 'turnCpu'
  | 'turnFirst'
  | 'toolUse'
  | 'toolStop'
  | 'toolResult',
  number[]
>;
const figures = new Map<string, Figures>(
  started.map((side) => [
    side.name,
    {
      wall: [],
      cpu: [],
      shortWall: [],
      shortCpu: [],
      settleCpu: [],
      turnWall: [],
      turnCpu: [],
      turnFirst: [],
      toolUse: [],
      toolStop: [],
      toolResult: [],
    },
  ]),
);
const load = loadavg()[0];
for (let round = -1; round < rounds; round += 1) {
  // Rotate the order every round, so no side always follows the same one.
  const order = started.map((_, index) => started[(index + Math.max(round, 0)) % started.length]!);
  for (const side of order) {
    const pause = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, settleMs));
    if (toolTrips) {
      // The pause between the tool call and its result keeps the bridge's pool refill after the new
      // conversation out of the result's figure.
      const trip = await side.tool(`please use the tool ${round}`);
      await pause();
      const result = await trip.result();
      await pause();
      if (round >= 0) {
        figures.get(side.name)!.toolUse.push(trip.toolUse);
        figures.get(side.name)!.toolStop.push(trip.toolStop);
        figures.get(side.name)!.toolResult.push(result);
      }
      if (toolOnly) continue;
    }
    // A one-delta answer on a new conversation first: what the 10k-delta answer costs beyond it is the
    // streaming itself, apart from the conversation's creation; the pause after it takes what follows a
    // new conversation (the bridge's pool refill) out of the next figure ("after").
    const shortBefore = await threadCpuMs(side.process);
    const short = await side.short(`short answer ${round}`);
    const shortCpu = (await threadCpuMs(side.process)) - shortBefore;
    await pause();
    const settleCpu = (await threadCpuMs(side.process)) - shortBefore - shortCpu;
    // The 10k-delta answer on a new conversation (the side-by-side bench's figure)…
    const before = await threadCpuMs(side.process);
    const wall = turnTwoOnly ? Number.NaN : (await side.stream(`long answer ${round}`)).wall;
    const cpu = (await threadCpuMs(side.process)) - before;
    if (!turnTwoOnly) await pause();
    // …and as the second turn of the short answer's conversation: the streaming alone.
    const turnBefore = await threadCpuMs(side.process);
    const { wall: turnWall, first: turnFirst } = await side.stream(
      `long answer, turn 2 ${round}`,
      short.conversation,
    );
    const turnCpu = (await threadCpuMs(side.process)) - turnBefore;
    await pause();
    if (round < 0) continue;
    const entry = figures.get(side.name)!;
    entry.wall.push(wall);
    entry.cpu.push(cpu);
    entry.shortWall.push(short.wall);
    entry.shortCpu.push(shortCpu);
    entry.settleCpu.push(settleCpu);
    entry.turnWall.push(turnWall);
    entry.turnCpu.push(turnCpu);
    entry.turnFirst.push(turnFirst);
  }
}
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const referenceName = started.find((side) => side.name === 'bare:')?.name ?? started[0]!.name;
const reference = figures.get(referenceName)!;
console.log(`load ${load?.toFixed(2)} → ${loadavg()[0]?.toFixed(2)}`);
if (!toolOnly) {
  console.log(
    `${deltas / 1000}k-delta answer, ${rounds} rounds: medians (ms) and ratios against ${referenceName}`,
  );
  console.log(
    '  new conversation: wall, CPU; 1-delta answer: wall, CPU, CPU in the pause after it; 10k − 1-delta CPU;' +
      ' 10k as turn 2: wall, CPU, first text delta',
  );
}
const cell = (value: number, ratio?: number): string =>
  `${value.toFixed(0).padStart(5)}${ratio === undefined ? '' : ` ${ratio.toFixed(2)}`}`;
const beyond = (entry: Figures): number => median(entry.cpu) - median(entry.shortCpu);
if (toolTrips) {
  console.log(`tool round trip, ${rounds} rounds: medians (ms) and ratios against ${referenceName}`);
  console.log(
    '  request → tool_use; request → message_stop; tool_result → first text delta (then every round of the last two)',
  );
  for (const side of started) {
    const entry = figures.get(side.name)!;
    const figure = (name: 'toolUse' | 'toolStop' | 'toolResult'): string =>
      `${median(entry[name]).toFixed(2).padStart(7)} ${(median(entry[name]) / median(reference[name])).toFixed(2)}`;
    console.log(
      `${side.name.slice(0, 34).padEnd(34)} ${figure('toolUse')} | ${figure('toolStop')} | ${figure('toolResult')} |` +
        ` ${entry.toolStop.map((ms) => ms.toFixed(1)).join(' ')} | ${entry.toolResult.map((ms) => ms.toFixed(1)).join(' ')}`,
    );
  }
}
for (const side of toolOnly ? [] : started) {
  const entry = figures.get(side.name)!;
  const of = (name: keyof Figures): [number, number] => [
    median(entry[name]),
    median(entry[name]) / median(reference[name]),
  ];
  console.log(
    `${side.name.slice(0, 34).padEnd(34)} ${cell(...of('wall'))} ${cell(...of('cpu'))} |` +
      ` ${cell(median(entry.shortWall))} ${cell(median(entry.shortCpu))} ${cell(median(entry.settleCpu))} |` +
      ` ${cell(beyond(entry), beyond(entry) / beyond(reference))} | ${cell(...of('turnWall'))} ${cell(...of('turnCpu'))} ${cell(...of('turnFirst'))}` +
      ` | RSS ${(await rssMb(side.process)).toFixed(0)} | turn-2 CPU ${entry.turnCpu.map((ms) => ms.toFixed(0)).join(' ')}`,
  );
}
if (probeDir !== undefined) {
  // One memory report (and snapshot) per side, one side at a time: a snapshot is a full GC and ≈ 1 s.
  console.log('heap after the rounds (memory probe; used / total MB):');
  for (const side of started) {
    const file = join(probeDir, `${side.process.pid}.json`);
    await rm(file, { force: true });
    side.process.kill('SIGUSR2');
    let report: { memoryUsage: NodeJS.MemoryUsage; snapshot?: string } | undefined;
    for (let waited = 0; report === undefined && waited < 60_000; waited += 50) {
      try {
        report = JSON.parse(await readFile(file, 'utf8')) as typeof report;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    const mb = (bytes: number | undefined): string => ((bytes ?? Number.NaN) / 1024 / 1024).toFixed(1);
    console.log(
      `  ${side.name.padEnd(30)} ${mb(report?.memoryUsage.heapUsed)} / ${mb(report?.memoryUsage.heapTotal)}  rss ${mb(report?.memoryUsage.rss)} ${report?.snapshot ?? ''}`,
    );
  }
}
for (const side of started) side.stop();
await Promise.all(
  started.map(
    (side) =>
      new Promise((resolve) =>
        side.process.exitCode !== null ? resolve(undefined) : side.process.once('exit', resolve),
      ),
  ),
);
await backend.close();
await rm(root, { recursive: true, force: true });
