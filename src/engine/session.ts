/**
 * One client conversation and the Cursor agent that serves it, as an explicit state machine:
 *
 * - `idle`: no run. `committed` is what the agent holds (digests), undefined when unknown; `interrupted`
 *   says the last run was cut short, so the client's next transcript may carry a partial answer.
 * - `running`: a run streams a client response.
 * - `parked`: the run waits for the client's results of the calls it announced (the run keeps them:
 *   {@link UpstreamRun.pendingToolCalls}); the agent then holds `committed`.
 *
 * Turns of one conversation never overlap (the engine's coalescer serialises them per session); the
 * session only checks that its transitions are called in a legal state.
 */

import type { TurnProtocol } from '../turn/turn-request.js';
import type { UpstreamRun, UpstreamSession, UpstreamToolResult } from '../upstream/upstream-port.js';
import { createSessionKey } from '../workspace/session-key.js';
import { emptyTotals, type ConversationTotals } from './usage-accounting.js';
import { sleep } from '../../lib/sleep.js';

/** A started run and what it was started with. */
export type ActiveRun = {
  readonly run: UpstreamRun;
  /** The tool names the run was started with (see the engine's `toolNamesKey`). */
  readonly toolNames: string;
  /**
   * What the agent held before this run started, restored when the run is cut short: a cancelled run
   * checkpoints nothing. Undefined when unknown (or nothing, for a fresh agent).
   */
  readonly heldBeforeRun: readonly string[] | undefined;
  /** The scratch workspace and host root the run's tool calls are checked against. */
  readonly workspaceDir: string;
  readonly hostRoot: string | undefined;
};

export type SessionState =
  | {
      readonly kind: 'idle';
      readonly committed: readonly string[] | undefined;
      readonly interrupted: boolean;
    }
  | { readonly kind: 'running'; readonly active: ActiveRun }
  | { readonly kind: 'parked'; readonly active: ActiveRun; readonly committed: readonly string[] };

/**
 * What an operator sees of a conversation besides its usage (the console, `/debug/conversations`): who
 * talks to it in which protocol, on which model and route, and how many turns it ran. No conversation
 * text.
 */
export type ConversationProfile = {
  protocol: TurnProtocol | undefined;
  /** The client's product name (see `clientName`). */
  client: string | undefined;
  /** The Cursor model of its latest turn, and the rule that chose it. */
  model: string | undefined;
  route: string | undefined;
  /** Turns run (a retry that shared or replayed another request's run is not one). */
  turns: number;
};

/** A host tool call the parked run waits for: its tool's name and when it was parked (ms since the epoch). */
export type ParkedToolCall = { toolCallId: string; toolName: string; parkedAt: number };

/** Tool calls remembered per run before the ones no longer awaited are dropped. */
const maxRememberedToolCalls = 64;

/** How a bounded wait for a run or agent to retire ended. */
export type Retirement = 'retired' | 'failed' | 'timed-out';

/** Whether `promise` settled within `timeoutMs`: `failed` when it rejected, `timed-out` when it had not settled. */
const settleWithin = (promise: Promise<unknown>, timeoutMs: number): Promise<Retirement> =>
  Promise.race([
    promise.then(
      () => 'retired' as const,
      () => 'failed' as const,
    ),
    sleep(timeoutMs, { unref: true }).then(() => 'timed-out' as const),
  ]);

/**
 * Told once when a run did not retire cleanly (its cancel failed or outlived the bound) and the agent
 * was abandoned: `disposed` is how the agent's own disposal then ended.
 */
export type OnAgentAbandoned = (abandoned: { run: Retirement; disposed: Retirement }) => void;

export class Session {
  /** 32 hex chars; names the scratch workspace. Opaque, never derived from conversation text. */
  readonly key = createSessionKey();
  /** What the conversation's finished runs used and cost, over every agent it had. */
  readonly totals: ConversationTotals = emptyTotals();
  readonly profile: ConversationProfile = {
    protocol: undefined,
    client: undefined,
    model: undefined,
    route: undefined,
    turns: 0,
  };
  /** The current run's host tool calls by id (names and park times for {@link parkedToolCalls}). */
  readonly #toolCalls = new Map<string, ParkedToolCall>();
  #state: SessionState = { kind: 'idle', committed: undefined, interrupted: false };
  #agent: UpstreamSession | undefined;
  #parkDeadline: NodeJS.Timeout | undefined;
  /** The last run's retirement; settled when no run is retiring. */
  #retiring: Promise<boolean> = Promise.resolve(true);
  readonly #retireTimeoutMs: number;
  readonly #onAbandoned: OnAgentAbandoned | undefined;

  /**
   * `retireTimeoutMs` bounds waiting for a run or the agent to retire, so a stuck SDK cannot hang us;
   * `onAbandoned` hears of every agent given up because its run would not retire.
   */
  constructor(retireTimeoutMs: number, onAbandoned?: OnAgentAbandoned) {
    this.#retireTimeoutMs = retireTimeoutMs;
    this.#onAbandoned = onAbandoned;
  }

  get state(): SessionState {
    return this.#state;
  }

  /** The Cursor agent, once created. */
  get agent(): UpstreamSession | undefined {
    return this.#agent;
  }

  /** The current run, running or parked. */
  get run(): UpstreamRun | undefined {
    return this.#state.kind === 'idle' ? undefined : this.#state.active.run;
  }

  /** Host tool calls parked and still awaited by the run. */
  get parkedCalls(): number {
    return this.parkedToolCallIds().length;
  }

  /** The ids of the calls the parked run still waits for; empty when not parked or the run has died. */
  parkedToolCallIds(): readonly string[] {
    return this.#state.kind === 'parked' ? this.#state.active.run.pendingToolCalls() : [];
  }

  /** The calls the parked run still waits for, with their tools' names and when each was parked. */
  parkedToolCalls(): ParkedToolCall[] {
    return this.parkedToolCallIds().flatMap((id) => {
      const call = this.#toolCalls.get(id);
      return call === undefined ? [] : [call];
    });
  }

  /** A turn of this conversation starts (a run's producer, not a retry served from another's run). */
  noteTurn(turn: Omit<ConversationProfile, 'turns'>): void {
    Object.assign(this.profile, turn);
    this.profile.turns += 1;
  }

  /** The current run announced a host tool call to the client. */
  noteToolCall(call: ParkedToolCall): void {
    if (this.#toolCalls.size >= maxRememberedToolCalls) {
      const awaited = new Set(this.run?.pendingToolCalls() ?? []);
      for (const id of this.#toolCalls.keys()) if (!awaited.has(id)) this.#toolCalls.delete(id);
    }
    // Only what the summary shows: the call's input is conversation content, and stays out of here.
    const { toolCallId, toolName, parkedAt } = call;
    this.#toolCalls.set(toolCallId, { toolCallId, toolName, parkedAt });
  }

  /** The session is idle with an agent whose history is known exactly (a slim prompt can follow it). */
  knowsHistory(): boolean {
    return this.#agent !== undefined && this.#state.kind === 'idle' && this.#state.committed !== undefined;
  }

  /** Create the agent unless there is one. */
  async ensureAgent(create: () => Promise<UpstreamSession>): Promise<UpstreamSession> {
    this.#agent ??= await create();
    return this.#agent;
  }

  /** idle → running: a run was started on the agent. */
  started(active: ActiveRun): void {
    this.#expect('idle', 'start a run');
    this.#toolCalls.clear();
    this.#state = { kind: 'running', active };
  }

  /** parked → running: hand the client's results to the parked run, which continues. */
  resume(results: UpstreamToolResult[]): void {
    if (this.#state.kind !== 'parked') throw this.#illegal('resume');
    this.#clearParkDeadline();
    const { active } = this.#state;
    this.#state = { kind: 'running', active };
    active.run.resolveToolCalls(results);
  }

  /** The running run's tool calls are checked against this workspace and host root from now on. */
  rehost(workspaceDir: string, hostRoot: string | undefined): void {
    if (this.#state.kind !== 'running') throw this.#illegal('rehost');
    this.#state = { kind: 'running', active: { ...this.#state.active, workspaceDir, hostRoot } };
  }

  /**
   * running → parked: the response ended at a tool batch; the agent holds `committed`. `onExpire` runs
   * when the client never comes back within `deadlineMs`.
   */
  park(committed: readonly string[], deadlineMs: number, onExpire: () => void): void {
    if (this.#state.kind !== 'running') throw this.#illegal('park');
    this.#state = { kind: 'parked', active: this.#state.active, committed };
    this.#parkDeadline = setTimeout(onExpire, deadlineMs);
    this.#parkDeadline.unref();
  }

  /** running → idle: the run ended; the agent holds `committed`. */
  finished(committed: readonly string[]): void {
    if (this.#state.kind !== 'running') throw this.#illegal('finish');
    this.#state = { kind: 'idle', committed, interrupted: false };
  }

  /**
   * Any → idle: cancel the run (settling its parked calls), bounded so a stuck SDK cannot hang us. A
   * run cut short checkpoints nothing, so the agent holds what it held before the run; after a failure
   * that is unknown, and so it is when the backend checkpointed part of the run (see
   * {@link UpstreamRun.historyAdvanced}). Calling it when idle waits for a retirement still under way (and
   * records a failure). Resolves whether the run retired cleanly.
   *
   * A run whose cancel fails or outlives the bound abandons its agent: the session forgets the agent and what
   * it held, so the next turn gets a fresh agent and a full replay; the stuck agent is disposed in the
   * background.
   */
  async retireRun(options: { failed?: boolean } = {}): Promise<boolean> {
    this.#clearParkDeadline();
    const state = this.#state;
    if (state.kind === 'idle') {
      if (options.failed === true) this.#state = { kind: 'idle', committed: undefined, interrupted: false };
      return this.#retiring;
    }
    const held = options.failed === true ? undefined : state.active.heldBeforeRun;
    this.#state = { kind: 'idle', committed: held, interrupted: held !== undefined };
    const agent = this.#agent;
    const { run } = state.active;
    const retiring = settleWithin(run.cancel(), this.#retireTimeoutMs).then((retirement) => {
      if (retirement === 'retired') {
        // The backend checkpointed part of the cut turn: what the agent holds no longer lines up.
        if (held !== undefined && run.historyAdvanced()) this.#forgetHistory(held);
        return true;
      }
      this.#abandonAgent(agent, retirement);
      return false;
    });
    this.#retiring = retiring;
    return retiring;
  }

  /** Resolves once no run of this session is retiring (whether it retired cleanly). */
  async retired(): Promise<boolean> {
    return this.#retiring;
  }

  /**
   * Retire the run and release the agent, each bounded by the retire bound; the session then holds
   * nothing. A run that would not retire has its agent abandoned (see {@link retireRun}); an agent whose
   * disposal fails rejects with that failure.
   */
  async dispose(): Promise<void> {
    await this.retireRun({ failed: true });
    const agent = this.#agent;
    this.#agent = undefined;
    if (agent === undefined) return;
    await Promise.race([agent.dispose(), sleep(this.#retireTimeoutMs, { unref: true })]);
  }

  /** What the agent holds is no longer `held` (unless a later turn already moved on). */
  #forgetHistory(held: readonly string[]): void {
    if (this.#state.kind === 'idle' && this.#state.committed === held)
      this.#state = { kind: 'idle', committed: undefined, interrupted: false };
  }

  /** Forget `agent` (unless already replaced) and dispose it in the background. */
  #abandonAgent(agent: UpstreamSession | undefined, run: Retirement): void {
    if (this.#agent === agent) {
      this.#agent = undefined;
      if (this.#state.kind === 'idle')
        this.#state = { kind: 'idle', committed: undefined, interrupted: false };
    }
    const disposal = agent === undefined ? Promise.resolve() : agent.dispose();
    void settleWithin(disposal, this.#retireTimeoutMs).then((disposed) =>
      this.#onAbandoned?.({ run, disposed }),
    );
  }

  #clearParkDeadline(): void {
    clearTimeout(this.#parkDeadline);
    this.#parkDeadline = undefined;
  }

  #expect(kind: SessionState['kind'], action: string): void {
    if (this.#state.kind !== kind) throw this.#illegal(action);
  }

  #illegal(action: string): Error {
    return new Error(`session ${this.key}: cannot ${action} while ${this.#state.kind}`);
  }
}
