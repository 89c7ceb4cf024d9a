/**
 * Acceptance: the real Claude Code CLI (pinned, offline in its own network namespace) against three
 * `cursor-bridge serve` processes behind the real HAProxy (`deploy/haproxy/haproxy.cfg`). A Bash round trip
 * and a second turn (`--continue`) must reach the same process and the same Cursor agent, routed by Claude
 * Code's own `x-claude-code-session-id`.
 */

import { beforeAll, describe, expect, it } from 'vitest';
import { claudeCodeDriver, claudeCodeResult } from '../helpers/e2e/claude-code-driver.js';
import { quoteToolResults } from '../helpers/e2e/model-scenario.js';
import { installTimeoutMs, prepareE2e, scenarioTimeoutMs, startE2e } from '../helpers/e2e/e2e-harness.js';
import { startHaproxyE2eBridge, type ClusterE2eBridge } from '../helpers/e2e/haproxy-cluster.js';
import { ensureHaproxy } from '../helpers/e2e/haproxy-lb.js';
import { expectSlimSecondTurn, expectToolResults } from '../helpers/e2e/scenario-assertions.js';

describe(
  'Claude Code through HAProxy in front of three bridges',
  { timeout: scenarioTimeoutMs + 30_000 },
  () => {
    beforeAll(async () => {
      await Promise.all([prepareE2e('claude-code'), ensureHaproxy()]);
    }, installTimeoutMs);

    it('runs a Bash round trip and a second turn (--continue) on one process and one agent', async () => {
      const e2e = await startE2e(
        claudeCodeDriver,
        {
          turns: [
            {
              steps: [
                { text: 'Running it marker-alpha.', toolCalls: [{ shell: 'echo lb-$((40+2))-ok' }] },
                { text: (context) => `The command printed: ${quoteToolResults(context)}` },
              ],
            },
            { steps: [{ text: 'Second answer.' }] },
          ],
        },
        { startBridge: startHaproxyE2eBridge },
      );
      const first = await e2e.turn('Run the check command marker-alpha.');
      expect(first.exitCode).toBe(0);
      expect(claudeCodeResult(first.stdout)?.result).toContain('The command printed: lb-42-ok');
      const second = await e2e.turn('Second question marker-beta.', { resume: true });
      expect(second.exitCode).toBe(0);
      expect(claudeCodeResult(second.stdout)?.result).toBe('Second answer.');
      expect(claudeCodeResult(second.stdout)?.session_id).toBe(claudeCodeResult(first.stdout)?.session_id);

      const { cluster } = e2e.bridge as ClusterE2eBridge;
      const perProcess = cluster.bridges.map((bridge) => bridge.mainRuns().length);
      // Both turns' runs on one process, none on the other two.
      expect(perProcess.filter((count) => count > 0)).toEqual([2]);
      // The result reached the parked run, and the second turn was slim on the same agent.
      expectToolResults(e2e.bridge, [{ text: 'lb-42-ok', isError: false }]);
      await expectSlimSecondTurn(e2e.bridge, { firstMarker: 'marker-alpha', secondMarker: 'marker-beta' });
      // Three requests (call, result, second turn), all under Claude Code's one session id.
      const sessions = e2e.bridge
        .mainExchanges()
        .map((exchange) => exchange.headers['x-claude-code-session-id']);
      expect(sessions).toHaveLength(3);
      expect(new Set(sessions).size).toBe(1);
      expect(sessions[0]).toBe(claudeCodeResult(first.stdout)?.session_id);
    });
  },
);
