/**
 * Several `cursor-bridge serve` processes (the real CLI and `@cursor/sdk`, each against its own fake
 * Cursor backend, so a backend's runs say which process served them) behind the real HAProxy running
 * `deploy/haproxy/haproxy.cfg`, all on loopback.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Scenario } from '../../fakes/cursor-backend/index.js';
import type { BackendRun, E2eBridge, RecordedExchange } from './e2e-bridge.js';
import type { StartBridge } from './e2e-harness.js';
import { startHaproxy, type HaproxyLb } from './haproxy-lb.js';
import type { ModelScenario, ShellTool } from './model-scenario.js';
import { startRecordingProxy } from './recording-proxy.js';
import { startServeBridge, type ServeBridge } from './serve-bridge.js';

export type BridgeCluster = {
  /** The members, `bridges[i]` being HAProxy's `bridge<i+1>`; {@link restart} replaces one in place. */
  bridges: ServeBridge[];
  /**
   * Start member `index` again on its port, with its backend scenario and environment, once its process
   * has exited (SIGTERM drained it, or SIGKILL ended it); the old member's output stays in
   * {@link describe}. Resolves with the new member once it listens.
   */
  restart(index: number): Promise<ServeBridge>;
  lb: HaproxyLb;
  /** HAProxy's frontend, `http://127.0.0.1:<port>`. */
  baseUrl: string;
  /** Every process's output and HAProxy's, for a failure report. */
  describe(): string;
  close(): Promise<void>;
};

export type StartBridgeClusterOptions = {
  count?: number;
  scenario: ModelScenario;
  shell: ShellTool;
  /** Per process: the backend's scenario instead of `scenario`. */
  backendScenario?: (index: number) => Scenario;
  env?: Record<string, string>;
};

const closeAll = async (parts: ReadonlyArray<{ close(): Promise<void> }>): Promise<void> => {
  const results = await Promise.allSettled(parts.map((part) => part.close()));
  const failure = results.find((result) => result.status === 'rejected');
  if (failure !== undefined) throw failure.reason;
};

/** Start `count` (default 3) bridges and HAProxy in front of them; every one is stopped by PID on close. */
export const startBridgeCluster = async (options: StartBridgeClusterOptions): Promise<BridgeCluster> => {
  const count = options.count ?? 3;
  const startMember = (index: number, port?: number): Promise<ServeBridge> =>
    startServeBridge({
      scenario: options.scenario,
      shell: options.shell,
      ...(options.backendScenario === undefined ? {} : { backendScenario: options.backendScenario(index) }),
      ...(options.env === undefined ? {} : { env: options.env }),
      ...(port === undefined ? {} : { port }),
    });
  const started = await Promise.allSettled(Array.from({ length: count }, (_, index) => startMember(index)));
  const bridges = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failed = started.find((result) => result.status === 'rejected');
  if (failed !== undefined) {
    await closeAll(bridges);
    throw failed.reason;
  }
  let lb: HaproxyLb;
  try {
    lb = await startHaproxy(bridges.map((bridge) => bridge.port));
  } catch (error) {
    await closeAll(bridges);
    throw error;
  }
  /** Members replaced by a restart, with their HAProxy server name: closed (their HOME removed) at the end. */
  const retired: Array<{ name: string; bridge: ServeBridge }> = [];
  return {
    bridges,
    restart: async (index) => {
      const old = bridges[index];
      if (old === undefined) throw new Error(`the cluster has no member ${index}`);
      await old.exited;
      retired.push({ name: `bridge${index + 1} (pid ${old.pid}, before its restart)`, bridge: old });
      const replacement = await startMember(index, old.port);
      bridges[index] = replacement;
      return replacement;
    },
    lb,
    baseUrl: `http://127.0.0.1:${lb.port}`,
    describe: () =>
      [
        `===== haproxy (pid ${lb.pid}, port ${lb.port}) =====`,
        lb.output(),
        ...retired.map(({ name, bridge }) => `===== ${name} =====\n${bridge.describe()}`),
        ...bridges.map((bridge, index) => `===== bridge${index + 1} =====\n${bridge.describe()}`),
      ].join('\n'),
    close: async () => {
      try {
        await lb.close();
      } finally {
        await closeAll([...bridges, ...retired.map(({ bridge }) => bridge)]);
      }
    },
  };
};

/** Which bridge (1-based, as HAProxy's `bridgeN`) played each main run, and the runs themselves. */
export type ClusterE2eBridge = E2eBridge & { cluster: BridgeCluster };

/** What a cluster's harness view plays and reports instead of the harness's declarative model. */
export type HaproxyE2eOptions = {
  /** Per process: the backend's scenario (a model shared by the processes, for instance). */
  backendScenario?: (index: number) => Scenario;
  /** The runs the shared model played, instead of each process's own. */
  runs?: () => BackendRun[];
  /** More lines for a failure report, before the processes' own. */
  describe?: () => string[];
};

/**
 * A {@link StartBridge} for `startE2e`: three bridges behind HAProxy, the client reaching HAProxy
 * through a recording proxy on a unix socket (as it reaches a single bridge). The runs are every
 * process's runs (`cluster.bridges[i].mainRuns()` tells them apart), or `options.runs`. Metrics are summed
 * over the processes that still answer.
 */
export const haproxyE2eBridge =
  (options: HaproxyE2eOptions = {}): StartBridge =>
  async ({ scenario, shell }) => {
    const cluster = await startBridgeCluster({
      scenario,
      shell,
      ...(options.backendScenario === undefined ? {} : { backendScenario: options.backendScenario }),
    });
    const root = await mkdtemp(join(tmpdir(), 'cb-e2e-lb-'));
    const socketPath = join(root, 'lb.sock');
    let proxy: Awaited<ReturnType<typeof startRecordingProxy>>;
    try {
      proxy = await startRecordingProxy({ socketPath, targetPort: cluster.lb.port });
    } catch (error) {
      await cluster.close();
      throw error;
    }
    const { exchanges } = proxy;
    const turnExchanges = (): RecordedExchange[] =>
      exchanges.filter((exchange) => exchange.protocol !== undefined);
    const bridge: ClusterE2eBridge = {
      cluster,
      socketPath,
      exchanges,
      turnExchanges,
      mainExchanges: () =>
        turnExchanges().filter(
          (exchange) =>
            exchange.parsed?.ok === true &&
            exchange.parsed.turn.tools.some((tool) => tool.name === shell.name),
        ),
      backendRequests: () => cluster.bridges.flatMap((member) => member.backendRequests()),
      runs: () => options.runs?.() ?? cluster.bridges.flatMap((member) => member.runs()),
      mainRuns: () =>
        options.runs?.().filter((run) => run.main) ?? cluster.bridges.flatMap((member) => member.mainRuns()),
      metrics: async () => {
        const all = await Promise.all(
          cluster.bridges.map((member) => member.metrics().catch(() => ({}) as Record<string, unknown>)),
        );
        const sum: Record<string, unknown> = {};
        for (const metrics of all)
          for (const [key, value] of Object.entries(metrics))
            if (typeof value === 'number') sum[key] = (typeof sum[key] === 'number' ? sum[key] : 0) + value;
        return sum;
      },
      readWorkspaceFile: async (run, path) => {
        const owner = cluster.bridges.find((member) =>
          member.runs().some((candidate) => candidate.workspaceDir === run.workspaceDir),
        );
        if (owner === undefined) throw new Error(`e2e: no bridge of the cluster ran in ${run.workspaceDir}`);
        return owner.readWorkspaceFile(run, path);
      },
      describe: () => [...(options.describe?.() ?? []), cluster.describe()].join('\n'),
      close: async () => {
        try {
          await proxy.close();
          await cluster.close();
        } finally {
          await rm(root, { recursive: true, force: true });
        }
      },
    };
    return bridge;
  };

/** {@link haproxyE2eBridge} with every process playing the harness's model. */
export const startHaproxyE2eBridge: StartBridge = haproxyE2eBridge();
