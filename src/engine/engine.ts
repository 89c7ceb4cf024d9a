/**
 * The engine: maps each client request onto a conversation's Cursor agent and streams the turn.
 * It plans resume / slim follow-up / full replay, guards host tool calls, and turns upstream runs into
 * TurnEvents for the server. Sessions live in the {@link SessionRegistry}; identical requests, the
 * serialisation of a conversation's turns and the replay of a finished turn to its retry belong to the
 * {@link TurnCoalescer}; each session's run state to its {@link Session}; requests with no conversation
 * (search side calls) to {@link WebSearchSideCalls}.
 */

import { hash } from 'node:crypto';
import type { Logger } from 'pino';
import { sleep } from '../../lib/sleep.js';
import { BridgeMetrics, type MetricsSnapshot, type TurnOutcome } from '../metrics/bridge-metrics.js';
import { BridgeError, createTurnError, toTurnError } from '../turn/turn-error.js';
import type { TurnEvent } from '../turn/turn-event.js';
import type { TurnEvents, TurnModelRoute } from '../turn/turn-model-route.js';
import type { TurnMessage, TurnRequest } from '../turn/turn-request.js';
import type {
  UpstreamPort,
  UpstreamRunInput,
  UpstreamSession,
  UpstreamWebTools,
} from '../upstream/upstream-port.js';
import {
  allowAllToolCalls,
  type PrepareImages,
  type ToolCallGuard,
  type WorkspacePort,
} from './engine-deps.js';
import { EventPump, type PumpOutcome } from './event-pump.js';
import { buildFullPrompt, buildSlimPrompt } from './prompt-builder.js';
import type { ConversationProfile, Session } from './session.js';
import { clientName } from './client-name.js';
import { SessionRegistry } from './session-registry.js';
import { assistantDigest, messageDigest } from './transcript-digest.js';
import { releaseOnEnd } from './release-on-end.js';
import { clipText } from '../../lib/clip-text.js';
import { planTurn, type Plan } from './turn-planner.js';
import { classifyTrailingTurn, type TrailingTurn } from './turn-classifier.js';
import { TurnCoalescer, type FinishedFlight } from './turn-coalescer.js';
import { isWebSearchCall } from './web-search-call.js';
import { WebSearchSideCalls } from './web-search-side-calls.js';
import { webSearchNote } from './web-search-prompt.js';
import { createUsageEstimate, type CountTokens } from './usage-estimate.js';
import { UsageAccounting, type ConversationTotals } from './usage-accounting.js';
import type { TurnAccount } from '../turn/turn-account.js';

/** A live conversation as {@link Engine.conversations} lists it: figures and names, no conversation text. */
export type ConversationSummary = {
  session: string;
  state: 'idle' | 'running' | 'parked';
  parkedCalls: number;
  /** The calls the parked run waits for: the tool's name and when it was parked (ISO 8601). */
  parked: Array<{ tool: string; since: string }>;
  lastUsedAt: string;
  /** Host tool calls whose arguments named the scratch workspace, and of those the ones corrected. */
  scratchPathViolations: number;
  scratchPathCorrections: number;
} & ConversationProfile &
  ConversationTotals;

/** The Cursor model a request runs on, the rule that chose it, and why the name did not run as sent. */
export type ResolvedModel = Omit<TurnModelRoute, 'requested'>;

export type EngineOptions = {
  upstream: UpstreamPort;
  workspace: WorkspacePort;
  guard?: ToolCallGuard;
  logger: Logger;
  /**
   * Route the client's model name to a Cursor model id; throws (or rejects) with a BridgeError for an
   * unusable route. Called once per request, before the upstream's preflight: keep it cache-fast.
   */
  resolveModel: (request: TurnRequest) => ResolvedModel | Promise<ResolvedModel>;
  /**
   * Counts a request's tokens as `count_tokens` does: a response whose usage Cursor did not report (a
   * tool-use response, its run still live) reports this estimate instead of zeros. Absent: zeros.
   */
  countTokens?: CountTokens;
  /**
   * Makes the images of what a turn sends ready for the model (fetched, converted, bounded). Absent: images
   * go as the client sent them, an image by URL as a mention of its URL.
   */
  prepareImages?: PrepareImages;
  /** Where turns, plans, evictions and tool-call latency are counted. Default: a registry of its own. */
  metrics?: BridgeMetrics;
  maxSessions?: number;
  idleTtlMs?: number;
  /** How long a parked run waits for the client's tool results before it is cancelled. */
  parkTimeoutMs?: number;
  /** Bound on waiting for an SDK run or agent to retire. */
  retireTimeoutMs?: number;
  /**
   * The replay window (60 s by default): how long a finished turn is replayed to an identical retry
   * without a second run — and, with {@link replayFailures}, a failed streaming turn's error to the
   * client's non-streaming retry.
   */
  replayWindowMs?: number;
  /**
   * Whether a streaming turn's failure is replayed, within the window, to an identical non-streaming
   * retry (default true). Claude Code answers an in-stream error with such a retry: through `serve` the
   * replay stops it from running the failed turn a second time; a host whose client would retry that
   * replayed error for minutes (the CCR transformer) turns it off, and the retry gets a fresh run.
   */
  replayFailures?: boolean;
  /**
   * Bytes of one turn's events kept for replay (text and tool input, roughly): a finished answer larger
   * than this is not retained, and identical requests joining a longer stream late are refused.
   */
  maxReplayBytes?: number;
};

type TurnContext = {
  session: Session;
  request: TurnRequest;
  model: string;
  route: TurnModelRoute['route'];
  digests: string[];
  trailing: TrailingTurn;
  /** Settles the response's `account` (see {@link TurnEvents}). */
  settleAccount: (account: TurnAccount | undefined) => void;
};

const sha = (text: string): string => hash('sha256', text, 'hex');

/**
 * The tool set a run was started with, by name: a run can only call the tools it was sent with.
 * Descriptions and schemas are left out on purpose — clients rewrite descriptions between turns, and a
 * tool keeps working under its name.
 */
const toolNamesKey = (tools: TurnRequest['tools']): string =>
  tools
    .map((tool) => tool.name)
    .sort()
    .join('\0');

/** The hosted web tools a conversation's agent gets for `request` (the SDK binds them at create). */
const webToolsOf = (request: TurnRequest): UpstreamWebTools | undefined =>
  request.webSearch === undefined ? undefined : { fetch: request.webSearch.openPages === true, only: false };

const webToolsKey = (request: TurnRequest): string => {
  const tools = webToolsOf(request);
  return tools === undefined ? 'none' : tools.fetch ? 'search+fetch' : 'search';
};

/** Distinct model routes logged at `info` (then `debug` per turn); cleared when full. */
const maxLoggedRoutes = 256;

const isTerminal = (event: TurnEvent): boolean => event.type === 'turn-end' || event.type === 'error';

/**
 * A tool call reached the client, which may run it at once: from here the run must survive the
 * client's disconnect up to the tool batch's end (and then the park deadline), so a retry replays the
 * same call id and the result for it resumes the run.
 */
const isCommitted = (event: TurnEvent): boolean => event.type === 'tool-call';

/** What a retained event costs, roughly in bytes: its strings. */
const sizeOf = (event: TurnEvent): number => {
  switch (event.type) {
    case 'text-delta':
    case 'reasoning-delta':
    case 'tool-input-delta':
      return event.delta.length + 32;
    case 'tool-call':
      return event.input.length + 64;
    default:
      return 32;
  }
};

/**
 * Which finished turn a retry is answered from: a finished answer always (a retry within the replay
 * window); a failure only to a non-streaming retry of a streaming turn, when the host
 * replays failures — Claude Code retries a turn that failed in-stream without streaming. Streaming
 * retries of a failure (OpenCode's backoff, Claude Code's resume after a cut-off) get a new run: replaying
 * the error only delays the user.
 */
const replaysTo =
  (request: TurnRequest, replayFailures: boolean) =>
  (finished: FinishedFlight<TurnEvent>): boolean => {
    const last = finished.events.at(-1);
    if (last?.type === 'turn-end') return true;
    return replayFailures && last?.type === 'error' && finished.tag === 'stream' && !request.stream;
  };

const outcomeOf = (outcome: PumpOutcome, clientLeft: boolean): TurnOutcome => {
  if (outcome.kind === 'tool-use' || outcome.kind === 'finished') return outcome.kind;
  return outcome.kind === 'failed' && !clientLeft ? 'failed' : 'cancelled';
};

export class Engine {
  readonly #options: Required<Omit<EngineOptions, 'guard' | 'metrics' | 'countTokens' | 'prepareImages'>> &
    Pick<EngineOptions, 'countTokens' | 'prepareImages'> & { guard: ToolCallGuard };
  readonly #metrics: BridgeMetrics;
  readonly #sessions: SessionRegistry;
  readonly #coalescer: TurnCoalescer<TurnEvent>;
  readonly #sweeper: NodeJS.Timeout;
  readonly #loggedRoutes = new Set<string>();
  readonly #accounting: UsageAccounting;
  /** The search side calls: requests with no conversation of their own. */
  readonly #sideCalls: WebSearchSideCalls;
  /** The hosted web tools each agent was created with (see {@link webToolsKey}). */
  readonly #webToolsOf = new WeakMap<UpstreamSession, string>();
  #closed = false;

  constructor(options: EngineOptions) {
    this.#options = {
      maxSessions: 32,
      idleTtlMs: 15 * 60_000,
      parkTimeoutMs: 30 * 60_000,
      retireTimeoutMs: 5_000,
      replayWindowMs: 60_000,
      replayFailures: true,
      maxReplayBytes: 8 * 1024 * 1024,
      guard: allowAllToolCalls,
      ...options,
    };
    this.#metrics = options.metrics ?? new BridgeMetrics();
    this.#accounting = new UsageAccounting({ metrics: this.#metrics, logger: this.#options.logger });
    this.#coalescer = new TurnCoalescer<TurnEvent>({
      retireTimeoutMs: this.#options.retireTimeoutMs,
      retainMs: this.#options.replayWindowMs,
      maxBufferedBytes: this.#options.maxReplayBytes,
      isTerminal,
      isCommitted,
      orphanTimeoutMs: this.#options.parkTimeoutMs,
      sizeOf,
    });
    this.#sessions = new SessionRegistry({
      maxSessions: this.#options.maxSessions,
      idleTtlMs: this.#options.idleTtlMs,
      retireTimeoutMs: this.#options.retireTimeoutMs,
      guard: this.#options.guard,
      workspace: this.#options.workspace,
      logger: this.#options.logger,
      onEvicted: () => this.#metrics.sessionEvicted(),
      onAgentAbandoned: (session, { run, disposed }) => {
        this.#metrics.agentAbandoned();
        this.#options.logger.warn(
          { session: session.key, run, disposed, retireTimeoutMs: this.#options.retireTimeoutMs },
          "a Cursor run did not retire after its cancel; its agent is abandoned (disposed in the background), and the conversation's next turn, if any, replays on a new agent",
        );
      },
      onForgotten: (session) => this.#coalescer.forgetGroup(session.key),
    });
    this.#sideCalls = new WebSearchSideCalls({
      upstream: this.#options.upstream,
      workspace: this.#options.workspace,
      logger: this.#options.logger,
      metrics: this.#metrics,
      accounting: this.#accounting,
      coalescer: this.#coalescer,
      refuses: (request) => this.#sessions.refusesSideCall(request),
      route: (request) => this.#route(request),
      replaysOf: (turnKey, request) => this.#replayFailureOf(turnKey, request),
    });
    this.#metrics.readSessionsFrom(() => ({
      sessions: this.#sessions.size,
      inFlight: this.#sessions.inFlight,
      parkedCalls: this.#sessions.parkedCalls,
    }));
    this.#sweeper = setInterval(() => {
      this.#sessions
        .evictIdle()
        .catch((error: unknown) => this.#options.logger.warn({ err: error }, 'idle eviction failed'));
    }, 60_000);
    this.#sweeper.unref();
  }

  /**
   * The hosts' `TurnHandler` (see `runTurnRequest`). The events carry the turn's {@link TurnModelRoute} (`modelRoute`): the
   * Cursor model that runs and the rule that chose it, for the answer's `model` and the access log.
   */
  handleTurn = async (request: TurnRequest, signal: AbortSignal): Promise<TurnEvents> => {
    if (this.#closed) throw new BridgeError(createTurnError('overloaded', 'The bridge is shutting down.'));
    if (isWebSearchCall(request)) return this.#sideCalls.handle(request, signal);
    // Classification and identity happen once, here, and stay request-local: nothing of them goes upstream.
    const trailing = classifyTrailingTurn(request);
    const { session, created, release } = this.#sessions.admit(request);
    try {
      const { model, modelRoute } = await this.#route(request);
      // Per-message digests, computed once per request: the turn key, the planner and the committed
      // history all use them.
      const digests = request.messages.map(messageDigest);
      // One logical turn of this conversation: the coalescing and replay key.
      const turnKey = `${session.key}\0${sha(`${request.protocol}\0${model}\0${digests.join('\0')}`)}`;
      const replays = this.#replayFailureOf(turnKey, request);
      let settleAccount: (account: TurnAccount | undefined) => void = () => {};
      const account = new Promise<TurnAccount | undefined>((resolve) => (settleAccount = resolve));
      const turn: TurnContext = {
        session,
        request,
        model,
        route: modelRoute.route,
        digests,
        trailing,
        settleAccount: (value) => settleAccount(value),
      };
      let started = false;
      // Identical retries share one producer: one send, one consumer of the SDK run; a retry after it
      // finished replays it. Turns of one conversation never overlap (group: the session).
      const events = this.#coalescer.join(
        turnKey,
        () => {
          started = true;
          const controller = new AbortController();
          return {
            events: this.#turn(turn, controller.signal),
            cancel: async () => controller.abort(),
          };
        },
        {
          signal,
          group: session.key,
          tag: request.stream ? 'stream' : 'json',
          replays,
        },
      );
      const served: TurnEvents = releaseOnEnd(events, (served) => {
        if (served && !started) this.#metrics.retryReplayed(request.protocol);
        // Answered from another request's run: this response ran nothing.
        if (!started) settleAccount(undefined);
        release();
      });
      return Object.assign(served, { modelRoute, account });
    } catch (error) {
      release();
      // A request refused before it ran (bad model, auth) must not take an LRU slot from a conversation
      // with history.
      if (created) this.#sessions.forgetUnused(session);
      throw error;
    }
  };

  /**
   * Which finished turns of `turnKey` the request is answered from (see {@link replaysTo}); throws the
   * retained error when it is a non-streaming retry of a turn that failed in-stream: the same error, as a
   * plain HTTP error (with the headers an in-stream error cannot carry: `retry-after`, `x-should-retry`).
   * Once only: the failure is then forgotten, so the client's own retry after its wait (a rate limit's
   * `retry-after`) runs the turn again instead of meeting the same error until the replay window ends.
   */
  #replayFailureOf(turnKey: string, request: TurnRequest): (finished: FinishedFlight<TurnEvent>) => boolean {
    const replays = replaysTo(request, this.#options.replayFailures);
    const retained = this.#coalescer.finished(turnKey);
    const last = retained?.events.at(-1);
    if (retained !== undefined && last?.type === 'error' && replays(retained)) {
      this.#metrics.retryReplayed(request.protocol);
      this.#coalescer.forget(turnKey);
      throw new BridgeError(last.error);
    }
    return replays;
  }

  /** The request's model route (logged the first time it is seen), checked by the upstream's preflight. */
  async #route(request: TurnRequest): Promise<{ model: string; modelRoute: TurnModelRoute }> {
    const resolved = await this.#options.resolveModel(request);
    const modelRoute: TurnModelRoute = { requested: request.model, ...resolved };
    this.#logRoute(modelRoute);
    await this.#options.upstream.preflight({ model: resolved.model, reasoning: request.reasoning });
    return { model: resolved.model, modelRoute };
  }

  /**
   * Drain: new conversations are refused (see {@link SessionRegistry.startDraining}); resolves once no
   * session is in flight (no admitted turn, running run or parked tool call), or the engine closed.
   * `close()` ends whatever is left.
   */
  async drain(): Promise<void> {
    this.#sessions.startDraining();
    while (!this.#closed && (this.#sessions.inFlight !== 0 || this.#sideCalls.inFlight !== 0)) {
      await sleep(100);
    }
  }

  /**
   * Turns in progress now: requests admitted and runs streaming. Sessions parked on host tool calls wait on
   * their clients and do not count (background work may run meanwhile).
   */
  turnsInProgress(): number {
    return this.#sessions.busy + this.#sideCalls.inFlight;
  }

  /** The engine's counters and session gauges (the Prometheus view is the metrics' registry). */
  metrics(): Promise<MetricsSnapshot> {
    return this.#metrics.snapshot();
  }

  /**
   * The live conversations and what each used and cost so far (its finished runs, every agent it had),
   * most recently used last, and what the search side calls used and cost since the start. Opaque session
   * keys and figures only: never any conversation text.
   */
  conversations(): { conversations: ConversationSummary[]; sideCalls: ConversationTotals } {
    const conversations = Array.from(this.#sessions.sessions(), ({ session, lastUsedAt }) => {
      const parked = session.parkedToolCalls();
      const scratch = this.#options.guard.metrics?.(session.key);
      return {
        session: session.key,
        state: session.state.kind,
        parkedCalls: session.parkedCalls,
        parked: parked.map((call) => ({ tool: call.toolName, since: new Date(call.parkedAt).toISOString() })),
        lastUsedAt: new Date(lastUsedAt).toISOString(),
        scratchPathViolations: scratch?.scratchPathViolations ?? 0,
        scratchPathCorrections: scratch?.scratchPathCorrections ?? 0,
        ...session.profile,
        ...structuredClone(session.totals),
      };
    });
    return { conversations, sideCalls: this.#sideCalls.totals() };
  }

  /** Dispose every session (settling parked calls), then the upstream. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#sweeper);
    this.#accounting.close();
    await this.#coalescer.close();
    await this.#sessions.close();
    await this.#options.upstream.close();
  }

  /**
   * A route is logged at `info` the first time its (name, model, rule) is seen — `warn` for a name near
   * catalog models that did not run — then only in the turn's `debug` lines (their `model` and `route`).
   */
  #logRoute(modelRoute: TurnModelRoute): void {
    const { model, route, note } = modelRoute;
    const requested = clipText(modelRoute.requested);
    const key = `${requested}\0${model}\0${route}`;
    if (this.#loggedRoutes.has(key)) return;
    if (this.#loggedRoutes.size >= maxLoggedRoutes) this.#loggedRoutes.clear();
    this.#loggedRoutes.add(key);
    const fields = { requested, model, route, ...(note === undefined ? {} : { note: clipText(note) }) };
    if (route === 'unmatched')
      this.#options.logger.warn(fields, 'model not served by Cursor; the Router chose');
    else this.#options.logger.info(fields, 'model route');
  }

  async *#turn(turn: TurnContext, signal: AbortSignal): AsyncGenerator<TurnEvent, void> {
    const { session, request, model, route, digests, trailing } = turn;
    const startedAt = Date.now();
    session.noteTurn({ protocol: request.protocol, client: clientName(request.headers), model, route });
    // Made on first use: a pino child costs microseconds a turn that goes well never needs.
    let child: Logger | undefined;
    const log = (): Logger =>
      (child ??= this.#options.logger.child({
        session: session.key,
        protocol: request.protocol,
        model,
        route,
      }));
    // The upstream mirrors them only when its mode hosts the client's tools.
    const { tools } = request;
    const { countTokens } = this.#options;
    const pump = new EventPump({
      tools,
      ...(request.webSearch === undefined ? {} : { webSearch: request.webSearch }),
      onToolCall: (call) => {
        this.#metrics.toolCallForwarded(call.parkedAt);
        session.noteToolCall(call);
      },
      ...(countTokens === undefined
        ? {}
        : {
            estimateUsage: createUsageEstimate(countTokens, request, (error) =>
              log().warn(
                { err: error },
                'counting the usage estimate failed; the response reports zero usage',
              ),
            ),
          }),
    });
    // The last subscriber left: cancel the SDK run for real — unless the response already reached its
    // boundary (a parked tool batch or the run's end), which a consumer stopping after the terminal event
    // must not undo.
    const onAbort = (): void => {
      if (pump.outcome.kind === 'interrupted') void session.retireRun();
    };
    let errorKind: string | undefined;
    try {
      // A run cut short earlier may still be retiring: the plan must know whether its agent survived.
      await session.retired();
      const state = session.state;
      const plan = planTurn(
        {
          hasAgent: session.agent !== undefined,
          // A run that died while parked cannot take results: it is treated as absent and replayed.
          parkedToolCallIds: session.parkedToolCallIds(),
          committed: state.kind === 'running' ? undefined : state.committed,
          interrupted: state.kind === 'idle' && state.interrupted,
          toolsChanged: state.kind === 'parked' && state.active.toolNames !== toolNamesKey(tools),
          webToolsChanged:
            session.agent !== undefined && this.#webToolsOf.get(session.agent) !== webToolsKey(request),
          heldBeforeRun: state.kind === 'idle' ? undefined : state.active.heldBeforeRun,
        },
        request.messages,
        digests,
        trailing,
      );
      if (this.#options.logger.isLevelEnabled('debug'))
        log().debug(
          { plan: plan.kind, ...(plan.kind === 'replay' ? { reason: plan.reason } : {}) },
          'planned turn',
        );
      this.#metrics.turnPlanned(await this.#startOrResume(turn, plan, tools, log, signal));
      signal.addEventListener('abort', onAbort, { once: true });
      // The client may have gone while the agent was being created: cancel at once, not at its first event.
      if (signal.aborted) onAbort();
      const events = session.run?.events;
      // The client left while the agent was being created: nothing ran, and nothing failed.
      if (events === undefined && signal.aborted) return;
      if (events === undefined)
        throw new BridgeError(createTurnError('api', 'The Cursor run is not available.'));
      for await (const event of pump.pump(events)) {
        if (event.type === 'error') errorKind = event.error.kind;
        yield event;
      }
    } catch (error) {
      const turnError = toTurnError(error);
      log().warn({ error: turnError, err: error }, 'turn failed');
      pump.outcome = { kind: 'failed' };
      errorKind = turnError.kind;
      yield { type: 'error', error: turnError };
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.#options.guard.endTurn(session.key);
      // The consumer may stop reading right after the terminal event; the pump's outcome, set before that
      // event is yielded, says whether the response reached its boundary.
      const agent = session.agent;
      await this.#settle(session, pump, digests, log);
      const outcome = outcomeOf(pump.outcome, signal.aborted);
      this.#metrics.turnEnded(
        request.protocol,
        outcome,
        startedAt,
        Date.now(),
        outcome === 'failed' ? errorKind : undefined,
      );
      this.#account(turn, pump, agent);
    }
  }

  /** Resolves how the turn continued its agent (a slim plan becomes a replay when its basis is gone). */
  async #startOrResume(
    turn: TurnContext,
    planned: Plan,
    tools: TurnRequest['tools'],
    log: () => Logger,
    signal: AbortSignal,
  ): Promise<Plan['kind']> {
    const { session, request, model } = turn;
    let plan = planned;
    if (plan.kind === 'resume') {
      // The run continues: what the agent held before it started (restored if it is cut short) stays.
      const results = await this.#images(
        model,
        plan.results.map((result) => ({ role: 'tool' as const, ...result })),
        false,
        signal,
        log,
      );
      session.resume(
        results.flatMap((result) =>
          result.role === 'tool'
            ? [{ toolCallId: result.toolCallId, content: result.content, isError: result.isError }]
            : [],
        ),
      );
      // Host facts are re-read every turn, a resumed one too: the
      // workspace files follow a changed environment, and the run's next calls are checked against this
      // turn's host root. The run itself gets no new prompt, so it is resumed first.
      const prepared = await this.#options.workspace.prepare(session.key, request);
      session.rehost(prepared.workspaceDir, prepared.hostRoot);
      return plan.kind;
    }
    if (plan.kind === 'slim' && session.state.kind !== 'idle') {
      this.#options.logger.info(
        { session: session.key },
        'the tool set changed while tool calls were parked; re-sending the turn with the new tools',
      );
      await session.retireRun();
      // The retired run left the agent holding part of its turn (or the agent was abandoned): a slim
      // prompt would repeat that turn to it, so the transcript is replayed to a new agent.
      if (!session.knowsHistory()) {
        plan = { kind: 'replay', reason: 'the retired run changed what the agent holds' };
        log().debug({ plan: plan.kind, reason: plan.reason }, 'planned turn');
      }
    }
    if (plan.kind === 'replay') await session.dispose();
    const prepared = await this.#options.workspace.prepare(session.key, request);
    const webTools = webToolsOf(request);
    const agent = await session.ensureAgent(async () => {
      const created = await this.#options.upstream.createSession({
        workspaceDir: prepared.workspaceDir,
        ...(webTools === undefined ? {} : { webTools }),
      });
      this.#webToolsOf.set(created, webToolsKey(request));
      return created;
    });
    const grounding =
      request.webSearch === undefined
        ? prepared.grounding
        : {
            head: prepared.grounding.head,
            tail: [prepared.grounding.tail, webSearchNote(request.webSearch)].filter(Boolean).join('\n\n'),
          };
    const input: UpstreamRunInput = {
      prompt:
        plan.kind === 'slim'
          ? buildSlimPrompt(await this.#images(model, plan.newMessages, false, signal, log), grounding)
          : buildFullPrompt(
              { ...request, messages: await this.#images(model, request.messages, true, signal, log) },
              grounding,
            ),
      tools,
      model,
      reasoning: request.reasoning,
      // Checked before a call is parked: a corrected call is answered to the model and never reaches the
      // client. Against the run's current placement (a resumed turn re-hosts it), else this turn's.
      checkToolCall: (call) => {
        const active = session.state.kind === 'idle' ? prepared : session.state.active;
        return this.#options.guard.check(session.key, call, {
          workspaceDir: active.workspaceDir,
          ...(active.hostRoot === undefined ? {} : { hostRoot: active.hostRoot }),
        });
      },
    };
    const run = await agent.startRun(input);
    session.started({
      run,
      toolNames: toolNamesKey(tools),
      // A run cut short writes no checkpoint: the agent then holds only what it held before (nothing
      // known, for a fresh agent).
      heldBeforeRun: plan.kind === 'slim' ? [...plan.held] : undefined,
      workspaceDir: prepared.workspaceDir,
      hostRoot: prepared.hostRoot,
    });
    return plan.kind;
  }

  /**
   * The messages with their images made ready for the model; each image that could not be is logged (a
   * warning: the model got a note in its place, the turn goes on).
   */
  async #images(
    model: string,
    messages: readonly TurnMessage[],
    replay: boolean,
    signal: AbortSignal,
    log: () => Logger,
  ): Promise<TurnMessage[]> {
    const { prepareImages } = this.#options;
    if (prepareImages === undefined) return [...messages];
    const prepared = await prepareImages(messages, { replay, model, signal });
    this.#metrics.imagesPrepared(prepared.sent, prepared.converted, prepared.problems.length);
    for (const problem of prepared.problems)
      log().warn({ image: problem.image, reason: problem.reason }, 'image not sent to the model');
    if (prepared.sent !== 0 && this.#options.logger.isLevelEnabled('debug'))
      log().debug({ images: prepared.sent, converted: prepared.converted }, 'images sent to the model');
    return prepared.messages;
  }

  /**
   * Settle the response's account: a tool-use response reports what it told the client (its run goes on);
   * the response that finished a run waits for Cursor's billing of it, which also goes into the metrics and
   * the conversation's totals; any other response ran nothing that can be accounted.
   */
  #account(turn: TurnContext, pump: EventPump, agent: UpstreamSession | undefined): void {
    const reported = pump.reported;
    if (reported === undefined || pump.outcome.kind === 'cancelled') return turn.settleAccount(undefined);
    const source = reported.estimated ? 'estimate' : 'stream';
    if (pump.outcome.kind === 'tool-use') return turn.settleAccount({ usage: reported.usage, source });
    if (pump.outcome.kind !== 'finished' || agent === undefined) return turn.settleAccount(undefined);
    void this.#accounting
      .account(agent, turn.model, reported.usage, turn.session.totals)
      .then(turn.settleAccount);
  }

  /** Record what the agent now holds and what happens to the run after this response. */
  async #settle(session: Session, pump: EventPump, digests: string[], log: () => Logger): Promise<void> {
    const outcome = pump.outcome;
    if (outcome.kind === 'tool-use' && session.state.kind === 'running') {
      session.park(
        [...digests, assistantDigest(pump.output.text, pump.output.toolCalls)],
        this.#options.parkTimeoutMs,
        () => {
          log().warn('parked tool calls expired without a client result; cancelling the run');
          void session.retireRun();
        },
      );
      return;
    }
    if (outcome.kind === 'finished' && session.state.kind === 'running') {
      session.finished([...digests, assistantDigest(pump.output.text, [])]);
      return;
    }
    // Failed, cancelled or interrupted: stop the run. A cut-short run checkpoints nothing, so the agent
    // holds what it held before this run; a following request re-sends the cut turn with a slim
    // follow-up, or replays in full when that history is unknown.
    await session.retireRun({ failed: outcome.kind === 'failed' });
  }
}
