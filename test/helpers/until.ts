/**
 * Polls `condition` every 20 ms until it holds. The deadline is a safety net under the test's timeout,
 * never a speed claim: a test that waits on it asserts what happened, not how fast.
 */

import { sleep } from '../../lib/sleep.js';

export const until = async (
  condition: () => boolean | Promise<boolean>,
  what: string,
  deadlineMs = 45_000,
): Promise<void> => {
  const deadline = Date.now() + deadlineMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
};

/** Requests counted by path, in the order each path was first seen. */
export const countByPath = (requests: ReadonlyArray<{ path: string }>): Record<string, number> => {
  const counts: Record<string, number> = {};
  for (const { path } of requests) counts[path] = (counts[path] ?? 0) + 1;
  return counts;
};
