/**
 * The bridge's Prometheus metrics (prom-client), one `Registry` per bridge — never the global one — so two
 * bridges in one process (tests, embedders) never share or double-register series. Created by the
 * bridge's wiring and injected where the events happen: the engine (turns, plans, evictions, tool-call
 * latency, session gauges), the server (time to first byte) and the scratch-path guards (violations).
 *
 * Counters are monotonic over the bridge's lifetime (never summed over live sessions); gauges are read
 * from their source at scrape time. Metric names are documented in docs/configuration.md ("Metrics").
 */

import {
  collectDefaultMetrics,
  Counter,
  Gauge,
  Histogram,
  Registry,
  type CounterConfiguration,
  type GaugeConfiguration,
  type HistogramConfiguration,
} from 'prom-client';
import type { TurnCost } from '../turn/turn-account.js';
import { ActivityHistory, type ActivitySeries, type TurnOutcome } from './activity-history.js';
import type { TurnUsage } from '../turn/turn-usage.js';

export type { TurnOutcome } from './activity-history.js';

/** How the engine continued a conversation's agent. */
export type TurnPlanKind = 'resume' | 'slim' | 'replay';

/** The engine's live state, read at scrape time. */
export type SessionGauges = { sessions: number; inFlight: number; parkedCalls: number };

export type BridgeMetricsOptions = {
  /** Also collect prom-client's default process metrics (CPU, memory, event loop, GC). Default false. */
  processMetrics?: boolean;
};

/** A flat view of the counters and gauges, for tests and logs. */
export type MetricsSnapshot = {
  turns: number;
  finishedTurns: number;
  toolUseTurns: number;
  failedTurns: number;
  cancelledTurns: number;
  resumed: number;
  slim: number;
  replayed: number;
  retriesReplayed: number;
  evicted: number;
  abandonedAgents: number;
  warmHits: number;
  warmMisses: number;
  warmWorkspaces: number;
  scratchPathViolations: number;
  scratchPathCorrections: number;
  sessions: number;
  inFlightSessions: number;
  parkedCalls: number;
};

const secondsSince = (startMs: number, nowMs: number): number => Math.max(0, nowMs - startMs) / 1000;

export class BridgeMetrics {
  /** The bridge's own registry; `GET /metrics` renders it. */
  readonly registry = new Registry();
  readonly #turns: Counter<'protocol' | 'outcome'>;
  readonly #turnErrors: Counter<'protocol' | 'kind'>;
  readonly #history = new ActivityHistory();
  readonly #plans: Counter<'plan'>;
  readonly #retryReplays: Counter<'protocol'>;
  readonly #evictions: Counter;
  readonly #abandonedAgents: Counter;
  readonly #violations: Counter;
  readonly #corrections: Counter;
  readonly #firstByte: Histogram<'protocol'>;
  readonly #toolCallLatency: Histogram;
  readonly #warmClaims: Counter<'result'>;
  #warmWorkspaces: () => number = () => 0;
  readonly #turnDuration: Histogram<'protocol' | 'outcome'>;
  readonly #tokens: Counter<'model' | 'kind'>;
  readonly #costCents: Counter<'model' | 'kind'>;
  readonly #unpricedRuns: Counter<'model'>;
  readonly #images: Counter<'outcome'>;
  #gauges: () => SessionGauges = () => ({ sessions: 0, inFlight: 0, parkedCalls: 0 });

  constructor(options: BridgeMetricsOptions = {}) {
    const registers = [this.registry];
    const counter = <L extends string>(config: CounterConfiguration<L>): Counter<L> =>
      new Counter({ ...config, registers });
    const histogram = <L extends string>(config: HistogramConfiguration<L>): Histogram<L> =>
      new Histogram({ ...config, registers });
    const gauge = (config: GaugeConfiguration<string>, read: (gauges: SessionGauges) => number): void => {
      const gauges = (): SessionGauges => this.#gauges();
      new Gauge({
        ...config,
        registers,
        collect() {
          this.set(read(gauges()));
        },
      });
    };
    this.#turns = counter({
      name: 'cursor_bridge_turns_total',
      help: 'Client responses of turns, by protocol and outcome (finished, tool-use, failed, cancelled).',
      labelNames: ['protocol', 'outcome'],
    });
    this.#turnErrors = counter({
      name: 'cursor_bridge_turn_errors_total',
      help: 'Failed client responses of turns, by protocol and error kind (rate-limit, overloaded, api, …).',
      labelNames: ['protocol', 'kind'],
    });
    this.#plans = counter({
      name: 'cursor_bridge_turn_plans_total',
      help: 'How turns continued their agent: resume (parked run), slim (follow-up), replay (full transcript).',
      labelNames: ['plan'],
    });
    this.#retryReplays = counter({
      name: 'cursor_bridge_retry_replays_total',
      help: "Identical requests answered from another request's turn (in flight, or finished within the replay window) without a second run.",
      labelNames: ['protocol'],
    });
    this.#evictions = counter({
      name: 'cursor_bridge_session_evictions_total',
      help: 'Sessions evicted (LRU cap or idle TTL).',
    });
    this.#abandonedAgents = counter({
      name: 'cursor_bridge_abandoned_agents_total',
      help: 'Agents given up because their run did not retire (cancel failed or outlived the bound); the conversation replays on a new agent.',
    });
    this.#violations = counter({
      name: 'cursor_bridge_scratch_path_violations_total',
      help: 'Host tool calls whose arguments referred to the scratch workspace.',
    });
    this.#corrections = counter({
      name: 'cursor_bridge_scratch_path_corrections_total',
      help: 'Scratch-path tool calls answered with a correction instead of being forwarded.',
    });
    gauge({ name: 'cursor_bridge_sessions', help: 'Live sessions.' }, (gauges) => gauges.sessions);
    gauge(
      {
        name: 'cursor_bridge_sessions_in_flight',
        help: 'Sessions with a live stream, a running run or parked tool calls.',
      },
      (gauges) => gauges.inFlight,
    );
    gauge(
      { name: 'cursor_bridge_parked_tool_calls', help: 'Host tool calls parked, awaiting client results.' },
      (gauges) => gauges.parkedCalls,
    );
    this.#warmClaims = counter({
      name: 'cursor_bridge_warm_workspace_claims_total',
      help: "New conversations' first turns by whether a pre-warmed scratch workspace was ready (hit) or not (miss).",
      labelNames: ['result'],
    });
    const warmWorkspaces = (): number => this.#warmWorkspaces();
    new Gauge({
      name: 'cursor_bridge_warm_workspaces',
      help: 'Pre-warmed scratch workspaces ready for new conversations.',
      registers,
      collect() {
        this.set(warmWorkspaces());
      },
    });
    this.#firstByte = histogram({
      name: 'cursor_bridge_time_to_first_byte_seconds',
      help: 'From request arrival to the first turn event written to the client (the whole body when not streaming).',
      labelNames: ['protocol'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
    });
    this.#toolCallLatency = histogram({
      name: 'cursor_bridge_tool_call_latency_seconds',
      help: "From the SDK's execute of a host tool call to its tool-call event for the client.",
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    });
    this.#turnDuration = histogram({
      name: 'cursor_bridge_turn_duration_seconds',
      help: 'Duration of a client response of a turn, by protocol and outcome.',
      labelNames: ['protocol', 'outcome'],
      buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
    });
    this.#tokens = counter({
      name: 'cursor_bridge_tokens_total',
      help: "Tokens of finished runs, by Cursor model and kind (input, output, cache_read, cache_write; reasoning is a part of output), from Cursor's billing (else the run's own report).",
      labelNames: ['model', 'kind'],
    });
    this.#costCents = counter({
      name: 'cursor_bridge_cost_cents_total',
      help: "Cost of finished runs in cents, by Cursor model and kind: raw (the undiscounted model cost) and charged (what Cursor billed), from Cursor's billing.",
      labelNames: ['model', 'kind'],
    });
    this.#unpricedRuns = counter({
      name: 'cursor_bridge_unpriced_runs_total',
      help: "Finished runs whose cost Cursor's billing had not reported within the bridge's wait (not in cursor_bridge_cost_cents_total).",
      labelNames: ['model'],
    });
    this.#images = counter({
      name: 'cursor_bridge_images_total',
      help: 'Images of client requests, by outcome: sent as they came, converted (re-encoded or scaled down), or noted (the model got a note saying why it does not see the image).',
      labelNames: ['outcome'],
    });
    if (options.processMetrics === true) collectDefaultMetrics({ register: this.registry });
  }

  /** The Content-Type of {@link render}'s output. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** The Prometheus text exposition of every metric. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  /** Where the session gauges are read from (the engine's registry); the last call wins. */
  readSessionsFrom(read: () => SessionGauges): void {
    this.#gauges = read;
  }

  /** Where the ready pre-warmed workspaces are counted; the last call wins. */
  readWarmWorkspacesFrom(read: () => number): void {
    this.#warmWorkspaces = read;
  }

  /** A new conversation's first turn found a pre-warmed workspace (`hit`) or none. */
  warmWorkspaceClaimed(hit: boolean): void {
    this.#warmClaims.inc({ result: hit ? 'hit' : 'miss' });
  }

  /** A client response of a turn ended; `errorKind` is the failure's kind (a `TurnError`'s). */
  turnEnded(
    protocol: string,
    outcome: TurnOutcome,
    startedAtMs: number,
    nowMs = Date.now(),
    errorKind?: string,
  ): void {
    this.#turns.inc({ protocol, outcome });
    this.#turnDuration.observe({ protocol, outcome }, secondsSince(startedAtMs, nowMs));
    if (errorKind !== undefined) this.#turnErrors.inc({ protocol, kind: errorKind });
    this.#history.turnEnded(outcome, Math.max(0, nowMs - startedAtMs), errorKind, nowMs);
  }

  /** The last hour of turns, durations, tokens and errors, by minute (the console's charts). */
  history(nowMs = Date.now()): ActivitySeries {
    return this.#history.series(nowMs);
  }

  turnPlanned(plan: TurnPlanKind): void {
    this.#plans.inc({ plan });
  }

  retryReplayed(protocol: string): void {
    this.#retryReplays.inc({ protocol });
  }

  sessionEvicted(): void {
    this.#evictions.inc();
  }

  agentAbandoned(): void {
    this.#abandonedAgents.inc();
  }

  /** The images of what one turn sent: `sent` in all (of which `converted`), and `noted` in place of one. */
  imagesPrepared(sent: number, converted: number, noted: number): void {
    if (sent > converted) this.#images.inc({ outcome: 'sent' }, sent - converted);
    if (converted > 0) this.#images.inc({ outcome: 'converted' }, converted);
    if (noted > 0) this.#images.inc({ outcome: 'noted' }, noted);
  }

  scratchPathViolation(corrected: boolean): void {
    this.#violations.inc();
    if (corrected) this.#corrections.inc();
  }

  firstByte(protocol: string, receivedAtMs: number, nowMs = Date.now()): void {
    this.#firstByte.observe({ protocol }, secondsSince(receivedAtMs, nowMs));
  }

  /** A parked host tool call reached the client; `parkedAtMs` is when the SDK's `execute` parked it. */
  toolCallForwarded(parkedAtMs: number, nowMs = Date.now()): void {
    this.#toolCallLatency.observe(secondsSince(parkedAtMs, nowMs));
  }

  /** A finished run's usage and, when known, its cost (see the engine's usage accounting). */
  runAccounted(model: string, usage: TurnUsage, cost: TurnCost | undefined, nowMs = Date.now()): void {
    this.#history.tokens(usage.inputTokens, usage.outputTokens, nowMs);
    this.#tokens.inc({ model, kind: 'input' }, usage.inputTokens);
    this.#tokens.inc({ model, kind: 'output' }, usage.outputTokens);
    this.#tokens.inc({ model, kind: 'cache_read' }, usage.cacheReadTokens);
    this.#tokens.inc({ model, kind: 'cache_write' }, usage.cacheWriteTokens);
    if (usage.reasoningTokens !== undefined)
      this.#tokens.inc({ model, kind: 'reasoning' }, usage.reasoningTokens);
    if (cost === undefined) {
      this.#unpricedRuns.inc({ model });
      return;
    }
    this.#costCents.inc({ model, kind: 'raw' }, cost.rawCents);
    this.#costCents.inc({ model, kind: 'charged' }, cost.chargedCents);
  }

  /** The counters and gauges as plain numbers. */
  async snapshot(): Promise<MetricsSnapshot> {
    const sum = async (
      metric: Counter<string>,
      match: (labels: Record<string, unknown>) => boolean = () => true,
    ): Promise<number> =>
      (await metric.get()).values
        .filter((value) => match(value.labels))
        .reduce((total, value) => total + value.value, 0);
    const outcome = (name: TurnOutcome) => (labels: Record<string, unknown>) => labels['outcome'] === name;
    const plan = (name: TurnPlanKind) => (labels: Record<string, unknown>) => labels['plan'] === name;
    const gauges = this.#gauges();
    return {
      turns: await sum(this.#turns),
      finishedTurns: await sum(this.#turns, outcome('finished')),
      toolUseTurns: await sum(this.#turns, outcome('tool-use')),
      failedTurns: await sum(this.#turns, outcome('failed')),
      cancelledTurns: await sum(this.#turns, outcome('cancelled')),
      resumed: await sum(this.#plans, plan('resume')),
      slim: await sum(this.#plans, plan('slim')),
      replayed: await sum(this.#plans, plan('replay')),
      retriesReplayed: await sum(this.#retryReplays),
      evicted: await sum(this.#evictions),
      abandonedAgents: await sum(this.#abandonedAgents),
      warmHits: await sum(this.#warmClaims, (labels) => labels['result'] === 'hit'),
      warmMisses: await sum(this.#warmClaims, (labels) => labels['result'] === 'miss'),
      warmWorkspaces: this.#warmWorkspaces(),
      scratchPathViolations: await sum(this.#violations),
      scratchPathCorrections: await sum(this.#corrections),
      sessions: gauges.sessions,
      inFlightSessions: gauges.inFlight,
      parkedCalls: gauges.parkedCalls,
    };
  }
}
