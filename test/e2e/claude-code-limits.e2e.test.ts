/**
 * Cursor's limits through the real Claude Code against `cursor-bridge serve`, whose fake Cursor backend
 * refuses the run the way Cursor does (`failLimit`: Cursor's ErrorDetails through the real SDK). Claude
 * Code's own 429 handling decides what happens: a spent usage limit (429 with `x-should-retry: false`)
 * is shown and ends the run without a retry that asks Cursor again; a rate limit (429 with
 * `retry-after`) is waited for and retried, and the retry succeeds once Cursor stops limiting.
 */

import { beforeAll, describe, expect, it } from 'vitest';
import type { RecordedExchange } from '../helpers/e2e/e2e-bridge.js';
import { claudeCodeDriver, claudeCodeResult } from '../helpers/e2e/claude-code-driver.js';
import { installTimeoutMs, prepareE2e, scenarioTimeoutMs, startE2e } from '../helpers/e2e/e2e-harness.js';

/** The data of the exchange's in-stream `error` event, if it sent one. */
const streamedError = (exchange: RecordedExchange | undefined): unknown => {
  const frame = exchange?.frames.find((candidate) => 'event' in candidate && candidate.event === 'error');
  return frame && 'data' in frame ? JSON.parse(frame.data) : undefined;
};

/**
 * Each exchange's HTTP status, and `streamed` for one that failed in-stream (Claude Code hangs up as soon
 * as it reads the `error` event, so whether the bridge finished that response first is a race).
 */
const statuses = (exchanges: readonly RecordedExchange[]): Array<number | 'streamed'> =>
  exchanges.map((exchange) => (streamedError(exchange) === undefined ? (exchange.status ?? 0) : 'streamed'));

const rateLimitError = (message: RegExp) =>
  expect.objectContaining({
    type: 'error',
    error: { type: 'rate_limit_error', message: expect.stringMatching(message) as unknown },
  });

describe("Claude Code: Cursor's rate and usage limits", { timeout: scenarioTimeoutMs }, () => {
  beforeAll(() => prepareE2e('claude-code'), installTimeoutMs);

  it("shows a spent usage limit with Cursor's dashboard and stops, asking Cursor once", async () => {
    const e2e = await startE2e(claudeCodeDriver, {
      turns: [{ steps: [{ limit: { error: 'ERROR_PRO_USER_USAGE_LIMIT' } }] }],
    });
    const run = await e2e.turn('Answer this.');

    expect(run.exitCode).toBe(1);
    expect(claudeCodeResult(run.stdout)).toMatchObject({
      is_error: true,
      api_error_status: 429,
      api_error_type: 'rate_limit_error',
      result: expect.stringMatching(
        /Cursor usage limit reached \(Cursor: You've hit your usage limit .*https:\/\/cursor\.com\/dashboard/,
      ) as unknown,
    });
    // The in-stream error, then Claude Code's one non-streaming retry, answered 429 with
    // x-should-retry false (the same failure, replayed): it retries no further.
    const exchanges = e2e.bridge.mainExchanges();
    expect(statuses(exchanges)).toEqual(['streamed', 429]);
    expect(streamedError(exchanges[0])).toEqual(rateLimitError(/^Cursor usage limit reached/));
    expect(exchanges[1]?.json).toEqual(rateLimitError(/^Cursor usage limit reached/));
    expect(e2e.bridge.mainRuns()).toHaveLength(1);
  });

  it("waits for a rate limit's retry-after and retries, answered once Cursor stops limiting", async () => {
    const e2e = await startE2e(claudeCodeDriver, {
      turns: [
        { steps: [{ limit: { error: 'ERROR_RATE_LIMITED', retryAfterSeconds: 1 } }] },
        { steps: [{ text: 'Answer after the limit.' }] },
      ],
    });
    const run = await e2e.turn('Answer this.');

    expect(run.exitCode).toBe(0);
    expect(claudeCodeResult(run.stdout)).toMatchObject({
      is_error: false,
      result: 'Answer after the limit.',
    });
    // The in-stream error; Claude Code's non-streaming retry gets it as a 429 with retry-after 1 (what
    // the stream could not carry); its retry after that wait runs the turn again and is answered.
    const exchanges = e2e.bridge.mainExchanges();
    expect(statuses(exchanges)).toEqual(['streamed', 429, 200]);
    expect(exchanges[1]?.json).toEqual(rateLimitError(/Please try again in 1s\.$/));
    expect(e2e.bridge.mainRuns().map((backendRun) => backendRun.replay)).toEqual([false, false]);
  });
});
