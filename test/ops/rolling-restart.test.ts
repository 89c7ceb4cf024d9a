/**
 * A rolling restart while people work: three `cursor-bridge serve` processes behind the real HAProxy
 * (deploy/haproxy/haproxy.cfg), 50 conversations of the three client shapes (Claude Code, Codex,
 * OpenCode), each with six tool round trips over three user turns, launched in three waves; after each
 * wave one process is drained (SIGTERM while one of its conversations is parked on a slow tool; the next
 * wave starts arriving while it drains), started again on its port, and back UP before the next. Nothing a client sent may be lost or run twice, and no
 * conversation may end in an error its client would not retry by itself.
 */

import { afterEach, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { ensureBuilt } from '../helpers/ensure-built.js';
import { expectEveryConversationRight } from '../helpers/e2e/fleet-outcomes.js';
import { fleetPlans, rollingRestartWaves, startFleet, type Fleet } from '../helpers/e2e/fleet-restart.js';
import { ensureHaproxy } from '../helpers/e2e/haproxy-lb.js';

let fleet: Fleet | undefined;

afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
});

describe('a rolling restart of three bridges behind HAProxy', { timeout: 420_000 }, () => {
  beforeAll(async () => {
    await Promise.all([ensureHaproxy(), ensureBuilt()]);
  }, 600_000);

  it('restarts each process in turn under 50 live conversations: no tool result lost, none run twice, every answer right', async () => {
    const started = await startFleet();
    fleet = started;
    onTestFailed(() => console.error(started.cluster.describe()));
    const { outcomes, plans, restarts } = await rollingRestartWaves(started, fleetPlans(50));

    expectEveryConversationRight({ outcomes, plans });

    // Each process was drained while one of its conversations was parked on a slow tool, finished every
    // live conversation, exited 0, and came back.
    expect(restarts.map((restart) => restart.index)).toEqual([0, 1, 2]);
    for (const restart of restarts) {
      expect(restart.parkedAtSigterm.length, `bridge${restart.index + 1}`).toBeGreaterThan(0);
      expect(restart.exit).toEqual({ code: 0, signal: null });
      expect(restart.drainedClean, `bridge${restart.index + 1} drained by finishing its conversations`).toBe(
        true,
      );
    }

    // Every tool result reached a model: the run parked for it, or (for a conversation whose process had
    // gone when its next request came) a fresh agent's replay that carried it as transcript text.
    const { runs } = started.model;
    for (const outcome of outcomes) {
      if (outcome.status !== 'fulfilled') continue;
      const { plan } = outcome.value;
      for (let turn = 1; turn <= plan.turns; turn += 1) {
        const answered = runs.filter(
          (run) => run.conversation === plan.conversation && run.turn === turn && run.outcome === 'answered',
        );
        expect(answered, `${plan.conversation} turn ${turn}`).toHaveLength(1);
      }
    }

    // What the clients retried, and why: only what their own clients retry by themselves.
    const causes = started.recorder.retries.map((retry) => retry.cause.replace(/:.*/, ''));
    expect(causes.filter((cause) => cause !== 'http 503' && cause !== 'connection')).toEqual([]);
    const moved = new Set(
      runs.filter((run) => run.replay || run.carried.length > 0).map((run) => run.conversation),
    );
    console.info(
      `rolling restart: ${outcomes.length} conversations, ${started.recorder.requests.length} requests, ` +
        `${moved.size} moved by replay, retries: ${JSON.stringify(countBy(causes))}; ` +
        restarts
          .map(
            (restart) =>
              `bridge${restart.index + 1}: ${restart.parkedAtSigterm.length} parked at SIGTERM, drained in ${Math.round(restart.drainMs)} ms, up ${Math.round(restart.upMs)} ms later`,
          )
          .join('; '),
    );
  });
});

const countBy = (values: readonly string[]): Record<string, number> => {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
};
