/**
 * A scripted {@link UpstreamPort} for tests, in the manner of `vercel/ai`'s mock language model: give it one
 * script, an array of scripts (one per run, in order) or a function; it records every call.
 *
 * A run keeps its host tool calls in the {@link ToolCallLedger} the Cursor upstream keeps them in, so the
 * engine meets the same id rules: an id parked before is not announced again, a corrected call is never
 * pending and repeats its correction, a result for a settled call is ignored, and one for an id never parked
 * is reported unknown.
 */

import { BridgeError, type TurnError } from '../../turn/turn-error.js';
import { ToolCallLedger } from '../tool-call-ledger.js';
import type {
  UpstreamEvent,
  UpstreamPort,
  UpstreamRun,
  UpstreamRunInput,
  UpstreamSession,
  UpstreamSessionOptions,
  UpstreamToolResult,
} from '../upstream-port.js';

type ToolCallEvent = Extract<UpstreamEvent, { type: 'tool-call' }>;

/** An event as a script states it: a tool call's `parkedAt` is stamped when the run emits it. */
export type ScriptEvent =
  Exclude<UpstreamEvent, ToolCallEvent> | (Omit<ToolCallEvent, 'parkedAt'> & { parkedAt?: number });

export type ScriptStep =
  | ScriptEvent
  /** Park until every emitted tool call is resolved (or the run is cancelled). */
  | { type: 'await-tool-results' }
  | { type: 'delay'; ms: number }
  /** Park until `until` settles (or the run is cancelled): a gate the test opens, instead of a delay. */
  | { type: 'wait'; until: PromiseLike<unknown> }
  /** The backend saved a conversation checkpoint of the turn so far (see {@link UpstreamRun.historyAdvanced}). */
  | { type: 'checkpoint' }
  /** Compute events from what the run has seen so far (e.g. echo a tool result). */
  | { type: 'emit'; events: (context: ScriptContext) => ScriptEvent[] };

export type ScriptContext = { input: UpstreamRunInput; toolResults: UpstreamToolResult[] };

/** A run's script, or a failure `startRun` rejects with (as the SDK's typed errors do). */
export type Script = ScriptStep[] | { startError: TurnError };

export type ScriptSource = Script | Script[] | ((input: UpstreamRunInput, runIndex: number) => Script);

export type ScriptedCall = {
  sessionId: string;
  sessionOptions: UpstreamSessionOptions;
  input: UpstreamRunInput;
  toolResults: UpstreamToolResult[];
  cancelled: boolean;
  /** A `checkpoint` step ran. */
  checkpointed: boolean;
};

export class ScriptedUpstream implements UpstreamPort {
  /** Every `startRun`, in order. */
  readonly calls: ScriptedCall[] = [];
  readonly sessions: ScriptedSession[] = [];
  #source: ScriptSource;

  /** When set, `preflight` rejects with it (an auth or model failure before the stream opens). */
  preflightError: TurnError | undefined;

  /** Set before the bridge is built to give it a model catalog (its model resolution reads it). */
  listModels?: () => Promise<ReadonlyArray<{ id: string; aliases?: readonly string[] }>>;

  constructor(source: ScriptSource) {
    this.#source = source;
  }

  async preflight(): Promise<void> {
    if (this.preflightError !== undefined) throw new BridgeError(this.preflightError);
  }

  async createSession(options: UpstreamSessionOptions): Promise<UpstreamSession> {
    const session = new ScriptedSession(this, `scripted-${this.sessions.length + 1}`, options);
    this.sessions.push(session);
    return session;
  }

  async close(): Promise<void> {
    await Promise.all(this.sessions.map((session) => session.dispose()));
  }

  /** @internal */
  scriptFor(input: UpstreamRunInput): Script {
    const index = this.calls.length - 1;
    const source = this.#source;
    if (typeof source === 'function') return source(input, index);
    if (Array.isArray(source) && source.length > 0 && isScript(source[0])) {
      const scripts = source as Script[];
      const script = scripts[Math.min(index, scripts.length - 1)];
      if (script === undefined) throw new Error('scripted upstream: no script');
      return script;
    }
    return source as Script;
  }
}

const isScript = (value: unknown): boolean =>
  Array.isArray(value) || (typeof value === 'object' && value !== null && 'startError' in value);

export class ScriptedSession implements UpstreamSession {
  disposed = false;
  #upstream: ScriptedUpstream;
  #options: UpstreamSessionOptions;
  #active: ScriptedRun | undefined;
  readonly id: string;

  constructor(upstream: ScriptedUpstream, id: string, options: UpstreamSessionOptions) {
    this.#upstream = upstream;
    this.id = id;
    this.#options = options;
  }

  /** The latest run (tests use it to end a run behind the engine's back). */
  get activeRun(): UpstreamRun | undefined {
    return this.#active;
  }

  async startRun(input: UpstreamRunInput): Promise<UpstreamRun> {
    if (this.disposed) throw new Error(`scripted session ${this.id} is disposed`);
    if (this.#active?.running) throw new Error(`scripted session ${this.id} already has an active run`);
    const call: ScriptedCall = {
      sessionId: this.id,
      sessionOptions: this.#options,
      input,
      toolResults: [],
      cancelled: false,
      checkpointed: false,
    };
    this.#upstream.calls.push(call);
    const script = this.#upstream.scriptFor(input);
    if (!Array.isArray(script)) throw new BridgeError(script.startError);
    this.#active = new ScriptedRun(`run-${this.#upstream.calls.length}`, script, call);
    return this.#active;
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    await this.#active?.cancel();
  }
}

class ScriptedRun implements UpstreamRun {
  readonly id: string;
  readonly events: AsyncIterator<UpstreamEvent>;
  running = true;
  readonly #toolCalls = new ToolCallLedger();
  #call: ScriptedCall;
  #wake: (() => void) | undefined;

  constructor(id: string, script: ScriptStep[], call: ScriptedCall) {
    this.id = id;
    this.#call = call;
    this.events = this.#play(script);
  }

  pendingToolCalls(): string[] {
    return this.#toolCalls.pending();
  }

  historyAdvanced(): boolean {
    return this.#call.checkpointed;
  }

  resolveToolCalls(results: UpstreamToolResult[]): { unknown: string[] } {
    const unknown: string[] = [];
    for (const result of results) {
      const resolution = this.#toolCalls.resolve(result.toolCallId);
      if (resolution === 'unknown') unknown.push(result.toolCallId);
      if (resolution === 'resolved') this.#call.toolResults.push(result);
    }
    this.#wake?.();
    return { unknown };
  }

  async cancel(): Promise<void> {
    if (!this.running) return;
    this.#call.cancelled = true;
    // Retired once cancelled (as the SDK's cancel resolves once the run retired), read or not.
    this.running = false;
    this.#toolCalls.abandonAll();
    this.#wake?.();
  }

  async *#play(script: ScriptStep[]): AsyncGenerator<UpstreamEvent, void> {
    try {
      for (const step of script) {
        if (this.#call.cancelled) break;
        switch (step.type) {
          case 'delay':
            await this.#sleep(step.ms);
            break;
          case 'wait': {
            // `#wake` also fires on tool results: only the gate or a cancel ends the wait.
            let open = false;
            const opened = (): void => {
              open = true;
              this.#wake?.();
            };
            Promise.resolve(step.until).then(opened, opened);
            while (!open && !this.#call.cancelled) {
              await new Promise<void>((resolve) => (this.#wake = resolve));
            }
            break;
          }
          case 'checkpoint':
            this.#call.checkpointed = true;
            break;
          case 'await-tool-results':
            while (this.#toolCalls.pending().length > 0 && !this.#call.cancelled) {
              await new Promise<void>((resolve) => (this.#wake = resolve));
            }
            break;
          case 'emit':
            for (const event of step.events({
              input: this.#call.input,
              toolResults: this.#call.toolResults,
            })) {
              yield* this.#emit(event);
            }
            break;
          default:
            yield* this.#emit(step);
        }
        if (step.type === 'end' || step.type === 'error') return;
      }
      if (this.#call.cancelled) yield { type: 'end', status: 'cancelled' };
    } finally {
      this.running = false;
    }
  }

  *#emit(step: ScriptEvent): Generator<UpstreamEvent> {
    if (step.type === 'tool-call') {
      const event = this.#park(step);
      if (event !== undefined) yield event;
      return;
    }
    if (step.type === 'tool-batch-end') this.#toolCalls.endBatch();
    // A run is over once its terminal event exists, whether or not anyone reads further.
    if (step.type === 'end' || step.type === 'error') {
      this.running = false;
      this.#toolCalls.abandonAll();
    }
    yield step;
  }

  /**
   * A scripted call is executed the moment it is emitted, as the Cursor upstream's `execute`: a call the
   * check corrects is answered at once and never announced; any other parks, and is announced unless its
   * id parked before.
   */
  #park(step: Extract<ScriptEvent, { type: 'tool-call' }>): ToolCallEvent | undefined {
    const { toolCallId, toolName, input } = step;
    const corrected = this.#toolCalls.correctionFor(toolCallId);
    const check =
      corrected === undefined
        ? this.#call.input.checkToolCall?.(step)
        : { forward: false as const, correction: corrected };
    if (check !== undefined && !check.forward) {
      const correction = this.#toolCalls.correct({ toolCallId, toolName, args: input }, check.correction);
      this.#call.toolResults.push({
        toolCallId,
        content: [{ type: 'text', text: correction }],
        isError: true,
      });
      return undefined;
    }
    const parkedAt = step.parkedAt ?? Date.now();
    if (this.#toolCalls.park({ toolCallId, toolName, args: input, parkedAt }) === undefined) return undefined;
    return { ...step, parkedAt };
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
