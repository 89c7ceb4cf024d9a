/**
 * One acceptance scenario: `cursor-bridge serve` with the real `@cursor/sdk` against the fake Cursor
 * backend playing the scenario's model, a fresh client sandbox (HOME and project) configured for it,
 * and runs of the real client. Call {@link startE2e} inside a test: when the test fails it prints every
 * client run (command, exit, stdout, stderr), the bridge's exchanges with the exact frames it sent, the
 * backend's runs and request log, and the bridge's own log; when it finishes everything is torn down.
 */

import { onTestFailed, onTestFinished } from 'vitest';
import type { ClientDriver, TurnOptions } from './client-driver.js';
import { ensureBuilt } from '../ensure-built.js';
import { ensureClient, type ClientName } from './install-clients.js';
import type { ModelScenario } from './model-scenario.js';
import { openClientEndpoint, type ClientEndpoint, type ExtraForward } from './network-isolation.js';
import { createClientSandbox, runClient, type ClientRun, type ClientSandbox } from './run-client.js';
import type { E2eBridge } from './e2e-bridge.js';
import type { ShellTool } from './model-scenario.js';
import { startServeBridge } from './serve-bridge.js';

/** Per-run timeout. OpenCode needs 6–10 s per run on 2 cores; this leaves room for a loaded machine. */
export const clientTimeoutMs = 60_000;

/** Per-test timeout for a scenario of up to two client runs. */
export const scenarioTimeoutMs = 2 * clientTimeoutMs + 10_000;

/** For `beforeAll`: installing a client from npm takes ~15 s, more on a slow registry. */
export const installTimeoutMs = 10 * 60_000;

/**
 * For `beforeAll` (with {@link installTimeoutMs}): the pinned client installed, and `dist/` compiled
 * from the current sources for `bin/cursor-bridge.js`.
 */
export const prepareE2e = async (client: ClientName): Promise<void> => {
  await Promise.all([ensureClient(client), ensureBuilt()]);
};

export type E2eScenario = {
  bridge: E2eBridge;
  sandbox: ClientSandbox;
  endpoint: ClientEndpoint;
  runs: ClientRun[];
  /** Run one client turn with `prompt`. */
  turn(prompt: string, options?: TurnOptions): Promise<ClientRun>;
  report(): string;
};

const describeRun = (run: ClientRun, index: number): string =>
  [
    `--- client run ${index + 1}: exit=${String(run.exitCode)} signal=${String(run.signal)} timedOut=${String(run.timedOut)} ${run.durationMs} ms ---`,
    `command: ${run.command.map((part) => JSON.stringify(part)).join(' ')}`,
    `stdout:\n${run.stdout}`,
    `stderr:\n${run.stderr.length > 20_000 ? `${run.stderr.slice(0, 20_000)}…` : run.stderr}`,
  ].join('\n');

/** Starts a bridge whose model plays `scenario`. The default is `cursor-bridge serve` ({@link startServeBridge}). */
export type StartBridge = (options: { scenario: ModelScenario; shell: ShellTool }) => Promise<E2eBridge>;

/** Set up a scenario for `driver`'s client; must be called inside a running test. */
export const startE2e = async (
  driver: ClientDriver,
  scenario: ModelScenario,
  options: { startBridge?: StartBridge; forwards?: readonly ExtraForward[] } = {},
): Promise<E2eScenario> => {
  const client = await ensureClient(driver.name);
  const bridge = await (options.startBridge ?? startServeBridge)({ scenario, shell: driver.shell });
  const sandbox = await createClientSandbox(driver.name);
  const endpoint = await openClientEndpoint(bridge.socketPath, options.forwards);
  const runs: ClientRun[] = [];

  const report = (): string =>
    [
      `===== e2e ${driver.name} (network: ${endpoint.isolation}, project ${sandbox.project}) =====`,
      ...runs.map(describeRun),
      bridge.describe(),
    ].join('\n');

  onTestFailed(() => {
    console.error(report());
  });
  onTestFinished(async () => {
    // E2E_REPORT=1 prints the report of passing scenarios too (to read what a client really sent).
    if (process.env['E2E_REPORT'] === '1') console.log(report());
    try {
      await endpoint.close();
      await bridge.close();
    } finally {
      await sandbox.remove();
    }
  });

  await driver.configure(sandbox, endpoint);
  return {
    bridge,
    sandbox,
    endpoint,
    runs,
    report,
    turn: async (prompt, options = {}) => {
      const invocation = driver.invocation({ sandbox, endpoint }, prompt, options);
      const run = await runClient({
        binaryPath: client.binaryPath,
        args: invocation.args,
        env: invocation.env,
        ...(invocation.stdin === undefined ? {} : { stdin: invocation.stdin }),
        sandbox,
        endpoint,
        timeoutMs: driver.runTimeoutMs ?? clientTimeoutMs,
      });
      runs.push(run);
      return run;
    },
  };
};
