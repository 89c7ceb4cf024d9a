/**
 * What the web console costs `cursor-bridge serve` while it works (acceptance: "opening the console while
 * 30 conversations run adds < 2 % CPU to serve"): the concurrent-load bench's load, run twice per run
 * against a fresh `serve` each time, once with nobody on the console (`closed`) and once with the console
 * open for the whole load (`open`), the order rotated each run.
 *
 * The load is the concurrent-load bench's, from its pieces: the fake Cursor backend in this process with
 * `concurrent-load/round-trips-scenario.ts`, `serve` started as there (`side-by-side/bench-serve.ts`: the
 * shared config file, a HOME of its own, the `CURSOR_BRIDGE_*` settings of this environment), its client
 * worker in its own process (`concurrent-load/load-client-worker.ts`), one warm-up conversation of one
 * round trip and a wait until `serve` is quiet, then `BENCH_CONVERSATIONS` conversations (default 30) at
 * once, `BENCH_TRIPS` tool round trips each (default 10).
 *
 * `open`: the moment the conversations start, a browser stand-in (`console-cpu/console-page-worker.ts`, a
 * process of its own, forked on both sides so the machine runs the same processes, its HTTP client started
 * by one `GET /health` before the measurement on both sides) opens the console and keeps it open until the
 * last conversation ends: `GET /console`, the files the page names and the modules they import (found by
 * reading them: `console.js`, `console.css`, the vendor files Preact, its hooks, htm, uPlot), then `GET /console/api/state` (the page's login check), then at once the live feed
 * `GET /console/api/events` (Server-Sent Events, read continuously: a `state` frame every 2 s, a `history`
 * frame every 10 s), `/console/api/models` and `/console/api/templates` (the Grounding tab's; the Live tab
 * does not fetch it, so this is a little more than a page on the Live tab). The frames received are
 * counted: the proof the console was live during the load. No APIKEY is configured and every request is
 * from loopback, so no login. A real browser is not needed for `serve`'s CPU: `serve` does the same work
 * for these requests and this one open feed whoever sends and reads them (parsing, rendering and charts
 * are the browser's own CPU, not `serve`'s).
 *
 * Reported per side and run: `serve`'s CPU (every thread, `/proc/<pid>/task/<tid>/schedstat`, user + sys,
 * as the concurrent-load bench measures it) from just before the conversations start (and, on `open`,
 * before the page's first request) to the last conversation's end, that CPU per round trip, wall time,
 * round trip p50 / p95 (request → `message_stop`, timed by the client worker), failures, lost
 * conversations, agent runs the backend played, the page's opening time and the frames received; then the
 * medians per side and the difference open − closed in percent of closed (of the medians, and the median
 * of each run's own pair).
 *
 * The console's cost is far below the load's run-to-run noise (a few % of CPU between two `closed` runs),
 * so the bench also measures it alone: after each `closed` load, once `serve` is quiet again (the
 * conversations ended but still listed), `serve`'s CPU per feed tick with the console closed and open
 * (medians of 5 windows of 2 s each) and the CPU of the page's opening (its first on that process), and
 * prints what opening + one feed tick per 2 s of the load come to in percent of `closed`'s CPU.
 *
 * `BENCH_CONVERSATIONS` (default 30), `BENCH_TRIPS` (default 10), `BENCH_RUNS` (default 3: each run
 * measures both sides), `BENCH_REQUEST_TIMEOUT_MS` (default 120000).
 *
 * Benchmarks measure; they never fail on a number. This one throws when a side cannot run: `serve` does not
 * start or exits, the warm-up conversation fails, no conversation finishes, or the console does not answer
 * (a page request not 200, the feed not an event stream).
 */

import { fork, spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LoadReply, LoadReport, LoadRequest } from './concurrent-load/load-client-worker.js';
import { cannotRun, loadSettingsFromEnv, startLoadBench } from './concurrent-load/load-bench-setup.js';
import type {
  ConsolePageReply,
  ConsolePageRequest,
  ConsoleTally,
} from './console-cpu/console-page-worker.js';
import { startBenchServe, stopProcesses, type BenchServe } from './side-by-side/bench-serve.js';
import { ipc, threadCpuMs, untilQuiet } from './side-by-side/child-process.js';
import { median, printTable, startRunClock } from './side-by-side/report.js';

const { conversations, trips, runs, requestTimeoutMs } = loadSettingsFromEnv();
const here = dirname(fileURLToPath(import.meta.url));
const checkout = resolve(here, '..');

/** `closed`: nobody on the console; `open`: the console open for the whole load. */
type Side = 'closed' | 'open';
const sides: readonly Side[] = ['closed', 'open'];

// ---- the load ------------------------------------------------------------------------------------------

const bench = await startLoadBench('console');
const { backend, root, configPath, bridgeSettings, baseEnv } = bench;

/** One side's measurement in one run. */
type Measurement = {
  side: Side;
  run: number;
  report: LoadReport;
  /** Agent runs the backend played during the measurement. */
  agentRuns: number;
  /** `serve`'s CPU (every thread) from just before the conversations start to the last one's end, ms. */
  cpuMs: number;
  /** What the console received (`open` only). */
  console?: ConsoleTally;
  /** The console's own cost on the quiet `serve` after the load (`closed` only). */
  quiet?: QuietCost;
};

/**
 * The console's own cost on the quiet `serve` after the load (its conversations ended, still listed by the
 * console), where the load's noise does not hide it: `serve`'s CPU in {@link quietWindows} windows of one
 * feed tick (2 s) with nobody on the console, then the console's opening (the page's first on that process,
 * from its first request to the JSON routes' answers, the feed's first frames included), then as many
 * windows of one tick with the feed open. Medians of the windows: a sporadic burst of `serve`'s own (≈ 0.5 s
 * of CPU now and then, with or without the console) lands in one window, not in the figure.
 */
type QuietCost = {
  /** Median CPU per window, ms. */
  closedMs: number;
  openMs: number;
  /** CPU from the page's first request to its JSON routes' answers, ms. */
  openingMs: number;
  frames: Record<string, number>;
};
const quietWindowMs = 2_000;
const quietWindows = 5;

/** The page worker's channel: open the console of a `serve`, and close it with what it received. */
type ConsolePage = { open: () => Promise<void>; close: () => Promise<ConsoleTally> };

const quietCost = async (serve: BenchServe, page: ConsolePage): Promise<QuietCost> => {
  await untilQuiet(serve.child);
  const windows = async (): Promise<number> => {
    const each: number[] = [];
    for (let index = 0; index < quietWindows; index += 1) {
      const before = await threadCpuMs(serve.child);
      await new Promise((resolve) => setTimeout(resolve, quietWindowMs));
      each.push((await threadCpuMs(serve.child)) - before);
    }
    return median(each);
  };
  const closedMs = await windows();
  const before = await threadCpuMs(serve.child);
  await page.open();
  const openingMs = (await threadCpuMs(serve.child)) - before;
  const openMs = await windows();
  return { closedMs, openMs, openingMs, frames: (await page.close()).frames };
};

const measure = async (side: Side, run: number): Promise<Measurement> => {
  const serve = await startBenchServe({
    configPath,
    home: join(root, `${side}-${run}-home`),
    cwd: root,
    env: { ...baseEnv, ...bridgeSettings },
  });
  const base = `http://127.0.0.1:${serve.port}`;
  const client = fork(join(here, 'concurrent-load', 'load-client-worker.ts'), {
    execArgv: ['--experimental-strip-types', '--disable-warning=ExperimentalWarning'],
    env: { PATH: baseEnv.PATH, BENCH_BRIDGE_URL: `${base}/v1/messages` },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  // The browser: on both sides (the same processes on the machine), used on `open` and after the load.
  const browser = fork(join(here, 'console-cpu', 'console-page-worker.ts'), {
    execArgv: ['--experimental-strip-types', '--disable-warning=ExperimentalWarning'],
    env: { PATH: baseEnv.PATH },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const channel = ipc<LoadRequest, LoadReply>(client);
    const browserChannel = ipc<ConsolePageRequest, ConsolePageReply>(browser);
    await Promise.all([channel.ready, browserChannel.ready]);
    await browserChannel.call({ op: 'connect', base });
    const page: ConsolePage = {
      open: async () => void (await browserChannel.call({ op: 'open', base })),
      close: async () => {
        const { tally } = await browserChannel.call({ op: 'close' });
        if (tally === undefined) throw new Error('the console page answered without a tally');
        return tally;
      },
    };
    const load = async (request: Omit<LoadRequest, 'id' | 'op'>): Promise<LoadReport> => {
      const { report } = await channel.call({ op: 'run', ...request });
      if (report === undefined) throw new Error('the load client answered without a report');
      return report;
    };
    const warmUp = await load({
      conversations: 1,
      trips: 1,
      tag: `warm-up-${side}-${run}`,
      requestTimeoutMs,
    });
    if (warmUp.lost > 0)
      throw cannotRun(`console-cpu: ${side}`, 'its warm-up conversation failed', serve, warmUp);
    await untilQuiet(serve.child);

    const agentRunsBefore = backend.runRequests.length;
    const cpuBefore = await threadCpuMs(serve.child);
    const loading = load({ conversations, trips, tag: `${side}-${run}`, requestTimeoutMs });
    // Awaited below in any case; a rejection before then is not unhandled.
    loading.catch(() => undefined);
    if (side === 'open') await page.open();
    const report = await loading;
    const cpuMs = (await threadCpuMs(serve.child)) - cpuBefore;
    const consoleTally = side === 'open' ? await page.close() : undefined;
    if (serve.child.exitCode !== null || serve.child.signalCode !== null) {
      throw cannotRun(`console-cpu: ${side}`, 'serve exited during the measurement', serve, report);
    }
    if (report.lost === conversations)
      throw cannotRun(`console-cpu: ${side}`, 'no conversation finished', serve, report);
    if (consoleTally !== undefined && (consoleTally.frames['state'] ?? 0) === 0) {
      throw cannotRun(
        `console-cpu: ${side}`,
        'the console feed sent no state frame during the load',
        serve,
        report,
      );
    }
    const quiet = side === 'closed' ? await quietCost(serve, page) : undefined;
    return {
      side,
      run,
      report,
      agentRuns: backend.runRequests.length - agentRunsBefore,
      cpuMs,
      ...(consoleTally === undefined ? {} : { console: consoleTally }),
      ...(quiet === undefined ? {} : { quiet }),
    };
  } finally {
    await stopProcesses([client, browser, serve.child]);
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
      const page =
        measurement.console === undefined
          ? ''
          : `; console opened in ${measurement.console.openMs.toFixed(0)} ms ` +
            `(${measurement.console.files} files, ${measurement.console.apiCalls} JSON routes), frames ` +
            JSON.stringify(measurement.console.frames);
      console.log(
        `run ${run + 1}, ${side}: ${report.roundTrips} round trips, ${report.failures} failures, ` +
          `${report.lost} lost, ${(report.wallMs / 1000).toFixed(1)} s, serve CPU ` +
          `${(measurement.cpuMs / 1000).toFixed(2)} s${page}`,
      );
      for (const sample of report.failureSamples) console.log(`  ${sample}`);
    }
  }
} finally {
  await bench.close();
}

// ---- report --------------------------------------------------------------------------------------------

type Column = {
  title: string;
  value: (measurement: Measurement) => number;
  digits: number;
  /** Compared open − closed in percent. */
  compared?: boolean;
};
const frames = (measurement: Measurement, name: string): number => measurement.console?.frames[name] ?? 0;
const columns: Column[] = [
  { title: 'CPU s', value: ({ cpuMs }) => cpuMs / 1000, digits: 2, compared: true },
  {
    title: 'CPU ms/trip',
    value: ({ cpuMs, report }) => cpuMs / report.roundTrips,
    digits: 2,
    compared: true,
  },
  { title: 'wall s', value: ({ report }) => report.wallMs / 1000, digits: 2, compared: true },
  { title: 'p50 ms', value: ({ report }) => report.p50Ms, digits: 1, compared: true },
  { title: 'p95 ms', value: ({ report }) => report.p95Ms, digits: 1, compared: true },
  { title: 'trips', value: ({ report }) => report.roundTrips, digits: 0 },
  { title: 'failures', value: ({ report }) => report.failures, digits: 0 },
  { title: 'lost', value: ({ report }) => report.lost, digits: 0 },
  { title: 'agent runs', value: ({ agentRuns }) => agentRuns, digits: 0 },
  { title: 'state frames', value: (measurement) => frames(measurement, 'state'), digits: 0 },
  { title: 'history frames', value: (measurement) => frames(measurement, 'history'), digits: 0 },
];
const rows: string[][] = measurements.map((measurement) => [
  measurement.side,
  String(measurement.run + 1),
  ...columns.map((column) => column.value(measurement).toFixed(column.digits)),
]);
const medians = new Map(
  sides.map((side) => {
    const own = measurements.filter((measurement) => measurement.side === side);
    return [side, columns.map((column) => median(own.map(column.value)))] as const;
  }),
);
for (const [side, values] of medians) {
  rows.push([side, 'median', ...values.map((value, index) => value.toFixed(columns[index]!.digits))]);
}
const percent = (open: number, closed: number): string => {
  const difference = ((open - closed) / closed) * 100;
  return Number.isFinite(difference) ? `${difference >= 0 ? '+' : ''}${difference.toFixed(1)} %` : '-';
};
const [closedMedians, openMedians] = [medians.get('closed')!, medians.get('open')!];
rows.push([
  'open − closed',
  'medians',
  ...columns.map((column, index) =>
    column.compared === true ? percent(openMedians[index]!, closedMedians[index]!) : '',
  ),
]);
// Each run's own pair (the same minutes of the machine), then the median of those differences.
const pairs = Array.from({ length: runs }, (_, run) => {
  const of = (side: Side): Measurement => measurements.find((one) => one.side === side && one.run === run)!;
  return { closed: of('closed'), open: of('open') };
});
rows.push([
  'open − closed',
  'per-run median',
  ...columns.map((column) => {
    if (column.compared !== true) return '';
    const differences = pairs.map(
      ({ open, closed }) => ((column.value(open) - column.value(closed)) / column.value(closed)) * 100,
    );
    const middle = median(differences);
    return Number.isFinite(middle) ? `${middle >= 0 ? '+' : ''}${middle.toFixed(1)} %` : '-';
  }),
]);
const commit =
  spawnSync('git', ['-C', checkout, 'describe', '--always', '--dirty', '--abbrev=7'], {
    encoding: 'utf8',
  }).stdout.trim() || '?';
const settings = Object.entries(bridgeSettings).map(([name, value]) => `${name}=${value}`);
console.log(
  `\n${conversations} conversations at once × ${trips} tool round trips (${trips + 1} requests each), ` +
    `${runs} run${runs === 1 ? '' : 's'}, console closed / open, commit ${commit}` +
    (settings.length === 0 ? '' : `; ${settings.join(' ')}`),
);
printTable(['side', 'run', ...columns.map((column) => column.title)], rows);
console.log(
  `per-run CPU differences (open − closed): ${pairs
    .map(({ open, closed }) => percent(open.cpuMs, closed.cpuMs))
    .join(', ')}`,
);

// The console's own cost on the quiet `serve` after the load: small enough to be lost in the load's noise
// above, measured here without it; then what it comes to for a load of the median wall time.
const quietColumns: Column[] = [
  { title: 'closed ms/tick', value: ({ quiet }) => quiet!.closedMs, digits: 1 },
  { title: 'open ms/tick', value: ({ quiet }) => quiet!.openMs, digits: 1 },
  { title: 'feed ms/tick', value: ({ quiet }) => quiet!.openMs - quiet!.closedMs, digits: 1 },
  { title: 'opening ms', value: ({ quiet }) => quiet!.openingMs, digits: 1 },
  { title: 'state frames', value: ({ quiet }) => quiet!.frames['state'] ?? 0, digits: 0 },
  { title: 'history frames', value: ({ quiet }) => quiet!.frames['history'] ?? 0, digits: 0 },
];
const quiets = measurements.filter((measurement) => measurement.quiet !== undefined);
const quietMedians = quietColumns.map((column) => median(quiets.map(column.value)));
console.log(
  `\nthe console's own cost on the quiet serve after each closed load (its ${conversations + 1} ` +
    `conversations still listed): serve CPU per feed tick (${quietWindowMs / 1000} s, median of ` +
    `${quietWindows} windows) closed and open, their difference, and the page's opening`,
);
printTable(
  ['run', ...quietColumns.map((column) => column.title)],
  [
    ...quiets.map((measurement) => [
      String(measurement.run + 1),
      ...quietColumns.map((column) => column.value(measurement).toFixed(column.digits)),
    ]),
    ['median', ...quietMedians.map((value, index) => value.toFixed(quietColumns[index]!.digits))],
  ],
);
const [feedMs, openingMs] = [quietMedians[2]!, quietMedians[3]!];
const wallMs = median(measurements.filter((one) => one.side === 'open').map(({ report }) => report.wallMs));
const ticks = Math.floor(wallMs / quietWindowMs);
const estimateMs = openingMs + ticks * feedMs;
console.log(
  `for a load of ${(wallMs / 1000).toFixed(2)} s (open's median wall): opening ${openingMs.toFixed(1)} ms + ` +
    `${ticks} ticks × ${feedMs.toFixed(1)} ms = ${estimateMs.toFixed(1)} ms, ` +
    `${((estimateMs / (closedMedians[0]! * 1000)) * 100).toFixed(2)} % of closed's median serve CPU`,
);
printRunClock();
