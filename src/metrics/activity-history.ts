/**
 * The last hour of the process's activity in one-minute buckets, for the console's charts: turns by
 * outcome, their duration, tokens, and failures by error kind. Written where the Prometheus counters are
 * (a few additions per turn, no timer): it costs nothing while nobody looks, and the charts have the hour
 * behind them when somebody opens the page.
 */

/** How a client response of a turn ended. `cancelled`: the client left (or the run was cancelled) first. */
export type TurnOutcome = 'finished' | 'tool-use' | 'failed' | 'cancelled';

/** One minute of activity. */
export type ActivityBucket = {
  /** The minute's start (ms since the epoch). */
  start: number;
  turns: Record<TurnOutcome, number>;
  /** Sum and maximum of the turns' durations, in ms (mean = sum / turns of every outcome). */
  durationMsSum: number;
  durationMsMax: number;
  inputTokens: number;
  outputTokens: number;
  /** Failed turns by error kind (`rate-limit`, `overloaded`, `api`, …). */
  errors: Record<string, number>;
};

/** The history as served: buckets oldest first, minutes with no activity included as zeros. */
export type ActivitySeries = { bucketMs: number; buckets: ActivityBucket[] };

const minuteMs = 60_000;
const keptBuckets = 60;

const emptyBucket = (start: number): ActivityBucket => ({
  start,
  turns: { finished: 0, 'tool-use': 0, failed: 0, cancelled: 0 },
  durationMsSum: 0,
  durationMsMax: 0,
  inputTokens: 0,
  outputTokens: 0,
  errors: {},
});

export class ActivityHistory {
  /** Buckets with activity, oldest first; at most {@link keptBuckets}, none older than the hour. */
  readonly #buckets: ActivityBucket[] = [];

  turnEnded(outcome: TurnOutcome, durationMs: number, errorKind: string | undefined, nowMs: number): void {
    const bucket = this.#bucketAt(nowMs);
    bucket.turns[outcome] += 1;
    bucket.durationMsSum += durationMs;
    bucket.durationMsMax = Math.max(bucket.durationMsMax, durationMs);
    if (errorKind !== undefined) bucket.errors[errorKind] = (bucket.errors[errorKind] ?? 0) + 1;
  }

  tokens(inputTokens: number, outputTokens: number, nowMs: number): void {
    const bucket = this.#bucketAt(nowMs);
    bucket.inputTokens += inputTokens;
    bucket.outputTokens += outputTokens;
  }

  /** The hour up to `nowMs`: sixty buckets, the last one the current minute. */
  series(nowMs: number): ActivitySeries {
    const last = Math.floor(nowMs / minuteMs) * minuteMs;
    const byStart = new Map(this.#buckets.map((bucket) => [bucket.start, bucket]));
    const buckets: ActivityBucket[] = [];
    for (let start = last - (keptBuckets - 1) * minuteMs; start <= last; start += minuteMs) {
      buckets.push(structuredClone(byStart.get(start) ?? emptyBucket(start)));
    }
    return { bucketMs: minuteMs, buckets };
  }

  #bucketAt(nowMs: number): ActivityBucket {
    const start = Math.floor(nowMs / minuteMs) * minuteMs;
    const newest = this.#buckets.at(-1);
    if (newest !== undefined && newest.start === start) return newest;
    // A clock that stepped back lands in the bucket of its own minute, if it is still kept.
    const kept = this.#buckets.find((bucket) => bucket.start === start);
    if (kept !== undefined) return kept;
    const bucket = emptyBucket(start);
    this.#buckets.push(bucket);
    this.#buckets.sort((left, right) => left.start - right.start);
    const oldest = start - (keptBuckets - 1) * minuteMs;
    while (this.#buckets.length > keptBuckets || (this.#buckets[0]?.start ?? oldest) < oldest) {
      this.#buckets.shift();
    }
    return bucket;
  }
}
