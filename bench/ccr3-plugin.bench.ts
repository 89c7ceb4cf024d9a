/**
 * Claude Code Router 3.1.1 (the real one, `test/helpers/e2e/install-ccr3.ts`) with cursor-bridge as its
 * plugin (the engine inside CCR's process) against CCR 3 with `cursor-bridge serve` as a sidecar (its own
 * process behind an `anthropic_messages` provider), in one interleaved run. Each CCR runs in its own
 * private network namespace (`test/helpers/e2e/ccr3-host.ts`: CCR 3 binds fixed ports) with its own fake
 * Cursor backend (`side-by-side/scenario.ts`: "use the tool" makes one Bash call, anything else answers
 * "hello"). The client is `side-by-side/bridge-client-worker.ts`, one per namespace, its own process,
 * posting to CCR's gateway (3456) and timing each figure itself from the request's start.
 *
 * - RSS: every CCR process of the namespace (plugin case) vs CCR's plus the sidecar's (sidecar case), from
 *   /proc: fresh (before any request), idle after the warm-up, and with 32 new conversations parked on
 *   their tool call (32 requests at once, each ending on tool_use; their results never sent);
 * - latency (medians over `BENCH_ROUNDS`, default 10, order swapped every round): request → first text
 *   delta, request → tool_use (its result is then sent, so nothing stays parked).
 *
 * Needs root (a network namespace) like the CCR 3 e2e. Benchmarks measure; they never fail on a number.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdir, readFile, readlink } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { planCcr3Install } from '../src/hosts/ccr/install/ccr3-install-plan.js';
import { cursorBridgeBin, startCcr3Host, type Ccr3Host } from '../test/helpers/e2e/ccr3-host.js';
import { benchScenario } from './side-by-side/scenario.js';
import { ipc } from './side-by-side/child-process.js';
import type {
  ClientReply,
  ClientRequest,
  Message,
  Post,
  Posted,
} from './side-by-side/bridge-client-worker.js';

// Skipped (not failed) where there is no namespace to make, so `npm run bench` still runs the rest.
if (process.getuid?.() !== 0) {
  console.log('skipped: needs root (each CCR 3 runs in its own network namespace)');
  process.exit(0);
}

const rounds = Number(process.env['BENCH_ROUNDS'] ?? 10);
const parkedCount = 32;
const sidecarPort = 3465;
const here = dirname(fileURLToPath(import.meta.url));
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

type Side = 'plugin' | 'sidecar';
type ClientOp = ClientRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;
type Setup = {
  host: Ccr3Host;
  holderPid: number;
  sidecar: ChildProcess | undefined;
  worker: ChildProcess;
  client: (request: ClientOp) => Promise<ClientReply>;
};

/** Retries `attempt` until it resolves; a safety net for a loaded machine, not a timing. */
const eventually = async <T>(what: string, attempt: () => Promise<T>, netMs = 120_000): Promise<T> => {
  const until = Date.now() + netMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() > until) throw new Error(`${what}: ${String(error)}`, { cause: error });
      await sleep(250);
    }
  }
};

const rssKb = async (pid: number): Promise<number> => {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
};

/**
 * CCR's processes: every process of the namespace but its holder (the relay and its `sleep`), the
 * sidecar and the client worker.
 */
const ccrPids = async ({ holderPid, sidecar, worker }: Setup): Promise<number[]> => {
  const nsLink = await readlink(`/proc/${holderPid}/ns/net`);
  const others = new Set([holderPid, sidecar?.pid, worker.pid]);
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || others.has(Number(entry))) continue;
    if ((await readlink(`/proc/${entry}/ns/net`).catch(() => '')) !== nsLink) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (parent === holderPid) continue;
    pids.push(Number(entry));
  }
  return pids;
};

const commandOf = async (pid: number): Promise<string> =>
  (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).replaceAll('\0', ' ').trim().slice(0, 160);

type Rss = { ccrMb: number; sidecarMb: number; totalMb: number; processes: number };
const rssOf = async (setup: Setup): Promise<Rss> => {
  const pids = await ccrPids(setup);
  let ccr = 0;
  for (const pid of pids) ccr += await rssKb(pid);
  const sidecar = setup.sidecar?.pid === undefined ? 0 : await rssKb(setup.sidecar.pid);
  return {
    ccrMb: ccr / 1024,
    sidecarMb: sidecar / 1024,
    totalMb: (ccr + sidecar) / 1024,
    processes: pids.length,
  };
};

const startSide = async (side: Side): Promise<Setup> => {
  const host = await startCcr3Host();
  host.backend.setScenario(benchScenario(10));
  const holderPid = Number(host.endpoint.wrap('true', []).args[1]);
  const started = await host.ccrCommand(['start']);
  if (started.exitCode !== 0) throw new Error(`ccr start: ${started.stderr}`);
  await eventually('CCR answers', () => host.rpc('getAppInfo'));
  let sidecar: ChildProcess | undefined;
  if (side === 'plugin') {
    const install = await host.run(process.execPath, [cursorBridgeBin, 'ccr', 'install']);
    if (install.exitCode !== 0) throw new Error(`ccr install: ${install.stdout}${install.stderr}`);
  } else {
    // docs/ccr.md's sidecar: `APIKEY=<secret> cursor-bridge serve --port 3465` and an anthropic_messages
    // provider at it with the `claude` rule (the install's provider and rule, without its plugin entry).
    const secret = `cb-bench-${randomUUID()}`;
    const wrapped = host.endpoint.wrap(process.execPath, [
      cursorBridgeBin,
      'serve',
      '--host',
      '127.0.0.1',
      '--port',
      String(sidecarPort),
    ]);
    sidecar = spawn(wrapped.command, wrapped.args, {
      cwd: host.root,
      env: { ...host.env, APIKEY: secret, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    sidecar.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await eventually('the sidecar listens', async () => {
      if (sidecar?.exitCode !== null) throw new Error(`serve exited: ${stderr}`);
      if (!/listening/i.test(stderr)) throw new Error('not yet');
    });
    const config = (await host.rpc('getConfig')) as Record<string, unknown>;
    const plan = planCcr3Install(config, {
      modulePath: '(none)',
      port: sidecarPort,
      secret,
      models: ['composer-2'],
    });
    delete plan.config['plugins'];
    if (config['plugins'] !== undefined) plan.config['plugins'] = config['plugins'];
    await host.rpc('saveConfig', [plan.config]);
    await host.rpc('restartGateway');
  }
  const { APIKEY } = (await host.rpc('getConfig')) as { APIKEY: string };
  const wrapped = host.endpoint.wrap(process.execPath, [
    '--experimental-strip-types',
    '--disable-warning=ExperimentalWarning',
    join(here, 'side-by-side', 'bridge-client-worker.ts'),
  ]);
  const worker = spawn(wrapped.command, wrapped.args, {
    env: {
      PATH: host.env['PATH'] ?? '/usr/bin:/bin',
      BENCH_BRIDGE_URL: `${host.endpoint.baseUrl}/v1/messages`,
      BENCH_BRIDGE_MODEL: 'claude-sonnet-4-5',
      BENCH_BRIDGE_HEADERS: JSON.stringify({ 'x-api-key': APIKEY, 'anthropic-version': '2023-06-01' }),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const channel = ipc<ClientRequest, ClientReply>(worker);
  await channel.ready;
  return {
    host,
    holderPid,
    sidecar,
    worker,
    client: (request) => channel.call(request as Omit<ClientRequest, 'id'>),
  };
};

const post = async (setup: Setup, session: string, messages: Message[]): Promise<Posted> =>
  (await setup.client({ op: 'post', session, messages, parse: true })).posted![0]!;

/** A new conversation ending on tool_use, then its result (so it does not stay parked). */
const toolRound = async (setup: Setup): Promise<number> => {
  const session = randomUUID();
  const messages: Message[] = [{ role: 'user', content: 'please use the tool' }];
  const answer = await post(setup, session, messages);
  const call = answer.content.find((block) => (block as { type: string }).type === 'tool_use') as
    { id: string } | undefined;
  if (call === undefined) throw new Error(`no tool_use: ${JSON.stringify(answer)}`);
  await post(setup, session, [
    ...messages,
    { role: 'assistant', content: answer.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'ok' }] },
  ]);
  return answer.toolAt ?? Number.NaN;
};

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

const setups: Partial<Record<Side, Setup>> = {};
try {
  // One after the other: each start installs nothing new but builds its namespace and CCR.
  setups.plugin = await startSide('plugin');
  setups.sidecar = await startSide('sidecar');
  const sides: Side[] = ['plugin', 'sidecar'];
  const rss: Record<string, Partial<Record<Side, Rss>>> = { fresh: {}, idle: {}, parked: {} };
  for (const side of sides) rss['fresh']![side] = await rssOf(setups[side]!);

  // Warm-up: the gateway answers through the bridge on both (the sidecar's provider after its restart).
  for (const side of sides) {
    const setup = setups[side]!;
    await eventually(`${side} answers`, async () => {
      const answer = await post(setup, randomUUID(), [{ role: 'user', content: 'warm up' }]);
      if (answer.textAt === undefined) throw new Error(JSON.stringify(answer));
    });
    for (let index = 0; index < 3; index += 1) {
      await post(setup, randomUUID(), [{ role: 'user', content: `warm up ${index}` }]);
      await toolRound(setup);
    }
  }
  await sleep(2_000);
  for (const side of sides) rss['idle']![side] = await rssOf(setups[side]!);

  const latency: Record<string, Record<Side, number[]>> = {
    'request → first text delta': { plugin: [], sidecar: [] },
    'request → tool_use': { plugin: [], sidecar: [] },
  };
  for (let round = 0; round < rounds; round += 1) {
    const order = round % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) {
      const setup = setups[side]!;
      const text = await post(setup, randomUUID(), [{ role: 'user', content: `hello ${round}` }]);
      latency['request → first text delta']![side].push(text.textAt ?? Number.NaN);
      latency['request → tool_use']![side].push(await toolRound(setup));
    }
  }

  for (const side of sides) {
    const posts: Post[] = Array.from({ length: parkedCount }, (_, index) => ({
      session: randomUUID(),
      messages: [{ role: 'user', content: `parked ${index}: use the tool` }],
      parse: true,
    }));
    const reply = await setups[side]!.client({ op: 'burst', posts });
    const parked = reply.posted!.filter((answer) => answer.toolAt !== undefined).length;
    if (parked !== parkedCount) throw new Error(`${side}: ${parked} of ${parkedCount} ended on tool_use`);
  }
  await sleep(2_000);
  for (const side of sides) rss['parked']![side] = await rssOf(setups[side]!);

  const mb = (value: number): string => value.toFixed(1);
  const lines = [
    `CCR ${setups.plugin.host.ccr.version}; ${String(cpus().length)} cores; load ${loadavg()
      .map((load) => load.toFixed(2))
      .join(' ')}; ${String(rounds)} rounds`,
    '',
    '| figure | plugin (CCR) | sidecar (CCR + serve) | sidecar − plugin |',
    '| --- | --- | --- | --- |',
  ];
  for (const [name, label] of [
    ['fresh', 'RSS, fresh (MB)'],
    ['idle', 'RSS, idle after warm-up (MB)'],
    ['parked', `RSS, ${String(parkedCount)} parked conversations (MB)`],
  ] as const) {
    const plugin = rss[name]!.plugin!;
    const sidecar = rss[name]!.sidecar!;
    lines.push(
      `| ${label} | ${mb(plugin.totalMb)} | ${mb(sidecar.totalMb)} (${mb(sidecar.ccrMb)} + ${mb(sidecar.sidecarMb)}) | ${mb(sidecar.totalMb - plugin.totalMb)} |`,
    );
  }
  for (const [name, values] of Object.entries(latency)) {
    const plugin = median(values.plugin);
    const sidecar = median(values.sidecar);
    lines.push(
      `| ${name} (ms, median) | ${plugin.toFixed(1)} | ${sidecar.toFixed(1)} | ${(sidecar - plugin).toFixed(1)} |`,
    );
  }
  for (const side of sides) {
    const commands = await Promise.all((await ccrPids(setups[side]!)).map(commandOf));
    lines.push(`${side}: CCR's processes counted:`, ...commands.map((command) => `  ${command}`));
  }
  lines.push(
    '',
    `CCR processes counted: plugin ${String(rss['idle']!.plugin!.processes)}, sidecar ${String(rss['idle']!.sidecar!.processes)}`,
  );
  console.log(lines.join('\n'));
} finally {
  for (const setup of Object.values(setups)) {
    if (setup.worker.pid !== undefined && setup.worker.exitCode === null) setup.worker.kill('SIGTERM');
    await setup.host.close();
  }
}
