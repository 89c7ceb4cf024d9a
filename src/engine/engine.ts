/**
 * The engine: maps each client request onto a conversation's Cursor agent and streams the turn.
 * It owns the session registry, plans resume / slim follow-up / full replay, guards host tool calls,
 * and turns upstream runs into TurnEvents for the server.
 */

import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { BridgeError, createTurnError, toTurnError, type TurnError } from '../turn/turn-error.js';
import type { TurnEvent } from '../turn/turn-event.js';
import type { TurnRequest } from '../turn/turn-request.js';
import type { UpstreamMode, UpstreamPort, UpstreamRunInput } from '../upstream/upstream-port.js';
import { allowAllToolCalls, type ToolCallGuard, type WorkspacePort } from './engine-deps.js';
import { EventPump } from './event-pump.js';
import { buildFullPrompt, buildSlimPrompt } from './prompt-builder.js';
import { Session } from './session.js';
import { assistantDigest, messageDigest } from './transcript-digest.js';
import { planTurn, type Plan } from './turn-planner.js';
import { classifyTrailingTurn, type TrailingTurn } from './turn-classifier.js';
import { computeIdentity, IdentityIndex } from './session-identity.js';
import { TurnCoalescer } from './turn-coalescer.js';

export type ResolvedModel = { model: string };

export type EngineOptions = {
  upstream: UpstreamPort;
  workspace: WorkspacePort;
  guard?: ToolCallGuard;
  logger: Logger;
  mode: UpstreamMode;
  /** Route the client's model name to a Cursor model id; throws a BridgeError for an unusable route. */
  resolveModel: (request: TurnRequest) => ResolvedModel;
  maxSessions?: number;
  idleTtlMs?: number;
  /** How long a parked run waits for the client's tool results before it is cancelled. */
  parkTimeoutMs?: number;
  /** Bound on waiting for an SDK run or agent to retire. */
  retireTimeoutMs?: number;
  /** How long a failed streaming turn's error is replayed to the client's non-streaming retry. */
  failureReplayMs?: number;
};

type Counters = {
  turns: number;
  failedTurns: number;
  resumed: number;
  slim: number;
  replayed: number;
  evicted: number;
};

const sha = (text: string): string => createHash('sha256').update(text).digest('hex');

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

export class Engine {
  readonly #options: Required<Omit<EngineOptions, 'guard'>> & { guard: ToolCallGuard };
  readonly #sessions = new Map<string, Session>();
  readonly #failures = new Map<string, { error: TurnError; at: number }>();
  readonly #index = new IdentityIndex();
  readonly #coalescer: TurnCoalescer<TurnEvent>;
  readonly #counters: Counters = { turns: 0, failedTurns: 0, resumed: 0, slim: 0, replayed: 0, evicted: 0 };
  readonly #sweeper: NodeJS.Timeout;
  #closed = false;
  #draining = false;

  constructor(options: EngineOptions) {
    this.#options = {
      maxSessions: 32,
      idleTtlMs: 15 * 60_000,
      parkTimeoutMs: 30 * 60_000,
      retireTimeoutMs: 5_000,
      failureReplayMs: 60_000,
      guard: allowAllToolCalls,
      ...options,
    };
    this.#coalescer = new TurnCoalescer<TurnEvent>({ retireTimeoutMs: this.#options.retireTimeoutMs });
    this.#sweeper = setInterval(() => {
      this.#evictIdle().catch((error: unknown) =>
        this.#options.logger.warn({ err: error }, 'idle eviction failed'),
      );
    }, 60_000);
    this.#sweeper.unref();
  }

  /** The server's TurnHandler. */
  handleTurn = async (request: TurnRequest, signal: AbortSignal): Promise<AsyncIterable<TurnEvent>> => {
    if (this.#closed) throw new BridgeError(createTurnError('overloaded', 'The bridge is shutting down.'));
    // Classification and identity happen once, here, and stay request-local: nothing of them goes upstream.
    const trailing = classifyTrailingTurn(request);
    const { session, created } = this.#admit(request);
    let admitted = true;
    const finish = (): void => {
      if (!admitted) return;
      admitted = false;
      session.admittedTurns -= 1;
      this.#index.turnFinished(session.key, Date.now());
      // Sessions admitted while every slot was in flight are over the cap until turns end.
      this.#evictOverflow();
    };
    try {
      const { model } = this.#options.resolveModel(request);
      await this.#options.upstream.preflight({ model, reasoning: request.reasoning });
      // Per-message digests, computed once per request: the turn key, the planner and the committed
      // history all use them.
      const digests = request.messages.map(messageDigest);
      // One logical turn of this conversation: the coalescing key and the failure-replay key.
      const turnKey = `${session.key}\0${sha(`${request.protocol}\0${model}\0${digests.join('\0')}`)}`;
      const failure = request.stream ? undefined : this.#failures.get(turnKey);
      if (failure !== undefined && Date.now() - failure.at < this.#options.failureReplayMs) {
        // Claude Code retries a turn that failed in-stream without streaming; answer with the same error
        // instead of starting a second run. Streaming retries (OpenCode's backoff, Claude Code's resume
        // after a cut-off) get a new run: replaying the error to them only delays the user.
        throw new BridgeError(failure.error);
      }
      // Identical overlapping retries share one producer: one send, one consumer of the SDK run.
      const events = this.#coalescer.join(
        turnKey,
        () => {
          const controller = new AbortController();
          return {
            events: this.#turn(session, request, { model, turnKey, digests, trailing }, controller.signal),
            cancel: async () => controller.abort(),
          };
        },
        { signal, group: session.key },
      );
      return this.#finishing(events, finish);
    } catch (error) {
      finish();
      // A request refused before it ran (bad model, auth) must not take an LRU slot from a conversation
      // with history.
      if (created && session.upstream === undefined && session.admittedTurns === 0) this.#forget(session);
      throw error;
    }
  };

  metrics(): Record<string, unknown> {
    let inFlight = 0;
    for (const session of this.#sessions.values()) if (session.inFlight) inFlight += 1;
    return { sessions: this.#sessions.size, inFlightSessions: inFlight, ...this.#counters };
  }

  /**
   * Drain: from now on a turn that resolves to a new conversation is refused with a retryable
   * `unavailable` error (`retry-after` 2 s: a load balancer has taken this process out of rotation by
   * then), while turns of live conversations — and new sessions under the session id of one in flight,
   * its side calls — still run. Resolves once no session is in flight (no admitted turn, running run or
   * parked tool call); `close()` ends whatever is left.
   */
  async drain(): Promise<void> {
    this.#draining = true;
    while (!this.#closed && this.metrics()['inFlightSessions'] !== 0) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Dispose every session (settling parked calls), then the upstream. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#sweeper);
    await this.#coalescer.close();
    const sessions = [...this.#sessions.values()];
    this.#sessions.clear();
    await Promise.all(sessions.map((session) => this.#dispose(session)));
    await this.#options.upstream.close();
  }

  /**
   * Find or create the conversation's session and admit the turn synchronously, so a retry arriving
   * while this turn still resolves its model or creates its agent counts as "still running".
   */
  #admit(request: TurnRequest): { session: Session; created: boolean } {
    const identity = computeIdentity(request);
    const resolution = this.#index.resolve(identity, Date.now());
    const existing = resolution.kind === 'existing' ? this.#sessions.get(resolution.sessionId) : undefined;
    const nativeId = request.identity.nativeSessionId?.value;
    // While draining, a side call of a live conversation (a Claude Code Task, a title request under its
    // session id) is part of that conversation's work: only a new conversation is refused.
    const sideOfLive = (candidate: Session): boolean =>
      nativeId !== undefined && candidate.nativeSessionId === nativeId && candidate.inFlight;
    if (existing === undefined && this.#draining && ![...this.#sessions.values()].some(sideOfLive)) {
      const message = 'This bridge process is draining and takes no new conversations; retry.';
      throw new BridgeError(createTurnError('unavailable', message, { retryAfterSeconds: 2 }));
    }
    const session = existing ?? new Session();
    session.nativeSessionId ??= nativeId;
    // Admitted before any eviction runs, so it is in flight and cannot be evicted by its own arrival.
    session.admittedTurns += 1;
    // Most recently used last: the Map's order is the LRU order.
    this.#sessions.delete(session.key);
    this.#sessions.set(session.key, session);
    if (existing === undefined) this.#evictOverflow();
    this.#index.admit(session.key, identity);
    this.#options.logger.debug(
      { session: session.key, identity: resolution.kind, reason: resolution.reason },
      'admitted turn',
    );
    return { session, created: existing === undefined };
  }

  /** Drop a session that never got an agent. */
  #forget(session: Session): void {
    this.#sessions.delete(session.key);
    this.#index.forget(session.key);
    this.#options.guard.forget(session.key);
  }

  /** Report the end of an admitted turn to the identity index, however the response ends. */
  async *#finishing(events: AsyncIterable<TurnEvent>, finish: () => void): AsyncGenerator<TurnEvent, void> {
    try {
      yield* events;
    } finally {
      finish();
    }
  }

  #evictOverflow(): void {
    for (const [key, session] of this.#sessions) {
      if (this.#sessions.size <= this.#options.maxSessions) return;
      if (session.inFlight) continue;
      this.#sessions.delete(key);
      this.#counters.evicted += 1;
      this.#dispose(session).catch((error: unknown) => this.#logDisposeFailure(session, error));
    }
  }

  #logDisposeFailure(session: Session, error: unknown): void {
    this.#options.logger.warn({ err: error, session: session.key }, 'could not dispose an evicted session');
  }

  async #evictIdle(): Promise<void> {
    const now = Date.now();
    for (const [key, session] of this.#sessions) {
      if (session.inFlight || now - session.lastUsedAt < this.#options.idleTtlMs) continue;
      this.#sessions.delete(key);
      this.#counters.evicted += 1;
      await this.#dispose(session).catch((error: unknown) => this.#logDisposeFailure(session, error));
    }
    for (const [turnKey, failure] of this.#failures) {
      if (now - failure.at >= this.#options.failureReplayMs) this.#failures.delete(turnKey);
    }
  }

  async #dispose(session: Session): Promise<void> {
    this.#index.forget(session.key);
    try {
      await session.dispose(this.#options.retireTimeoutMs);
    } finally {
      this.#options.guard.forget(session.key);
      await this.#options.workspace.remove(session.key).catch((error: unknown) => {
        this.#options.logger.warn({ err: error, session: session.key }, 'could not remove workspace');
      });
    }
  }

  async *#turn(
    session: Session,
    request: TurnRequest,
    turn: { model: string; turnKey: string; digests: string[]; trailing: TrailingTurn },
    signal: AbortSignal,
  ): AsyncGenerator<TurnEvent, void> {
    const log = this.#options.logger.child({ session: session.key, protocol: request.protocol });
    // One run per agent: a different turn for a busy conversation waits (bounded) for the running one,
    // which its client normally has just abandoned.
    if (!(await session.acquire(2 * this.#options.retireTimeoutMs))) {
      yield {
        type: 'error',
        error: createTurnError(
          'rate-limit',
          'This conversation already has a turn in progress; retry when it finishes.',
        ),
      };
      return;
    }
    if (signal.aborted) {
      // The client left while this turn waited for the conversation: nothing was started.
      session.release();
      return;
    }
    session.lastUsedAt = Date.now();
    session.clearParkDeadline();
    this.#counters.turns += 1;
    const { model, turnKey, digests, trailing } = turn;
    const tools = this.#options.mode === 'bridge' ? request.tools : [];
    const pump = new EventPump({
      tools,
      forwardToolCall: (call) => {
        const check = this.#options.guard.check(session.key, call, {
          workspaceDir: session.workspaceDir,
          ...(session.hostRoot === undefined ? {} : { hostRoot: session.hostRoot }),
        });
        if (check.forward) return true;
        session.run?.resolveToolCalls([
          { toolCallId: call.toolCallId, content: [{ type: 'text', text: check.correction }], isError: true },
        ]);
        return false;
      },
    });
    // The last subscriber left: cancel the SDK run for real — unless the response already reached its
    // boundary (a parked tool batch or the run's end), which a consumer stopping after the terminal event
    // must not undo.
    const onAbort = (): void => {
      if (pump.outcome.kind === 'interrupted') void session.retireRun(this.#options.retireTimeoutMs);
    };
    try {
      const plan = planTurn(
        {
          hasAgent: session.upstream !== undefined,
          // A run that died while parked cannot take results: it is treated as absent and replayed.
          parkedToolCallIds: session.liveParkedToolCallIds(),
          committed: session.committed,
          interrupted: session.interrupted,
          toolsChanged: session.runToolNames !== toolNamesKey(tools),
          heldBeforeRun: session.committedBeforeRun,
        },
        request.messages,
        digests,
        trailing,
      );
      log.debug(
        { plan: plan.kind, ...(plan.kind === 'replay' ? { reason: plan.reason } : {}) },
        'planned turn',
      );
      await this.#startOrResume(session, request, { model, digests }, plan, tools);
      signal.addEventListener('abort', onAbort, { once: true });
      // The client may have gone while the agent was being created: cancel at once, not at its first event.
      if (signal.aborted) onAbort();
      const events = session.run?.events;
      if (events === undefined)
        throw new BridgeError(createTurnError('api', 'The Cursor run is not available.'));
      for await (const event of pump.pump(events)) {
        if (event.type === 'error') {
          this.#counters.failedTurns += 1;
          if (request.stream) this.#failures.set(turnKey, { error: event.error, at: Date.now() });
        } else if (event.type === 'turn-end') {
          this.#failures.delete(turnKey);
        }
        yield event;
      }
    } catch (error) {
      const turnError = toTurnError(error);
      log.warn({ error: turnError, err: error }, 'turn failed');
      this.#counters.failedTurns += 1;
      if (request.stream) this.#failures.set(turnKey, { error: turnError, at: Date.now() });
      pump.outcome = { kind: 'failed' };
      yield { type: 'error', error: turnError };
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.#options.guard.endTurn(session.key);
      // The consumer may stop reading right after the terminal event; the pump's outcome, set before that
      // event is yielded, says whether the response reached its boundary.
      await this.#settle(session, pump, digests, log);
      session.release();
    }
  }

  async #startOrResume(
    session: Session,
    request: TurnRequest,
    { model, digests }: { model: string; digests: string[] },
    plan: Plan,
    tools: TurnRequest['tools'],
  ): Promise<void> {
    if (plan.kind === 'resume') {
      this.#counters.resumed += 1;
      session.committedBeforeRun = undefined;
      session.run?.resolveToolCalls(plan.results);
      session.parkedToolCallIds = [];
      return;
    }
    if (plan.kind === 'replay') {
      this.#counters.replayed += 1;
      if (session.upstream !== undefined) await session.dispose(this.#options.retireTimeoutMs);
    } else {
      this.#counters.slim += 1;
      if (session.run !== undefined)
        this.#options.logger.info(
          { session: session.key },
          'the tool set changed while tool calls were parked; re-sending the turn with the new tools',
        );
      await session.retireRun(this.#options.retireTimeoutMs);
    }
    const prepared = await this.#options.workspace.prepare(session.key, request);
    session.workspaceDir = prepared.workspaceDir;
    session.hostRoot = prepared.hostRoot;
    session.upstream ??= await this.#options.upstream.createSession({
      workspaceDir: prepared.workspaceDir,
      mode: this.#options.mode,
    });
    const input: UpstreamRunInput = {
      prompt:
        plan.kind === 'slim'
          ? buildSlimPrompt(plan.newMessages, prepared.grounding)
          : buildFullPrompt(request, prepared.grounding),
      tools,
      model,
      reasoning: request.reasoning,
    };
    // Until the run reports otherwise, the agent holds the transcript up to this request. A run cut short
    // writes no checkpoint: the agent then holds only what it held before (nothing, for a fresh agent).
    session.committedBeforeRun = plan.kind === 'slim' ? [...plan.held] : undefined;
    session.committed = digests;
    session.interrupted = false;
    const run = await session.upstream.startRun(input);
    session.run = run;
    session.runToolNames = toolNamesKey(tools);
  }

  /** Record what the agent now holds and what happens to the run after this response. */
  async #settle(session: Session, pump: EventPump, digests: string[], log: Logger): Promise<void> {
    const outcome = pump.outcome;
    if (outcome.kind === 'tool-use') {
      session.parkedToolCallIds = outcome.toolCallIds;
      session.committed = [...digests, assistantDigest(pump.output.text, pump.output.toolCalls)];
      session.armParkDeadline(this.#options.parkTimeoutMs, () => {
        log.warn('parked tool calls expired without a client result; cancelling the run');
        void session.retireRun(this.#options.retireTimeoutMs);
      });
      return;
    }
    if (outcome.kind === 'finished') {
      session.run = undefined;
      session.committed = [...digests, assistantDigest(pump.output.text, [])];
      return;
    }
    // Failed, cancelled or interrupted: stop the run. A cut-short run checkpoints nothing, so the agent
    // holds what it held before this turn; a following request re-sends the cut turn with a slim
    // follow-up, or replays in full when that history is unknown.
    await session.retireRun(this.#options.retireTimeoutMs);
    session.committed = outcome.kind === 'failed' ? undefined : session.committedBeforeRun;
    session.interrupted = session.committed !== undefined;
  }
}
