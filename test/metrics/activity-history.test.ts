/**
 * The last hour of activity by minute (the console's charts), and where it is written: BridgeMetrics'
 * `turnEnded` (which also counts failures by kind in `cursor_bridge_turn_errors_total`) and
 * `runAccounted`, as the engine calls them. Every clock here is an explicit `nowMs`.
 */

import { describe, expect, it } from 'vitest';
import { ActivityHistory, type ActivityBucket } from '../../src/metrics/activity-history.js';
import { BridgeMetrics } from '../../src/metrics/bridge-metrics.js';
import { collect, createTestEngine, never, request, user } from '../helpers/engine-helpers.js';
import { parsePrometheusText, sumSamples } from '../helpers/prometheus-text.js';

const minute = 60_000;
/** 2026-01-01T10:00:00.000Z, a minute's start. */
const t0 = Date.UTC(2026, 0, 1, 10, 0, 0);

const usage = (inputTokens: number, outputTokens: number) => ({
  inputTokens,
  outputTokens,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
});

const totalTurns = (buckets: readonly ActivityBucket[]): number =>
  buckets.reduce(
    (sum, bucket) => sum + Object.values(bucket.turns).reduce((count, value) => count + value, 0),
    0,
  );

const bucketAt = (buckets: readonly ActivityBucket[], start: number): ActivityBucket | undefined =>
  buckets.find((bucket) => bucket.start === start);

describe('ActivityHistory', () => {
  it('always serves sixty one-minute buckets, oldest first, the last one the current minute', () => {
    const history = new ActivityHistory();
    for (const now of [t0, t0 + 1, t0 + 59_999, t0 + 37 * minute + 12_345]) {
      const series = history.series(now);
      const current = Math.floor(now / minute) * minute;
      expect(series.bucketMs).toBe(minute);
      expect(series.buckets).toHaveLength(60);
      expect(series.buckets.at(-1)?.start).toBe(current);
      expect(series.buckets[0]?.start).toBe(current - 59 * minute);
      series.buckets.forEach((bucket, index) => expect(bucket.start).toBe(current - (59 - index) * minute));
      expect(series.buckets.at(-1)).toEqual({
        start: current,
        turns: { finished: 0, 'tool-use': 0, failed: 0, cancelled: 0 },
        durationMsSum: 0,
        durationMsMax: 0,
        inputTokens: 0,
        outputTokens: 0,
        errors: {},
      });
    }
  });

  it('puts each turn in the bucket of its minute, with outcome, duration sum and max, and errors by kind', () => {
    const history = new ActivityHistory();
    history.turnEnded('finished', 1_200, undefined, t0);
    history.turnEnded('tool-use', 300, undefined, t0 + 59_999);
    history.turnEnded('failed', 4_000, 'rate-limit', t0 + 10_000);
    history.turnEnded('failed', 50, 'rate-limit', t0 + 20_000);
    history.turnEnded('failed', 70, 'api', t0 + 30_000);
    history.turnEnded('cancelled', 10, undefined, t0 + minute);
    const buckets = history.series(t0 + minute + 5).buckets;
    expect(bucketAt(buckets, t0)).toEqual({
      start: t0,
      turns: { finished: 1, 'tool-use': 1, failed: 3, cancelled: 0 },
      durationMsSum: 1_200 + 300 + 4_000 + 50 + 70,
      durationMsMax: 4_000,
      inputTokens: 0,
      outputTokens: 0,
      errors: { 'rate-limit': 2, api: 1 },
    });
    expect(bucketAt(buckets, t0 + minute)).toMatchObject({
      turns: { finished: 0, 'tool-use': 0, failed: 0, cancelled: 1 },
      durationMsSum: 10,
      durationMsMax: 10,
      errors: {},
    });
    expect(totalTurns(buckets)).toBe(6);
  });

  it('adds tokens to the bucket of their minute', () => {
    const history = new ActivityHistory();
    history.tokens(100, 10, t0 + 1_000);
    history.tokens(50, 5, t0 + 2_000);
    history.tokens(7, 3, t0 + 2 * minute);
    const buckets = history.series(t0 + 2 * minute).buckets;
    expect(bucketAt(buckets, t0)).toMatchObject({ inputTokens: 150, outputTokens: 15 });
    expect(bucketAt(buckets, t0 + minute)).toMatchObject({ inputTokens: 0, outputTokens: 0 });
    expect(bucketAt(buckets, t0 + 2 * minute)).toMatchObject({ inputTokens: 7, outputTokens: 3 });
    expect(totalTurns(buckets)).toBe(0);
  });

  it('shows a minute for an hour, then no more', () => {
    const history = new ActivityHistory();
    history.turnEnded('finished', 5, undefined, t0 + 30_000);
    history.tokens(9, 1, t0 + 30_000);
    const stillThere = history.series(t0 + 59 * minute + 59_999).buckets;
    expect(stillThere[0]?.start).toBe(t0);
    expect(stillThere[0]).toMatchObject({ turns: { finished: 1 }, inputTokens: 9 });
    const gone = history.series(t0 + 60 * minute).buckets;
    expect(bucketAt(gone, t0)).toBeUndefined();
    expect(totalTurns(gone)).toBe(0);
    expect(gone.reduce((sum, bucket) => sum + bucket.inputTokens, 0)).toBe(0);
  });

  it('drops the data of a minute older than the hour once newer minutes are written', () => {
    const history = new ActivityHistory();
    history.turnEnded('finished', 5, undefined, t0);
    history.turnEnded('finished', 5, undefined, t0 + 61 * minute);
    // A clock stepped back to t0's minute: its bucket was dropped, so it starts again from this turn.
    history.turnEnded('failed', 5, 'api', t0 + 1_000);
    expect(bucketAt(history.series(t0).buckets, t0)).toMatchObject({
      turns: { finished: 0, failed: 1 },
      errors: { api: 1 },
    });
  });

  it('keeps at most an hour of minutes while the clock runs on', () => {
    const history = new ActivityHistory();
    for (let index = 0; index < 150; index += 1)
      history.turnEnded('finished', index, undefined, t0 + index * minute);
    const buckets = history.series(t0 + 149 * minute).buckets;
    expect(buckets.map((bucket) => bucket.turns.finished)).toEqual(Array.from({ length: 60 }, () => 1));
    expect(buckets[0]?.durationMsMax).toBe(90);
    // Stepped back to a minute still kept: it lands there.
    history.turnEnded('tool-use', 1, undefined, t0 + 100 * minute + 5);
    expect(bucketAt(history.series(t0 + 149 * minute).buckets, t0 + 100 * minute)?.turns).toMatchObject({
      finished: 1,
      'tool-use': 1,
    });
    // Stepped back to a minute long gone: nothing older than the hour reappears in the series.
    history.turnEnded('tool-use', 1, undefined, t0 + 5);
    expect(totalTurns(history.series(t0 + 149 * minute).buckets)).toBe(61);
  });

  it('serves copies: changing a served bucket changes nothing kept', () => {
    const history = new ActivityHistory();
    history.turnEnded('failed', 5, 'overloaded', t0);
    const served = history.series(t0).buckets.at(-1);
    if (served === undefined) throw new Error('no bucket');
    served.turns.failed = 99;
    served.errors['overloaded'] = 99;
    served.inputTokens = 99;
    expect(history.series(t0).buckets.at(-1)).toMatchObject({
      turns: { failed: 1 },
      errors: { overloaded: 1 },
      inputTokens: 0,
    });
  });
});

describe('BridgeMetrics: turn errors by kind and the hour of activity', () => {
  it('counts failed turns by protocol and kind in cursor_bridge_turn_errors_total', async () => {
    const metrics = new BridgeMetrics();
    metrics.turnEnded('anthropic', 'failed', t0, t0 + 100, 'rate-limit');
    metrics.turnEnded('anthropic', 'failed', t0, t0 + 100, 'rate-limit');
    metrics.turnEnded('openai-chat', 'failed', t0, t0 + 100, 'overloaded');
    metrics.turnEnded('anthropic', 'finished', t0, t0 + 100);
    const text = await metrics.render();
    expect(text).toContain('# TYPE cursor_bridge_turn_errors_total counter');
    const samples = parsePrometheusText(text);
    expect(
      samples
        .filter((sample) => sample.name === 'cursor_bridge_turn_errors_total')
        .map(({ labels, value }) => ({
          labels,
          value,
        })),
    ).toEqual(
      expect.arrayContaining([
        { labels: { protocol: 'anthropic', kind: 'rate-limit' }, value: 2 },
        { labels: { protocol: 'openai-chat', kind: 'overloaded' }, value: 1 },
      ]),
    );
    expect(sumSamples(samples, 'cursor_bridge_turn_errors_total')).toBe(3);
    expect(sumSamples(samples, 'cursor_bridge_turns_total', { outcome: 'failed' })).toBe(3);
    expect(sumSamples(samples, 'cursor_bridge_turns_total', { outcome: 'finished' })).toBe(1);
  });

  it('writes each ended turn and accounted run into history()', () => {
    const metrics = new BridgeMetrics();
    metrics.turnEnded('anthropic', 'finished', t0, t0 + 2_500);
    metrics.turnEnded('openai-responses', 'failed', t0 + 1_000, t0 + 1_400, 'api');
    // A start after the end (a clock step) counts as no time, not a negative one.
    metrics.turnEnded('anthropic', 'tool-use', t0 + 9_000, t0 + 3_000);
    metrics.runAccounted('composer-2', usage(120, 30), { rawCents: 1, chargedCents: 1 }, t0 + 4_000);
    metrics.runAccounted('composer-2', { ...usage(5, 1), reasoningTokens: 1 }, undefined, t0 + minute);
    const buckets = metrics.history(t0 + minute).buckets;
    expect(buckets).toHaveLength(60);
    expect(bucketAt(buckets, t0)).toEqual({
      start: t0,
      turns: { finished: 1, 'tool-use': 1, failed: 1, cancelled: 0 },
      durationMsSum: 2_900,
      durationMsMax: 2_500,
      inputTokens: 120,
      outputTokens: 30,
      errors: { api: 1 },
    });
    expect(bucketAt(buckets, t0 + minute)).toMatchObject({ inputTokens: 5, outputTokens: 1 });
  });

  it('gets them from the engine: a failed turn by its kind, a finished run by its tokens', async () => {
    const metrics = new BridgeMetrics();
    const { engine } = createTestEngine(
      [
        [
          { type: 'text-delta', text: 'ok' },
          { type: 'usage', usage: usage(40, 4) },
          { type: 'end', status: 'finished' },
        ],
        [{ type: 'error', error: { kind: 'rate-limit', message: 'slow down', retryable: true } }],
      ],
      { metrics },
    );
    try {
      const finished = await engine.handleTurn(request([user('first')]), never);
      await collect(finished);
      await finished.account;
      const failed = await engine.handleTurn(
        request([user('second')], {
          identity: { nativeSessionId: { value: 'other-session', source: 'x-session-id' } },
        }),
        never,
      );
      expect(await collect(failed)).toMatchObject([{ type: 'error', error: { kind: 'rate-limit' } }]);
      // The turn is recorded as its producer ends, before the response's account settles.
      await failed.account;
      const samples = parsePrometheusText(await metrics.render());
      expect(
        sumSamples(samples, 'cursor_bridge_turn_errors_total', { protocol: 'anthropic', kind: 'rate-limit' }),
      ).toBe(1);
      const buckets = metrics.history().buckets;
      expect(buckets.reduce((sum, bucket) => sum + bucket.turns.finished, 0)).toBe(1);
      expect(buckets.reduce((sum, bucket) => sum + bucket.turns.failed, 0)).toBe(1);
      expect(buckets.reduce((sum, bucket) => sum + (bucket.errors['rate-limit'] ?? 0), 0)).toBe(1);
      expect(buckets.reduce((sum, bucket) => sum + bucket.inputTokens, 0)).toBe(40);
      expect(buckets.reduce((sum, bucket) => sum + bucket.outputTokens, 0)).toBe(4);
    } finally {
      await engine.close();
    }
  });
});
