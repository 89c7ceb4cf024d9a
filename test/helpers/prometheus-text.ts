/**
 * A tiny reader of the Prometheus text exposition format (what `GET /metrics` serves), for tests: each
 * sample line `name{label="value",…} number` becomes one sample. Comments (`# HELP`, `# TYPE`) are skipped.
 */

export type PromSample = { name: string; labels: Record<string, string>; value: number };

const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const labelPair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export const parsePrometheusText = (text: string): PromSample[] =>
  text.split('\n').flatMap((line) => {
    if (line.trim() === '' || line.startsWith('#')) return [];
    const match = sampleLine.exec(line);
    if (match === null) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(labelPair)) labels[pair[1] ?? ''] = pair[2] ?? '';
    return [{ name: match[1] ?? '', labels, value: Number(match[3]) }];
  });

/** The sum of `name`'s samples whose labels include `labels`. */
export const sumSamples = (
  samples: readonly PromSample[],
  name: string,
  labels: Record<string, string> = {},
): number =>
  samples
    .filter(
      (sample) =>
        sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
    )
    .reduce((total, sample) => total + sample.value, 0);

/** The bridge's counters and gauges under the names the engine's snapshot uses (turns, slim, …). */
export const bridgeCounters = (text: string): Record<string, number> => {
  const samples = parsePrometheusText(text);
  const turns = (outcome?: string) =>
    sumSamples(samples, 'cursor_bridge_turns_total', outcome === undefined ? {} : { outcome });
  const plans = (plan: string) => sumSamples(samples, 'cursor_bridge_turn_plans_total', { plan });
  return {
    turns: turns(),
    finishedTurns: turns('finished'),
    toolUseTurns: turns('tool-use'),
    failedTurns: turns('failed'),
    cancelledTurns: turns('cancelled'),
    resumed: plans('resume'),
    slim: plans('slim'),
    replayed: plans('replay'),
    retriesReplayed: sumSamples(samples, 'cursor_bridge_retry_replays_total'),
    evicted: sumSamples(samples, 'cursor_bridge_session_evictions_total'),
    scratchPathViolations: sumSamples(samples, 'cursor_bridge_scratch_path_violations_total'),
    scratchPathCorrections: sumSamples(samples, 'cursor_bridge_scratch_path_corrections_total'),
    sessions: sumSamples(samples, 'cursor_bridge_sessions'),
    inFlightSessions: sumSamples(samples, 'cursor_bridge_sessions_in_flight'),
    parkedCalls: sumSamples(samples, 'cursor_bridge_parked_tool_calls'),
  };
};
