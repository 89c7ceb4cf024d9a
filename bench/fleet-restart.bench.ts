/**
 * What a fleet's users feel when an operator restarts it, or loses a process: three `cursor-bridge serve`
 * processes (the real CLI and SDK against the fake backend) behind the real HAProxy with the shipped
 * config, and conversations of the three client shapes (Claude Code, Codex, OpenCode), each six tool round
 * trips over three user turns (`test/helpers/e2e/fleet-*.ts`). Three runs, each on a fresh cluster:
 * - quiet: the conversations in the same waves, a pause of 10 s where a restart would be;
 * - rolling restart: the same waves, each process drained and restarted in turn after its wave;
 * - killed: long conversations until one process holds 20 live ones, then SIGKILL to it.
 * Prints p50 / p99 of request latency (request sent → answer whole, the client's own retries included;
 * the answers the model sends slowly on purpose left out), for all requests, for those in flight during the
 * restarts, and before and after the kill, what was lost or run twice (0 expected),
 * and what the clients retried.
 * `BENCH_FLEET_CONVERSATIONS` (default 50).
 */

import { performance } from 'node:perf_hooks';
import {
  expectedAnswers,
  percentiles,
  type FleetOutcome,
  type FleetRequest,
} from '../test/helpers/e2e/fleet-clients.js';
import {
  fleetPlans,
  killedFleetRun,
  rollingRestartWaves,
  runFleetAround,
  startFleet,
  type Fleet,
} from '../test/helpers/e2e/fleet-restart.js';

const conversations = Number(process.env['BENCH_FLEET_CONVERSATIONS'] ?? 50);

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Conversations that ended wrong: an error, a wrong answer, a step run other than once. */
const damage = (outcomes: ReadonlyArray<PromiseSettledResult<FleetOutcome>>): string[] =>
  outcomes.flatMap((outcome) => {
    if (outcome.status === 'rejected') return [`error: ${String(outcome.reason)}`];
    const { plan, answers, executions } = outcome.value;
    const wrong = JSON.stringify(answers) !== JSON.stringify(expectedAnswers(plan));
    const repeated = [...executions.values()].filter((count) => count !== 1).length;
    const missing = plan.turns * plan.steps - executions.size;
    return wrong || repeated > 0 || missing > 0
      ? [`${plan.conversation}: wrong answers ${wrong}, steps run twice ${repeated}, never run ${missing}`]
      : [];
  });

/** Request latency, leaving out the requests whose answer the model sends slowly on purpose. */
const latency = (requests: readonly FleetRequest[]): string => {
  const { p50, p99, count } = percentiles(
    requests.filter((request) => !request.slowAnswer).map((request) => request.endedAt - request.startedAt),
  );
  return `p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms (n = ${count})`;
};

const retries = (fleet: Fleet): string => {
  const counts: Record<string, number> = {};
  for (const retry of fleet.recorder.retries) {
    const key = `${retry.shape} ${retry.cause.replace(/^(stream): .*/, '$1 cut')}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return JSON.stringify(counts);
};

const withFleet = async (run: (fleet: Fleet) => Promise<void>): Promise<void> => {
  const fleet = await startFleet();
  try {
    await run(fleet);
  } finally {
    await fleet.close();
  }
};

const started = performance.now();
await withFleet(async (fleet) => {
  // The same waves, each operation a pause about as long as a drain and restart.
  const { outcomes } = await runFleetAround(fleet, fleetPlans(conversations), async (_index, sigtermSent) => {
    sigtermSent();
    await sleep(10_000);
    return undefined;
  });
  console.log(`quiet: ${outcomes.length} conversations, damaged ${damage(outcomes).length}`);
  console.log(`  every request: ${latency(fleet.recorder.requests)}`);
  console.log(`  retries: ${retries(fleet)}`);
});

await withFleet(async (fleet) => {
  const { outcomes, restarts } = await rollingRestartWaves(fleet, fleetPlans(conversations));
  const from = restarts[0]?.sigtermAt ?? 0;
  const to = restarts.at(-1)?.upAt ?? 0;
  const during = fleet.recorder.requests.filter(
    (request) => request.endedAt >= from && request.startedAt <= to,
  );
  const moved = new Set(
    fleet.model.runs.filter((run) => run.replay || run.carried.length > 0).map((run) => run.conversation),
  );
  console.log(`rolling restart: ${outcomes.length} conversations, damaged ${damage(outcomes).length}`);
  for (const line of damage(outcomes)) console.log(`  ${line}`);
  console.log(`  every request: ${latency(fleet.recorder.requests)}`);
  console.log(`  in flight during the restarts (${((to - from) / 1000).toFixed(1)} s): ${latency(during)}`);
  console.log(`  conversations moved to another process by replay: ${moved.size}`);
  console.log(`  retries: ${retries(fleet)}`);
  for (const restart of restarts) {
    console.log(
      `  bridge${restart.index + 1}: ${restart.parkedAtSigterm.length} parked on a slow tool at SIGTERM, ` +
        `drained in ${(restart.drainMs / 1000).toFixed(1)} s (${restart.drainedClean ? 'every conversation finished' : 'deadline'}), exit ${restart.exit.code}, ` +
        `UP again ${(restart.upMs / 1000).toFixed(1)} s after`,
    );
  }
});

await withFleet(async (fleet) => {
  const { outcomes, kill } = await killedFleetRun(fleet, 20);
  const held = new Set(kill.held);
  const before = fleet.recorder.requests.filter((request) => request.endedAt < kill.killedAt);
  const after = fleet.recorder.requests.filter((request) => request.endedAt >= kill.killedAt);
  console.log(
    `killed: bridge${kill.index + 1} with ${kill.held.length} live conversations (${kill.parked.length} parked on a slow tool, ` +
      `${kill.answering.length} waiting on a slow answer); ${outcomes.length} conversations, damaged ${damage(outcomes).length}`,
  );
  for (const line of damage(outcomes)) console.log(`  ${line}`);
  console.log(`  every request answered before the kill: ${latency(before)}`);
  console.log(
    `  after it, the dead process's conversations: ${latency(after.filter((request) => held.has(request.conversation)))}`,
  );
  console.log(
    `  after it, the others: ${latency(after.filter((request) => !held.has(request.conversation)))}`,
  );
  console.log(`  retries: ${retries(fleet)}`);
});
console.log(`(${((performance.now() - started) / 1000).toFixed(0)} s)`);
