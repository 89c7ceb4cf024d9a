/**
 * The fake backend's model for the concurrent-load bench: a prompt with "round trips N" makes one `Bash`
 * call per step until the conversation has had N tool results, then answers `done after N round trips`;
 * anything else answers "hello".
 *
 * The count is read from the conversation, never kept in the backend: call K's input is `echo trip-call K`
 * and the bench's client answers it with `trip-result K of N`. The highest K in the run's prompt and in
 * the results the run received is how many round trips the conversation has had, however it reached this
 * run: the first request, a parked run resumed with its result, or the whole transcript replayed to a
 * fresh agent after an eviction (where the prompt holds every earlier result, and each of them once).
 */

import type { FakeToolResult, Scenario } from '../../test/fakes/cursor-backend/index.js';

const tripResult = /trip-result (\d+) of (\d+)/g;

/** The round trips `text` reports done (the highest K) and wanted (the highest N; 0 when none). */
const readTrips = (text: string): { done: number; wanted: number } => {
  let done = 0;
  let wanted = Number(/round trips (\d+)/.exec(text)?.[1] ?? 0);
  for (const match of text.matchAll(tripResult)) {
    done = Math.max(done, Number(match[1]));
    wanted = Math.max(wanted, Number(match[2]));
  }
  return { done, wanted };
};

const resultText = (result: FakeToolResult | undefined): string =>
  result?.status === 'success'
    ? result.content.map((part) => (part.type === 'text' ? part.text : '')).join('')
    : '';

export const roundTripsScenario: Scenario = async (run) => {
  const { wanted, ...seen } = readTrips(run.prompt);
  let done = seen.done;
  while (done < wanted) {
    const [result] = await run.toolCalls([
      { toolName: 'Bash', args: { command: `echo trip-call ${done + 1}` } },
    ]);
    // A result without the echo still counts as this call's: the loop always ends.
    done = Math.max(done + 1, readTrips(resultText(result)).done);
  }
  run.text(wanted === 0 ? 'hello' : `done after ${done} round trips`);
  run.turnEnded({ inputTokens: 10, outputTokens: 5 });
};
