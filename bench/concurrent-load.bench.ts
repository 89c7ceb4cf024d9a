/**
 * The kept concurrent-load test: `cursor-bridge serve` with many conversations at once, each a chain of tool
 * round trips as Claude Code runs them, and with `BENCH_OTHER_BRIDGE=<checkout>` (built) another build beside
 * it on the same machine (e.g. the commit earlier figures were taken at: `git worktree add`, build,
 * `BENCH_OTHER_BRIDGE=<its dir>`).
 *
 * One fake Cursor backend runs in this process (`concurrent-load/round-trips-scenario.ts`: one `Bash`
 * call per step until the conversation has had its round trips, replays after an eviction included).
 * Each side is `cursor-bridge serve` (this checkout's, built by `ensureBuilt`, or the other checkout's
 * `bin/cursor-bridge.js`) with the side-by-side bench's config file and the `CURSOR_BRIDGE_*` settings of
 * this environment, and its own client worker (`concurrent-load/load-client-worker.ts`, its own process,
 * which runs the conversations and times every request itself: see there for what a round trip, a failure
 * and a lost conversation are).
 *
 * One measurement of a side: a fresh `serve` with a HOME of its own (nothing carries over from another
 * measurement), one warm-up conversation of one round trip (the model catalog, the SDK's first run), a
 * wait until the process is quiet (its pre-warmed workspaces built), then `BENCH_CONVERSATIONS`
 * conversations started at once, `BENCH_TRIPS` tool round trips each; then the process is stopped
 * (SIGTERM by PID, and its exit awaited). With `BENCH_START=fresh` there is no warm-up conversation and no
 * wait: the conversations start the moment `serve` listens, as a process started by a rolling restart
 * takes over a drained one's traffic. `BENCH_RUNS` runs each measure every side once, the order rotated
 * each run.
 *
 * Reported per side and run: round trip p50, p95 and max (request → `message_stop`), requests over 10 s,
 * failures, lost conversations, the agent runs the backend played (above the conversations' count: full
 * replays to a fresh agent after an eviction, and the SDK's retries), wall time, the `serve` process's CPU
 * (every thread) from the conversations' start to the last one's end, its whole CPU from its spawn to
 * then (every thread and the child processes it reaped, `git` above all: the work a warm-up or pool did
 * before the measurement counted too), and its RSS then; then the medians per side and their ratio
 * this ÷ other. Above the session cap (`CURSOR_BRIDGE_MAX_SESSIONS`, default 32)
 * parked conversations are evicted and their next request is a replay.
 *
 * `BENCH_CONVERSATIONS` (default 30), `BENCH_TRIPS` (default 10), `BENCH_RUNS` (default 3),
 * `BENCH_REQUEST_TIMEOUT_MS` (default 120000: a request still open then is aborted and counted a failure),
 * `BENCH_START` (`after-warm-up`, the default, or `fresh`), `BENCH_CPU_PROF=<dir>` (every `serve` writes a
 * V8 CPU profile of its whole life to `<dir>/<side>-<run>/` on exit).
 *
 * Benchmarks measure; they never fail on a number. This one throws when a side cannot run: its `serve`
 * does not start or exits, its warm-up conversation fails, or a measurement finishes no conversation
 * (with what the client saw and the end of `serve`'s stderr).
 */

import { fork, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LoadReply, LoadReport, LoadRequest } from './concurrent-load/load-client-worker.js';
import { cannotRun, loadSettingsFromEnv, startLoadBench } from './concurrent-load/load-bench-setup.js';
import { startBenchServe, stopProcesses } from './side-by-side/bench-serve.js';
import { ipc, lifetimeCpuMs, rssMb, threadCpuMs, untilQuiet } from './side-by-side/child-process.js';
import { median, printTable, startRunClock } from './side-by-side/report.js';

const { conversations, trips, runs, requestTimeoutMs } = loadSettingsFromEnv();
const start = process.env['BENCH_START'] ?? 'after-warm-up';
if (start !== 'after-warm-up' && start !== 'fresh') {
  throw new Error(`BENCH_START must be after-warm-up or fresh, not ${start}`);
}
const profileDir = process.env['BENCH_CPU_PROF'];
const here = dirname(fileURLToPath(import.meta.url));

/** `this`: this checkout; `other`: the built checkout of `BENCH_OTHER_BRIDGE`. */
type Side = { name: 'this' | 'other'; dir: string; checkout?: string };
const describeCommit = (dir: string): string =>
  spawnSync('git', ['-C', dir, 'describe', '--always', '--dirty', '--abbrev=7'], {
    encoding: 'utf8',
  }).stdout.trim() || '?';
const sides: Side[] = [{ name: 'this', dir: resolve(here, '..') }];
const otherCheckout = process.env['BENCH_OTHER_BRIDGE'];
if (otherCheckout !== undefined) {
  const checkout = resolve(otherCheckout);
  if (!existsSync(join(checkout, 'bin', 'cursor-bridge.js')) || !existsSync(join(checkout, 'dist'))) {
    throw new Error(
      `BENCH_OTHER_BRIDGE=${otherCheckout} is not a built checkout (bin/cursor-bridge.js, dist/)`,
    );
  }
  sides.push({ name: 'other', dir: checkout, checkout });
}

const bench = await startLoadBench('load');
const { backend, root, configPath, bridgeSettings, baseEnv } = bench;

/** One side's measurement in one run. */
type Measurement = {
  side: Side['name'];
  run: number;
  report: LoadReport;
  /** Agent runs the backend played during the measurement. */
  agentRuns: number;
  /** `serve`'s CPU (every thread) during the measurement, ms. */
  cpuMs: number;
  /** `serve`'s CPU from its spawn to the measurement's end, its reaped children's included, ms. */
  lifetimeCpuMs: number;
  /** `serve`'s RSS at the measurement's end, MB. */
  rssMb: number;
};

const measure = async (side: Side, run: number): Promise<Measurement> => {
  const serve = await startBenchServe({
    configPath,
    home: join(root, `${side.name}-${run}-home`),
    cwd: root,
    env: { ...baseEnv, ...bridgeSettings },
    ...(profileDir === undefined
      ? {}
      : { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${join(resolve(profileDir), `${side.name}-${run}`)}`] }),
    ...(side.checkout === undefined ? {} : { checkout: side.checkout }),
  });
  const client = fork(join(here, 'concurrent-load', 'load-client-worker.ts'), {
    execArgv: ['--experimental-strip-types', '--disable-warning=ExperimentalWarning'],
    env: { PATH: baseEnv.PATH, BENCH_BRIDGE_URL: `http://127.0.0.1:${serve.port}/v1/messages` },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const channel = ipc<LoadRequest, LoadReply>(client);
    await channel.ready;
    const load = async (request: Omit<LoadRequest, 'id' | 'op'>): Promise<LoadReport> => {
      const { report } = await channel.call({ op: 'run', ...request });
      if (report === undefined) throw new Error('the load client answered without a report');
      return report;
    };
    if (start === 'after-warm-up') {
      const warmUp = await load({
        conversations: 1,
        trips: 1,
        tag: `warm-up-${side.name}-${run}`,
        requestTimeoutMs,
      });
      if (warmUp.lost > 0)
        throw cannotRun(
          `concurrent-load: ${side.name} (${side.dir})`,
          'its warm-up conversation failed',
          serve,
          warmUp,
        );
      await untilQuiet(serve.child);
    }
    const agentRunsBefore = backend.runRequests.length;
    const cpuBefore = await threadCpuMs(serve.child);
    const report = await load({ conversations, trips, tag: `${side.name}-${run}`, requestTimeoutMs });
    if (serve.child.exitCode !== null || serve.child.signalCode !== null) {
      throw cannotRun(
        `concurrent-load: ${side.name} (${side.dir})`,
        'serve exited during the measurement',
        serve,
        report,
      );
    }
    const measurement = {
      side: side.name,
      run,
      report,
      agentRuns: backend.runRequests.length - agentRunsBefore,
      cpuMs: (await threadCpuMs(serve.child)) - cpuBefore,
      lifetimeCpuMs: await lifetimeCpuMs(serve.child),
      rssMb: await rssMb(serve.child),
    };
    if (report.lost === conversations)
      throw cannotRun(
        `concurrent-load: ${side.name} (${side.dir})`,
        'no conversation finished',
        serve,
        report,
      );
    return measurement;
  } finally {
    await stopProcesses([client, serve.child]);
  }
};

// ---- the runs ------------------------------------------------------------------------------------------
const printRunClock = startRunClock();
const measurements: Measurement[] = [];
try {
  for (let run = 0; run < runs; run += 1) {
    for (let index = 0; index < sides.length; index += 1) {
      const side = sides[(run + index) % sides.length]!;
      const measurement = await measure(side, run);
      measurements.push(measurement);
      const { report } = measurement;
      console.log(
        `run ${run + 1}, ${side.name}: ${report.roundTrips} round trips, ${report.failures} failures, ` +
          `${report.lost} lost, ${(report.wallMs / 1000).toFixed(1)} s`,
      );
      for (const sample of report.failureSamples) console.log(`  ${sample}`);
    }
  }
} finally {
  await bench.close();
}

// ---- report --------------------------------------------------------------------------------------------
type Column = { title: string; value: (measurement: Measurement) => number; digits: number };
const columns: Column[] = [
  { title: 'p50 ms', value: ({ report }) => report.p50Ms, digits: 1 },
  { title: 'p95 ms', value: ({ report }) => report.p95Ms, digits: 1 },
  { title: 'max ms', value: ({ report }) => report.maxMs, digits: 1 },
  { title: '>10 s', value: ({ report }) => report.over10s, digits: 0 },
  { title: 'failures', value: ({ report }) => report.failures, digits: 0 },
  { title: 'lost', value: ({ report }) => report.lost, digits: 0 },
  { title: 'agent runs', value: ({ agentRuns }) => agentRuns, digits: 0 },
  { title: 'wall ms', value: ({ report }) => report.wallMs, digits: 0 },
  { title: 'CPU ms', value: ({ cpuMs }) => cpuMs, digits: 0 },
  { title: 'life CPU ms', value: ({ lifetimeCpuMs }) => lifetimeCpuMs, digits: 0 },
  { title: 'RSS MB', value: ({ rssMb }) => rssMb, digits: 1 },
];
const rows: string[][] = measurements.map((measurement) => [
  measurement.side,
  String(measurement.run + 1),
  ...columns.map((column) => column.value(measurement).toFixed(column.digits)),
]);
const medians = new Map(
  sides.map(({ name }) => {
    const own = measurements.filter((measurement) => measurement.side === name);
    return [name, columns.map((column) => median(own.map(column.value)))] as const;
  }),
);
for (const [name, values] of medians) {
  rows.push([name, 'median', ...values.map((value, index) => value.toFixed(columns[index]!.digits))]);
}
const [thisMedians, otherMedians] = [medians.get('this'), medians.get('other')];
if (thisMedians !== undefined && otherMedians !== undefined) {
  rows.push([
    'this ÷ other',
    '',
    ...thisMedians.map((value, index) => {
      const other = otherMedians[index]!;
      return other === 0 || !Number.isFinite(value / other) ? '-' : (value / other).toFixed(2);
    }),
  ]);
}
const header = ['side', 'run', ...columns.map((column) => column.title)];
const settings = Object.entries(bridgeSettings).map(([name, value]) => `${name}=${value}`);
console.log(
  `\n${conversations} conversations at once × ${trips} tool round trips (${trips + 1} requests each), ` +
    `${runs} run${runs === 1 ? '' : 's'}, start ${start}; ${sides.map((side) => `${side.name} = ${describeCommit(side.dir)} (${side.dir})`).join(', ')}` +
    (settings.length === 0 ? '' : `; ${settings.join(' ')}`),
);
printTable(header, rows);
printRunClock();
