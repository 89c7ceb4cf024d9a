/**
 * The bridge against its floor, side by side in one interleaved run: `cursor-bridge serve` (the real
 * CLI from `dist/`, its own process) and `side-by-side/bare-sdk-worker.ts` (the bare `@cursor/sdk` with
 * the same in-memory store, its own process) talk to one fake Cursor backend in this process, which
 * also plays the client. Each figure is measured alternately on both (order swapped every round) and
 * reported as medians with the ratio bridge ÷ bare:
 *
 * - first text delta on a new conversation (request → first `text_delta`; bare: create → first text delta);
 * - request → tool_use on a new conversation (bare: create → the custom tool's `execute`);
 * - tool_result → first text delta;
 * - a 10k-delta answer: wall time and process CPU (utime + stime from /proc);
 * - 32 concurrent new conversations: time until the last reaches its tool call, RSS with all 32
 *   parked (total and above idle);
 * - CPU per new conversation and RSS after a soak of `BENCH_SOAK` (default 288, a multiple of 48) new conversations.
 *
 * `BENCH_ROUNDS` (default 15) sets the latency rounds; `BENCH_BARE_OPTIONS=bridge` gives the bare SDK the
 * agent options the bridge needs (see the worker). Benchmarks measure; they never fail on a number.
 */

import { fork, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { ensureBuilt } from '../test/helpers/ensure-built.js';
import { startFakeCursorBackend } from '../test/fakes/cursor-backend/fake-cursor-backend.js';
import type { BareRequest, Reply } from './side-by-side/bare-sdk-worker.js';

const rounds = Number(process.env['BENCH_ROUNDS'] ?? 15);
const soak = Math.max(48, Math.ceil(Number(process.env['BENCH_SOAK'] ?? 288) / 48) * 48);
const concurrent = 32;
const streamDeltas = 10_000;
const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, '..');

const backend = await startFakeCursorBackend({
  scenario: async (run) => {
    if (run.prompt.includes('use the tool')) {
      const [result] = await run.toolCalls([{ toolName: 'Bash', args: { command: 'true' } }]);
      run.text(`done ${result?.status ?? ''}`);
    } else if (run.prompt.includes('long answer')) {
      for (let index = 0; index < streamDeltas; index += 1) run.text(`d${index} `);
    } else {
      run.text('hello');
    }
    run.turnEnded({ inputTokens: 10, outputTokens: 1 });
  },
});

// ---- the bridge: `cursor-bridge serve`, its own process --------------------------------------------
await ensureBuilt();
const root = await realpath(await mkdtemp(join(tmpdir(), 'cb-bench-sbs-')));
const bridgeHome = join(root, 'bridge-home');
const bareHome = join(root, 'bare-home');
await mkdir(bridgeHome, { recursive: true });
await mkdir(bareHome, { recursive: true });
const configPath = join(root, 'config.json');
await writeFile(
  configPath,
  JSON.stringify({
    LOG_LEVEL: 'warn',
    Providers: [{ name: 'cursor', models: ['composer-2'] }],
    Router: { default: 'cursor,composer-2' },
  }),
);
const baseEnv = {
  PATH: process.env['PATH'] ?? '/usr/bin:/bin',
  CURSOR_API_KEY: 'crsr_bench',
  CURSOR_BACKEND_URL: backend.url,
};
// `BENCH_CPU_PROF=<dir>`: the bridge writes a V8 CPU profile there on exit (read it in DevTools).
const profileDir = process.env['BENCH_CPU_PROF'];
const bridgeChild = spawn(
  process.execPath,
  [
    ...(profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]),
    join(repoRoot, 'bin', 'cursor-bridge.js'),
    'serve',
    '--host',
    '127.0.0.1',
    '--port',
    '0',
    '--config',
    configPath,
  ],
  {
    cwd: root,
    env: { ...baseEnv, HOME: bridgeHome, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe'],
  },
);
const port = await new Promise<number>((resolve, reject) => {
  let stderr = '';
  bridgeChild.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    const match = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stderr);
    if (match?.[1] !== undefined) resolve(Number(match[1]));
  });
  bridgeChild.once('exit', (code) => reject(new Error(`bridge exited (${String(code)}): ${stderr}`)));
});
const url = `http://127.0.0.1:${port}/v1/messages`;

// ---- the floor: the bare SDK, its own process ------------------------------------------------------
const bareChild = fork(join(here, 'side-by-side', 'bare-sdk-worker.ts'), {
  execArgv: ['--experimental-strip-types', '--disable-warning=ExperimentalWarning'],
  env: {
    ...baseEnv,
    HOME: bareHome,
    BENCH_BARE_ROOT: join(bareHome, '.claude-code-router', 'cursor-sdk-workspaces'),
    ...(process.env['BENCH_BARE_OPTIONS'] === undefined
      ? {}
      : { BENCH_BARE_OPTIONS: process.env['BENCH_BARE_OPTIONS'] }),
  },
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
const pending = new Map<number, (reply: Reply) => void>();
bareChild.on('message', (reply: Reply) => {
  pending.get(reply.id)?.(reply);
  pending.delete(reply.id);
});
await new Promise<void>((resolve) => pending.set(0, () => resolve()));
let nextId = 1;
type BareOp = BareRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;
const bare = (request: BareOp): Promise<Reply> =>
  new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, (reply) => (reply.error === undefined ? resolve(reply) : reject(new Error(reply.error))));
    bareChild.send({ ...request, id });
  });

// ---- process figures from /proc ---------------------------------------------------------------------
const rssMb = async (child: ChildProcess): Promise<number> => {
  const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) / 1024;
};
/** utime + stime in ms (clock ticks of 10 ms). */
const cpuMs = async (child: ChildProcess): Promise<number> => {
  const stat = await readFile(`/proc/${child.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
const settle = (ms = 1_500): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

// ---- the bridge's client ----------------------------------------------------------------------------
type Message = { role: 'user' | 'assistant'; content: unknown };
const tools = [
  {
    name: 'Bash',
    description: 'Run a shell command',
    input_schema: { type: 'object', properties: { command: { type: 'string' } } },
  },
];
type Posted = {
  /** ms from the request to the first text delta / tool_use (undefined: none). */
  textAt?: number;
  toolAt?: number;
  endAt: number;
  content: unknown[];
};
/** POST one streaming Messages request; parses the SSE events (not for the 10k stream: `parse: false`). */
const post = async (session: string, messages: Message[], parse = true): Promise<Posted> => {
  const start = performance.now();
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-claude-code-session-id': session },
    body: JSON.stringify({ model: 'composer-2', max_tokens: 50, stream: true, tools, messages }),
  });
  if (response.status !== 200)
    throw new Error(`bridge answered ${response.status}: ${await response.text()}`);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const result: Posted = { endAt: 0, content: [] };
  let buffer = '';
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    if (!parse) {
      if (result.textAt === undefined && decoder.decode(value).includes('text_delta')) {
        result.textAt = performance.now() - start;
      }
      continue;
    }
    buffer += decoder.decode(value, { stream: true });
    let newline: number;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      if (!line.startsWith('data: ')) continue;
      const event = JSON.parse(line.slice(6)) as {
        type: string;
        content_block?: { type: string; id?: string; name?: string };
        delta?: { type: string; text?: string };
      };
      if (event.type === 'content_block_delta' && event.delta?.type === 'text_delta') {
        result.textAt ??= performance.now() - start;
        text += event.delta.text ?? '';
      } else if (event.type === 'content_block_start' && event.content_block?.type === 'tool_use') {
        result.toolAt ??= performance.now() - start;
        if (text !== '') result.content.push({ type: 'text', text });
        text = '';
        result.content.push({ ...event.content_block, input: { command: 'true' } });
      }
    }
  }
  result.endAt = performance.now() - start;
  return result;
};

type Parked = { session: string; messages: Message[]; answer: Posted };
const bridgeTool = async (prompt: string): Promise<Parked> => {
  const session = randomUUID();
  const messages: Message[] = [{ role: 'user', content: prompt }];
  const answer = await post(session, messages);
  return { session, messages, answer };
};
const bridgeResult = async ({ session, messages, answer }: Parked): Promise<number> => {
  const call = answer.content.find((block) => (block as { type: string }).type === 'tool_use') as {
    id: string;
  };
  const next = await post(session, [
    ...messages,
    { role: 'assistant', content: answer.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'parked' }] },
  ]);
  return next.textAt ?? Number.NaN;
};

// ---- the run ------------------------------------------------------------------------------------------
type Side = 'bridge' | 'bare';
const figures = new Map<string, { bridge: number[]; bare: number[]; unit: string }>();
const record = (name: string, side: Side, value: number, unit = 'ms'): void => {
  const entry = figures.get(name) ?? { bridge: [], bare: [], unit };
  if (!figures.has(name)) figures.set(name, entry);
  entry[side].push(value);
};
const alternate = async (round: number, task: (side: Side) => Promise<void>): Promise<void> => {
  for (const side of round % 2 === 0 ? (['bridge', 'bare'] as const) : (['bare', 'bridge'] as const)) {
    await task(side);
  }
};
const startedAt = performance.now();
const loadBefore = loadavg();

// Warm-up: each side's first conversation lists the model catalog and starts the SDK.
for (let index = 0; index < 3; index += 1) {
  await post(randomUUID(), [{ role: 'user', content: `warm up ${index}` }]);
  await bare({ op: 'text', prompt: `warm up ${index}` });
}

for (let round = 0; round < rounds; round += 1) {
  await alternate(round, async (side) => {
    if (side === 'bridge') {
      const fresh = await post(randomUUID(), [{ role: 'user', content: `fresh conversation ${round}` }]);
      record('first text delta, new conversation', side, fresh.textAt ?? Number.NaN);
      const parked = await bridgeTool(`please use the tool ${round}`);
      record('request → tool_use, new conversation', side, parked.answer.toolAt ?? Number.NaN);
      record('tool_result → first text delta', side, await bridgeResult(parked));
    } else {
      record(
        'first text delta, new conversation',
        side,
        (await bare({ op: 'text', prompt: `fresh conversation ${round}` })).ms!,
      );
      const parked = await bare({ op: 'tool', prompt: `please use the tool ${round}` });
      record('request → tool_use, new conversation', side, parked.ms!);
      record(
        'tool_result → first text delta',
        side,
        (await bare({ op: 'result', conversation: parked.conversation! })).ms!,
      );
    }
  });
}

for (let round = 0; round < 3; round += 1) {
  await alternate(round, async (side) => {
    const child = side === 'bridge' ? bridgeChild : bareChild;
    const cpuBefore = await cpuMs(child);
    const start = performance.now();
    if (side === 'bridge')
      await post(randomUUID(), [{ role: 'user', content: `long answer ${round}` }], false);
    else await bare({ op: 'stream', prompt: `long answer ${round}` });
    record(`${streamDeltas / 1000}k-delta answer: wall time`, side, performance.now() - start);
    record(`${streamDeltas / 1000}k-delta answer: CPU`, side, (await cpuMs(child)) - cpuBefore);
  });
}

for (let round = 0; round < 2; round += 1) {
  await alternate(round, async (side) => {
    const child = side === 'bridge' ? bridgeChild : bareChild;
    await settle();
    const idle = await rssMb(child);
    const start = performance.now();
    if (side === 'bridge') {
      const parked = await Promise.all(
        Array.from({ length: concurrent }, (_, index) =>
          bridgeTool(`use the tool, parked ${round}.${index}`),
        ),
      );
      record(`${concurrent} concurrent new conversations → last tool_use`, side, performance.now() - start);
      await settle();
      const atPark = await rssMb(child);
      record(`RSS, ${concurrent} conversations parked`, side, atPark, 'MB');
      record(`RSS above idle, ${concurrent} parked`, side, atPark - idle, 'MB');
      await Promise.all(parked.map(bridgeResult));
    } else {
      const parked = await Promise.all(
        Array.from({ length: concurrent }, (_, index) =>
          bare({ op: 'tool', prompt: `use the tool, parked ${round}.${index}` }),
        ),
      );
      record(`${concurrent} concurrent new conversations → last tool_use`, side, performance.now() - start);
      await settle();
      const atPark = await rssMb(child);
      record(`RSS, ${concurrent} conversations parked`, side, atPark, 'MB');
      record(`RSS above idle, ${concurrent} parked`, side, atPark - idle, 'MB');
      await Promise.all(parked.map((reply) => bare({ op: 'result', conversation: reply.conversation! })));
    }
  });
}

// Soak: alternate blocks of 48 new conversations (4 at a time), then settle and read RSS.
const block = 48;
for (let done = 0; done < soak; done += block) {
  await alternate(done / block, async (side) => {
    const child = side === 'bridge' ? bridgeChild : bareChild;
    const cpuBefore = await cpuMs(child);
    for (let index = 0; index < block; index += 4) {
      await Promise.all(
        Array.from({ length: 4 }, (_, offset) =>
          side === 'bridge'
            ? post(randomUUID(), [{ role: 'user', content: `soak ${done + index + offset}` }])
            : bare({ op: 'text', prompt: `soak ${done + index + offset}` }),
        ),
      );
    }
    record('CPU per new conversation (soak, 4 at a time)', side, ((await cpuMs(child)) - cpuBefore) / block);
  });
}
await settle(5_000);
record(`RSS after a soak of ${soak} conversations`, 'bridge', await rssMb(bridgeChild), 'MB');
record(`RSS after a soak of ${soak} conversations`, 'bare', await rssMb(bareChild), 'MB');

// ---- report -------------------------------------------------------------------------------------------
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? sorted[middle]!
    : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2;
};
const rows = [...figures].map(([name, { bridge, bare: floor, unit }]) => {
  const b = median(bridge);
  const f = median(floor);
  return [
    name,
    `${b.toFixed(1)} ${unit}`,
    `${f.toFixed(1)} ${unit}`,
    (b / f).toFixed(2),
    String(bridge.length),
  ];
});
const header = ['figure (medians)', 'bridge', 'bare SDK', 'ratio', 'n'];
const widths = header.map((title, column) =>
  Math.max(title.length, ...rows.map((row) => row[column]!.length)),
);
const line = (cells: string[]): string =>
  cells
    .map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)))
    .join('  ');
console.log(line(header));
console.log(widths.map((width) => '-'.repeat(width)).join('  '));
for (const row of rows) console.log(line(row));
console.log(
  `\nload average ${loadBefore.map((value) => value.toFixed(2)).join(' ')} → ${loadavg()
    .map((value) => value.toFixed(2))
    .join(' ')}; ${((performance.now() - startedAt) / 1000).toFixed(0)} s`,
);

await bare({ op: 'closeAll' });
bareChild.kill('SIGTERM');
bridgeChild.kill('SIGTERM');
await Promise.all(
  [bareChild, bridgeChild].map(
    (child) =>
      new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve))),
  ),
);
await backend.close();
await rm(root, { recursive: true, force: true });
