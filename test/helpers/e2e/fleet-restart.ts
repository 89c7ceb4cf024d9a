/**
 * What an operator does to a fleet while people work, for the reliability test and the bench: three
 * `cursor-bridge serve` processes (the real CLI and SDK, each against its own fake backend playing
 * `fleet-model.ts`) behind the real HAProxy with the shipped config, conversations of the three client
 * shapes (`fleet-clients.ts`) launched in waves, and either a rolling restart (each process drained with
 * SIGTERM and started again on its port, one at a time, each while one of its conversations is parked on
 * a slow tool) or a SIGKILL of the process holding the most live conversations.
 */

import { performance } from 'node:perf_hooks';
import { startBridgeCluster, type BridgeCluster } from './haproxy-cluster.js';
import {
  createFleetRecorder,
  fleetPlan,
  runFleetConversation,
  type FleetOutcome,
  type FleetPlan,
  type FleetRecorder,
} from './fleet-clients.js';
import { createFleetModel, type FleetModel } from './fleet-model.js';
import { sleep } from '../../../lib/sleep.js';

/** A safety net for a wait on the fleet, never a speed claim. */
const waitLimitMs = 120_000;

const waitFor = async (condition: () => boolean, what: string): Promise<void> => {
  const deadline = Date.now() + waitLimitMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`fleet: timed out waiting for ${what}`);
    await sleep(20);
  }
};

export type Fleet = {
  cluster: BridgeCluster;
  model: FleetModel;
  recorder: FleetRecorder;
  close(): Promise<void>;
};

/** Start the cluster for a fleet: `CURSOR_BRIDGE_DRAIN_TIMEOUT` above any conversation's length. */
export const startFleet = async (env: Record<string, string> = {}): Promise<Fleet> => {
  const model = createFleetModel();
  const cluster = await startBridgeCluster({
    scenario: { turns: [] },
    shell: { name: 'Bash', input: (command) => ({ command }) },
    backendScenario: (index) => model.scenario(index),
    env: { LOG_LEVEL: 'info', CURSOR_BRIDGE_DRAIN_TIMEOUT: '120', ...env },
  });
  return { cluster, model, recorder: createFleetRecorder(), close: () => cluster.close() };
};

export type FleetRun = {
  outcomes: Array<PromiseSettledResult<FleetOutcome>>;
  plans: FleetPlan[];
};

/** What happens to each member in turn: a drain and restart, or nothing (a quiet run's pause). */
export type FleetOperation = (index: number, sigtermSent: () => void) => Promise<RestartRecord | undefined>;

/**
 * Conversations in waves around an operation on each member in turn. Wave N (a fifth of `plans`, one
 * conversation every 100 ms) is launched; once the operation on member N-1 is done, further conversations
 * follow one at a time until one of member N's is parked on a slow tool; then the operation on member N
 * starts, and wave N+1 is launched as soon as it has sent its SIGTERM (so its first conversations meet a
 * draining process). The plans left are launched after the last one. Resolves when every conversation has
 * ended and every operation is done.
 */
export const runFleetAround = async (
  fleet: Fleet,
  plans: FleetPlan[],
  operate: FleetOperation,
): Promise<FleetRun & { restarts: RestartRecord[] }> => {
  const queue = [...plans];
  const running: Array<Promise<FleetOutcome>> = [];
  const launch = async (count: number): Promise<void> => {
    for (let launched = 0; launched < count; launched += 1) {
      const plan = queue.shift();
      if (plan === undefined) return;
      running.push(runFleetConversation(plan, { baseUrl: fleet.cluster.baseUrl, recorder: fleet.recorder }));
      await sleep(100);
    }
  };
  const members = fleet.cluster.bridges.length;
  // Waves take three fifths of the plans; the rest are kept for the top-ups and launched at the end.
  const perWave = Math.floor(plans.length / (members + 2));
  const restarts: RestartRecord[] = [];
  let previous: Promise<void> = Promise.resolve();
  for (let index = 0; index < members; index += 1) {
    await launch(perWave);
    await previous;
    const deadline = Date.now() + waitLimitMs;
    /** A top-up that landed on this member: it reaches its slow step soon (every plan's turn 1 has one). */
    let candidate: string | undefined;
    while (parkedOnSlowTool(fleet, index).length === 0) {
      if (Date.now() > deadline) {
        const held = fleet.cluster.bridges.map(
          (_, member) => `bridge${member + 1} ${liveOn(fleet, member).length}`,
        );
        throw new Error(
          `fleet: no conversation of bridge${index + 1} on a slow tool (live: ${held.join(', ')}; ` +
            `${fleet.recorder.inSlowTool.size} on a slow tool; ${queue.length} plans left)`,
        );
      }
      const next = queue[0];
      if ((candidate !== undefined && fleet.recorder.live.has(candidate)) || next === undefined) {
        await sleep(50);
        continue;
      }
      // One at a time, each placed before the next: a plan is spent only to learn where it landed.
      await launch(1);
      await waitFor(
        () => fleet.model.processOf(next.conversation) !== undefined,
        `${next.conversation}'s first run`,
      );
      if (fleet.model.processOf(next.conversation) === index) candidate = next.conversation;
    }
    let sigtermSent!: () => void;
    const sent = new Promise<void>((resolve) => (sigtermSent = resolve));
    const operation = operate(index, sigtermSent).then((restart) => {
      if (restart !== undefined) restarts.push(restart);
    });
    previous = operation;
    await Promise.race([sent, operation]);
  }
  await launch(queue.length);
  await previous;
  return { outcomes: await Promise.allSettled(running), plans, restarts };
};

/** {@link runFleetAround} with each member drained and restarted in turn. */
export const rollingRestartWaves = (
  fleet: Fleet,
  plans: FleetPlan[],
): Promise<FleetRun & { restarts: RestartRecord[] }> =>
  runFleetAround(fleet, plans, (index, sigtermSent) => drainAndRestart(fleet, index, sigtermSent));

/** Live conversations held by cluster member `index` whose client is running a slow tool right now. */
export const parkedOnSlowTool = (fleet: Fleet, index: number): string[] =>
  [...fleet.recorder.inSlowTool].filter((conversation) => fleet.model.processOf(conversation) === index);

/** What one drain-and-restart of a member did. */
export type RestartRecord = {
  index: number;
  /** Conversations of that member parked on a slow tool when it got SIGTERM. */
  parkedAtSigterm: string[];
  /** SIGTERM → exit, and exit → HAProxy shows the new process UP. */
  drainMs: number;
  upMs: number;
  exit: { code: number | null; signal: NodeJS.Signals | null };
  /** The process said it drained because every live conversation finished (not the deadline). */
  drainedClean: boolean;
  sigtermAt: number;
  upAt: number;
};

/**
 * Drain member `index` (SIGTERM once one of its conversations is parked on a slow tool; `onSigterm` then
 * runs), wait for it to exit, start it again on its port, and wait until HAProxy has it UP.
 */
export const drainAndRestart = async (
  fleet: Fleet,
  index: number,
  onSigterm?: () => void,
): Promise<RestartRecord> => {
  const { cluster } = fleet;
  const server = `bridge${index + 1}`;
  await waitFor(
    () => parkedOnSlowTool(fleet, index).length > 0,
    `a conversation of ${server} on a slow tool`,
  );
  const parkedAtSigterm = parkedOnSlowTool(fleet, index);
  const bridge = cluster.bridges[index];
  if (bridge === undefined) throw new Error(`fleet: no ${server}`);
  const sigtermAt = performance.now();
  process.kill(bridge.pid, 'SIGTERM');
  onSigterm?.();
  const exit = await bridge.exited;
  const exitedAt = performance.now();
  const stdout = bridge.output().stdout;
  await cluster.restart(index);
  await cluster.lb.waitForStates((states) => states[server] === 'UP', waitLimitMs);
  const upAt = performance.now();
  return {
    index,
    parkedAtSigterm,
    drainMs: exitedAt - sigtermAt,
    upMs: upAt - exitedAt,
    exit,
    drainedClean:
      stdout.includes('drained: every live conversation finished') &&
      !stdout.includes('drain deadline passed'),
    sigtermAt,
    upAt,
  };
};

/** The 1-based conversation plans `fleet-<first>` … of a fleet. */
export const fleetPlans = (count: number, first = 1): FleetPlan[] =>
  Array.from({ length: count }, (_, index) => fleetPlan(first + index));

/** What a SIGKILL of the busiest member found and did. */
export type KillRecord = {
  index: number;
  killedAt: number;
  /** Live conversations the member held when it died. */
  held: string[];
  /** Of those, the ones whose client was running a slow tool (a call parked on the dead process). */
  parked: string[];
  /** Of those, the ones whose client was waiting on an answer the model sends slowly. */
  answering: string[];
};

/** Live conversations the member `index` holds (its backend played their latest run). */
export const liveOn = (fleet: Fleet, index: number): string[] =>
  [...fleet.recorder.live].filter((conversation) => fleet.model.processOf(conversation) === index);

/**
 * SIGKILL (no drain) the member that holds at least `held` live conversations, once one of them is
 * parked on a slow tool and another waits on a slow answer; the member stays down.
 */
export const killBusiest = async (fleet: Fleet, held: number): Promise<KillRecord> => {
  const members = fleet.cluster.bridges.map((_, index) => index);
  const busiest = (): number | undefined =>
    members.find((index) => {
      const live = liveOn(fleet, index);
      return (
        live.length >= held &&
        live.some((conversation) => fleet.recorder.inSlowTool.has(conversation)) &&
        live.some((conversation) => fleet.recorder.inSlowAnswer.has(conversation))
      );
    });
  await waitFor(() => busiest() !== undefined, `a member holding ${held} live conversations`);
  const index = busiest() ?? -1;
  const bridge = fleet.cluster.bridges[index];
  if (bridge === undefined) throw new Error('fleet: the busiest member vanished');
  const live = liveOn(fleet, index);
  const record: KillRecord = {
    index,
    killedAt: performance.now(),
    held: live,
    parked: live.filter((conversation) => fleet.recorder.inSlowTool.has(conversation)),
    answering: live.filter((conversation) => fleet.recorder.inSlowAnswer.has(conversation)),
  };
  process.kill(bridge.pid, 'SIGKILL');
  await bridge.exited;
  return record;
};

/**
 * The killed-process run: 75 conversations of four turns launched 60 ms apart, and {@link killBusiest}
 * once a member holds `held` live ones. Resolves when every conversation has ended.
 */
export const killedFleetRun = async (
  fleet: Fleet,
  held: number,
): Promise<FleetRun & { kill: KillRecord }> => {
  const plans = Array.from({ length: 75 }, (_, index) => fleetPlan(index + 1, 4));
  const running: Array<Promise<FleetOutcome>> = [];
  const launching = (async () => {
    for (const plan of plans) {
      running.push(runFleetConversation(plan, { baseUrl: fleet.cluster.baseUrl, recorder: fleet.recorder }));
      await sleep(60);
    }
  })();
  const kill = await killBusiest(fleet, held);
  await launching;
  return { outcomes: await Promise.allSettled(running), plans, kill };
};
