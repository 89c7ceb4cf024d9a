/**
 * A process lost without a drain (the OOM killer): three `cursor-bridge serve` processes behind the real
 * HAProxy (deploy/haproxy/haproxy.cfg), conversations of the three client shapes until one process holds
 * 20 live ones (some parked on a slow tool, some mid-answer), then SIGKILL to that process. Its
 * conversations must continue on the others by replay of the transcript their clients send, with every
 * tool result run once and none lost, and the only errors their clients see must be ones they retry by
 * themselves.
 */

import { afterEach, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { ensureBuilt } from '../helpers/ensure-built.js';
import { expectEveryConversationRight } from '../helpers/e2e/fleet-outcomes.js';
import { stepResult } from '../helpers/e2e/fleet-model.js';
import { killedFleetRun, startFleet, type Fleet } from '../helpers/e2e/fleet-restart.js';
import { ensureHaproxy } from '../helpers/e2e/haproxy-lb.js';

let fleet: Fleet | undefined;

afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
});

describe('a bridge killed behind HAProxy', { timeout: 420_000 }, () => {
  beforeAll(async () => {
    await Promise.all([ensureHaproxy(), ensureBuilt()]);
  }, 600_000);

  it('its 20 conversations continue elsewhere by replay: each tool result run once and never lost, only retried errors', async () => {
    const started = await startFleet();
    fleet = started;
    onTestFailed(() => console.error(started.cluster.describe()));
    // Long conversations (four turns), launched until one process holds 20 of them live.
    const { outcomes, plans, kill } = await killedFleetRun(started, 20);

    expectEveryConversationRight({ outcomes, plans });

    const { runs } = started.model;
    expect(kill.held.length).toBeGreaterThanOrEqual(20);
    expect(kill.parked.length).toBeGreaterThan(0);
    expect(kill.answering.length).toBeGreaterThan(0);
    for (const conversation of kill.held) {
      const own = runs.filter((run) => run.conversation === conversation);
      const before = own.filter((run) => run.process === kill.index);
      const after = own.filter((run) => run.process !== kill.index);
      // It continued on another process, on a fresh agent, whose first run was a replay carrying the
      // history (an earlier turn's answer, or this turn's results so far).
      expect(after.length, conversation).toBeGreaterThan(0);
      expect(new Set(after.map((run) => run.agentId)).has(before[0]?.agentId ?? ''), conversation).toBe(
        false,
      );
      const first = after[0];
      expect(
        first !== undefined && (first.replay || first.carried.length > 0 || first.turn === 1),
        conversation,
      ).toBe(true);
      // It never went back to the dead process.
      expect(
        own
          .slice(own.findIndex((run) => run.process !== kill.index))
          .every((run) => run.process !== kill.index),
        conversation,
      ).toBe(true);
    }
    // A call parked on the dead process: the client posted its result once; it reached the fresh agent
    // as transcript text, so the model never asked for it again.
    for (const conversation of kill.parked) {
      const replayed = runs.find(
        (run) => run.conversation === conversation && run.process !== kill.index && run.carried.length > 0,
      );
      expect(replayed?.carried, conversation).toContain(stepResult(conversation, replayed?.turn ?? 0, 2));
    }

    // The errors the clients saw: a stream cut mid-answer (retried: the same request again), and
    // HAProxy's answers for a request it could not place, which the SDKs retry.
    const retries = started.recorder.retries;
    const streamCuts = retries.filter((retry) => retry.cause.startsWith('stream'));
    for (const retry of streamCuts) expect(kill.held, retry.cause).toContain(retry.conversation);
    const other = retries.filter((retry) => !retry.cause.startsWith('stream'));
    expect(
      other.filter((retry) => retry.cause !== 'connection' && !/^http 50[234]$/.test(retry.cause)),
    ).toEqual([]);
    // Replays of conversations the dead process did not hold are the session cap's evictions on the
    // two processes left (their load grew by half), not the kill.
    const replayed = new Set(
      runs.filter((run) => run.replay || run.carried.length > 0).map((run) => run.conversation),
    );
    console.info(
      `killed bridge${kill.index + 1} holding ${kill.held.length} live conversations (${kill.parked.length} parked on a slow tool, ${kill.answering.length} waiting on a slow answer); ` +
        `${kill.held.filter((conversation) => replayed.has(conversation)).length} of them replayed elsewhere, ${[...replayed].filter((conversation) => !kill.held.includes(conversation)).length} others replayed after an eviction; retries: ${JSON.stringify(
          retries.map((retry) => `${retry.shape} ${retry.cause}`),
        )}`,
    );
  });
});
