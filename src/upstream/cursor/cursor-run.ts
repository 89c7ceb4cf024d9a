/**
 * One SDK run seen through the upstream port. It merges the SDK's two event sources — `onDelta`
 * (text, thinking, tool-call signals, usage) and `run.stream()` (thinking, text, status) — into one
 * ordered UpstreamEvent stream without duplicates, and ends with exactly one terminal event taken from
 * `run.wait()`. Its host tool calls (ids, order, batches, results) are its {@link RunToolCalls}'.
 */

import type { InteractionUpdate, Run, SDKMessage } from '@cursor/sdk';
import type { Logger } from 'pino';
import { CUSTOM_USER_TOOLS_SERVER_NAME } from '../../../mcp/server-name.js';
import { createTurnError } from '../../turn/turn-error.js';
import type { UpstreamEvent, UpstreamRun, UpstreamToolResult } from '../upstream-port.js';
import { BackendFlow, type BackendFlowOptions } from './backend-flow.js';
import { ConsumerBackpressure } from './consumer-backpressure.js';
import { DeltaMerger } from './delta-merger.js';
import { mapCursorRunError } from './map-cursor-error.js';
import { mapCursorUsage } from './map-cursor-usage.js';
import { RunEventQueue } from './run-event-queue.js';
import { RunWatchdog } from './run-watchdog.js';
import type { RunToolCalls, RunToolCallSink } from './host-tools/run-tool-calls.js';
import { completedWebCall, type CheckpointWebCall } from './hosted-tools/checkpoint-web-calls.js';
import { sleep } from '../../../lib/sleep.js';

export type CursorRunOptions = {
  /** The run's host tool calls, made for the sink the run gives (see {@link RunToolCalls}). */
  toolCalls: (sink: RunToolCallSink) => RunToolCalls;
  logger: Logger;
  /** Bound on waiting for `run.stream()` to drain after `run.wait()` resolved. */
  drainMs?: number;
  /**
   * Longest wait from the send to the run's first upstream event before the turn ends with a retryable
   * error and the run is cancelled; 0 disables. Default {@link DEFAULT_FIRST_EVENT_TIMEOUT_MS}.
   */
  firstEventTimeoutMs?: number;
  /**
   * Longest silence between upstream events, not counted while host tool calls are parked for the
   * client or a built-in tool runs locally; 0 disables. Default {@link DEFAULT_IDLE_TIMEOUT_MS}.
   */
  idleTimeoutMs?: number;
  /**
   * Text and reasoning the consumer has not taken yet (UTF-16 units) past which the run stops reading
   * the backend, until half of it was taken. Default {@link DEFAULT_MAX_PENDING_CHARS}.
   */
  maxPendingChars?: number;
  /** While paused, the trickle that keeps the SDK's own stall detector quiet (see {@link BackendFlow}). */
  flow?: BackendFlowOptions;
  /** Whether the agent's store saved a conversation checkpoint since this run was sent. */
  historyAdvanced?: () => boolean;
  /** Called once when the run has finished, with its terminal event (queued already). */
  onFinished?: (event: Extract<UpstreamEvent, { type: 'end' | 'error' }>) => void;
};

/** Default bound on the wait for a run's first upstream event (the SDK's own retries take minutes). */
export const DEFAULT_FIRST_EVENT_TIMEOUT_MS = 45_000;
/** Default bound on the silence between upstream events while the run is not parked. */
export const DEFAULT_IDLE_TIMEOUT_MS = 45_000;
/** Default bound on the text a run holds for a consumer that does not take it: 1 Mi UTF-16 units. */
export const DEFAULT_MAX_PENDING_CHARS = 1 << 20;

/** Whether the warning that the SDK's backend stream was not recognised was logged (once per process). */
let warnedUnrecognisedStream = false;

const backendMessageTypes: ReadonlySet<SDKMessage['type']> = new Set([
  'assistant',
  'thinking',
  'tool_call',
  'task',
  'usage',
]);

const seconds = (ms: number): string => (ms < 1000 ? `${ms} ms` : `${Number((ms / 1000).toFixed(1))} s`);

const isCustomToolCall = (toolCall: unknown): boolean => {
  if (typeof toolCall !== 'object' || toolCall === null) return false;
  const { type, args } = toolCall as { type?: unknown; args?: { providerIdentifier?: unknown } };
  return (
    type === 'mcp' &&
    (args?.providerIdentifier === undefined || args.providerIdentifier === CUSTOM_USER_TOOLS_SERVER_NAME)
  );
};

/** How the SDK prefixes a custom tool's name when it reports the qualified name only. */
const customToolNamePrefix = `${CUSTOM_USER_TOOLS_SERVER_NAME}-`;

const customToolCall = (toolCall: unknown): { toolName: string; args: unknown } => {
  const args = (toolCall as { args?: { toolName?: unknown; name?: unknown; args?: unknown } }).args;
  const name = typeof args?.name === 'string' ? args.name : '';
  const toolName =
    typeof args?.toolName === 'string'
      ? args.toolName
      : name.startsWith(customToolNamePrefix)
        ? name.slice(customToolNamePrefix.length)
        : name;
  return { toolName, args: args?.args ?? {} };
};

/**
 * A callback handed to the SDK that reaches its target only until released. The SDK may keep what a run
 * was given (the send's options with `onDelta`, the consumers of its stream and result) reachable after
 * the run ended, for as long as it keeps the run's request context; released, the callback holds nothing
 * of the run. Built outside the class so the callback's closure captures the target alone, never `this`.
 */
const relay = <T>(deliver: (value: T) => void): { call: (value: T) => void; release: () => void } => {
  let target: ((value: T) => void) | undefined = deliver;
  return {
    call: (value) => target?.(value),
    release: () => {
      target = undefined;
    },
  };
};

type TerminalEvent = Extract<UpstreamEvent, { type: 'end' | 'error' }>;

/**
 * Read an SDK run to its end: its stream's messages to `onMessage`, then its terminal event (after the
 * stream drained, or `drainMs` after `wait()` resolved) to `onTerminal`. Holds only what it is given, so
 * the SDK keeping the run's promises keeps no {@link CursorRun}.
 */
const followRun = (
  run: Run,
  options: {
    onMessage: (message: SDKMessage) => void;
    onTerminal: (event: TerminalEvent) => void;
    logger: Logger;
    drainMs: number;
  },
): void => {
  const { onMessage, onTerminal, logger, drainMs } = options;
  const drained = (async () => {
    try {
      for await (const message of run.stream()) onMessage(message);
    } catch (error) {
      // The live buffer overflows only when we stop reading; the run itself goes on, and onDelta still
      // delivers everything that matters.
      logger.debug({ err: error }, 'run.stream() ended early');
    }
  })();
  run
    .wait()
    .then(async (result) => {
      await Promise.race([drained, sleep(drainMs, { unref: true })]);
      onTerminal(
        result.status === 'error'
          ? { type: 'error', error: mapCursorRunError(result.error) }
          : { type: 'end', status: result.status === 'cancelled' ? 'cancelled' : 'finished' },
      );
    })
    .catch((error: unknown) => {
      logger.error({ err: error }, 'run.wait() failed');
      onTerminal({ type: 'error', error: mapCursorRunError({ message: String(error) }) });
    });
};

export class CursorRun implements UpstreamRun {
  readonly #queue = new RunEventQueue((event) => {
    if (event.type === 'text-delta' || event.type === 'reasoning-delta')
      this.#backpressure.taken(event.text.length);
  });
  readonly events = this.#queue.events;
  /** The backend streams of this run (see {@link BackendFlow.expect}). */
  readonly flow: BackendFlow;
  #run: Run | undefined;
  /** The run's host tool calls. */
  readonly toolCalls: RunToolCalls;
  readonly #options: Required<Omit<CursorRunOptions, 'flow' | 'toolCalls'>>;
  readonly #backpressure: ConsumerBackpressure;
  readonly #text = new DeltaMerger();
  readonly #thinking = new DeltaMerger();
  /** Text and thinking positions at the first start of each step, to recognise an SDK retry's replay. */
  readonly #stepStarts = new Map<number, { text: number; thinking: number }>();
  #thinkingOpen = false;
  /** Resolves once the run has finished (its terminal event is queued). */
  readonly #terminal: Promise<void>;
  #onTerminal: () => void = () => undefined;
  #finished = false;
  /** What the SDK was handed: released when the run finishes, so the SDK keeps no finished run. */
  readonly #delta = relay<{ update: InteractionUpdate }>(({ update }) => this.#onUpdate(update));
  readonly #stream = relay<SDKMessage>((message) => this.#onStreamMessage(message));
  readonly #result = relay<TerminalEvent>((event) => this.#finish(event));
  /** `callId`s of built-in tool calls started and not completed (agent mode: they execute locally). */
  readonly #localCalls = new Set<string>();
  readonly #watchdog: RunWatchdog;
  /** Ids of the hosted web calls already emitted. */
  readonly #reportedWebCalls = new Set<string>();
  #webCallsUnreadable = false;
  readonly #expired: Promise<void>;
  #onExpired: () => void = () => undefined;
  constructor(options: CursorRunOptions) {
    this.#options = {
      drainMs: 500,
      firstEventTimeoutMs: DEFAULT_FIRST_EVENT_TIMEOUT_MS,
      idleTimeoutMs: DEFAULT_IDLE_TIMEOUT_MS,
      maxPendingChars: DEFAULT_MAX_PENDING_CHARS,
      historyAdvanced: () => false,
      onFinished: () => undefined,
      ...options,
    };
    this.toolCalls = options.toolCalls({
      emit: (event) => {
        if (event.type === 'tool-call') this.#closeThinking();
        this.#push(event);
      },
      onWaitingChanged: () => this.#updateWatchdog(),
    });
    this.flow = new BackendFlow(options.flow);
    this.#backpressure = new ConsumerBackpressure({
      flow: this.flow,
      maxPendingChars: this.#options.maxPendingChars,
      onPaused: (pendingChars) => this.#backendPaused(pendingChars),
      onResumed: () => this.#updateWatchdog(),
    });
    this.#expired = new Promise((resolve) => (this.#onExpired = resolve));
    this.#terminal = new Promise((resolve) => (this.#onTerminal = resolve));
    this.#watchdog = new RunWatchdog({
      firstEventMs: this.#options.firstEventTimeoutMs,
      idleMs: this.#options.idleTimeoutMs,
      onExpired: (expired) => this.#expire(expired.phase, expired.afterMs),
    });
  }

  /**
   * Resolves when the silence bound ended the run (its error event is queued). `send()` can itself hang
   * on a dead backend, so the session races it against this.
   */
  get expired(): Promise<void> {
    return this.#expired;
  }

  get id(): string {
    return this.#run?.id ?? '';
  }

  get finished(): boolean {
    return this.#finished;
  }

  /**
   * The `onDelta` callback for `agent.send`. Runs before the Run object exists; once the run finished it
   * reaches nothing (the SDK may keep it longer than the run).
   */
  readonly onDelta: (delta: { update: InteractionUpdate }) => void = this.#delta.call;

  #onUpdate(update: InteractionUpdate): void {
    if (this.#finished) return;
    // The user message is echoed locally; everything else came from the backend.
    if (update.type !== 'user-message-appended') this.#watchdog.activity();
    switch (update.type) {
      case 'text-delta':
        this.#pushText('delta', update.text);
        break;
      case 'thinking-delta':
        this.#pushThinking('delta', update.text);
        break;
      case 'thinking-completed':
        this.#closeThinking();
        break;
      case 'step-started': {
        const start = this.#stepStarts.get(update.stepId);
        if (start === undefined) {
          this.#stepStarts.set(update.stepId, {
            text: this.#text.position,
            thinking: this.#thinking.position,
          });
        } else {
          // The SDK retried the stream and the server replays the run from this step: what it re-sends up
          // to the point already delivered must not reach the client twice.
          this.#text.rewind(start.text);
          this.#thinking.rewind(start.thinking);
        }
        break;
      }
      case 'tool-requests-listed':
        this.toolCalls.listed(update.callCount);
        break;
      case 'tool-call-started':
        if (isCustomToolCall(update.toolCall)) {
          const { toolName, args } = customToolCall(update.toolCall);
          this.toolCalls.started(update.callId, toolName, args);
        } else {
          this.#localCalls.add(update.callId);
          this.#updateWatchdog();
        }
        this.#closeThinking();
        break;
      case 'tool-call-completed':
        if (this.#localCalls.delete(update.callId)) this.#updateWatchdog();
        break;
      case 'turn-ended':
        if (update.usage !== undefined) this.#push({ type: 'usage', usage: mapCursorUsage(update.usage) });
        break;
      default:
        break;
    }
  }

  /**
   * The hosted web calls of this run's turn so far, as the latest checkpoint records them (every call,
   * each time): those not reported yet are emitted, in order, up to the first whose result is still to
   * come.
   */
  webCalls(calls: readonly CheckpointWebCall[]): void {
    if (this.#finished) return;
    for (const call of calls) {
      const complete = completedWebCall(call);
      if (complete === undefined) return;
      if (this.#reportedWebCalls.has(call.id)) continue;
      this.#reportedWebCalls.add(call.id);
      this.#closeThinking();
      this.#push({ type: 'web-call', call: complete });
    }
  }

  /** A checkpoint did not read back: its web calls cannot be reported (logged once per run). */
  webCallsUnreadable(reason: string): void {
    if (this.#webCallsUnreadable) return;
    this.#webCallsUnreadable = true;
    this.#options.logger.warn(
      { runId: this.id || undefined, reason },
      "Cursor's record of the run's hosted web searches could not be read; they are not reported to the client",
    );
  }

  /** Attach the SDK run once `send()` resolved: drain its stream and watch for the terminal result. */
  attach(run: Run): void {
    this.#run = run;
    if (this.#finished) {
      // The silence bound ended the turn while `send()` was still pending: retire the late run.
      this.#cancelExpired(run);
      return;
    }
    followRun(run, {
      onMessage: this.#stream.call,
      onTerminal: this.#result.call,
      logger: this.#options.logger,
      drainMs: this.#options.drainMs,
    });
  }

  historyAdvanced(): boolean {
    return this.#options.historyAdvanced();
  }

  pendingToolCalls(): string[] {
    return this.toolCalls.pending();
  }

  resolveToolCalls(results: UpstreamToolResult[]): { unknown: string[] } {
    return this.toolCalls.resolve(results);
  }

  async cancel(): Promise<void> {
    if (this.#finished) return;
    this.toolCalls.abandon('the run was cancelled');
    try {
      await this.#run?.cancel();
    } catch (error) {
      this.#options.logger.warn({ err: error }, 'run.cancel() failed');
    }
    if (this.#run === undefined) this.#finish({ type: 'end', status: 'cancelled' });
    await this.#terminal;
  }

  /** Ends the run from outside when `send()` itself failed after the collector was created. */
  abandon(): void {
    this.#finish({ type: 'end', status: 'cancelled' });
  }

  #onStreamMessage(message: SDKMessage): void {
    if (this.#finished) return;
    // `status`, `system`, `user` and `request` messages are the SDK's own bookkeeping, not backend traffic.
    if (backendMessageTypes.has(message.type)) this.#watchdog.activity();
    if (message.type === 'thinking') {
      if (message.text === '') this.#closeThinking();
      else this.#pushThinking('stream', message.text);
    } else if (message.type === 'assistant') {
      for (const block of message.message.content)
        if (block.type === 'text') this.#pushText('stream', block.text);
    }
  }

  #pushText(source: string, text: string): void {
    const fresh = this.#text.accept(source, text);
    if (fresh === '') return;
    this.#closeThinking();
    this.#pushDelta('text-delta', fresh);
  }

  #pushThinking(source: string, text: string): void {
    const fresh = this.#thinking.accept(source, text);
    if (fresh === '') return;
    this.#thinkingOpen = true;
    this.#pushDelta('reasoning-delta', fresh);
  }

  #pushDelta(type: 'text-delta' | 'reasoning-delta', text: string): void {
    this.#queue.pushDelta(type, text);
    // A finished run's flow is disposed: there is nothing left to pause.
    this.#backpressure.handedOver(text.length, !this.#finished);
  }

  /**
   * The consumer is behind by more than the bound and the backend was paused. The silence that follows is
   * the consumer's, so the silence bound is suspended meanwhile; a consumer that never reads again is cut
   * off by its own stall deadline.
   */
  #backendPaused(pendingChars: number): void {
    this.#updateWatchdog();
    this.#options.logger.debug(
      { runId: this.id || undefined, pendingChars },
      'the consumer is behind; pausing the backend stream',
    );
    if (this.flow.attached === 0 && !warnedUnrecognisedStream) {
      warnedUnrecognisedStream = true;
      this.#options.logger.warn(
        'the SDK read the backend through a stream the bridge does not recognise: a client that stops ' +
          'reading holds the rest of its answer in memory until its stall deadline',
      );
    }
  }

  #push(event: UpstreamEvent): void {
    this.#queue.push(event);
  }

  #closeThinking(): void {
    if (!this.#thinkingOpen) return;
    this.#thinkingOpen = false;
    this.#push({ type: 'reasoning-end' });
  }

  /**
   * The bound is suspended while the run waits on the client (parked calls, or the backend paused for a
   * consumer that is behind) or on a local tool.
   */
  #updateWatchdog(): void {
    this.#watchdog.setSuspended(this.toolCalls.waiting || this.#localCalls.size > 0 || this.flow.paused);
  }

  /**
   * The backend stayed silent past a bound: end the turn now with a retryable error (the engine writes
   * it in-band with the protocol's terminal events), then cancel the SDK run for real.
   */
  #expire(phase: 'first-event' | 'idle', afterMs: number): void {
    if (this.#finished) return;
    const what =
      phase === 'first-event'
        ? `Cursor sent no event within ${seconds(afterMs)} of the request`
        : `Cursor sent nothing for ${seconds(afterMs)} in the middle of the answer`;
    this.#options.logger.warn(
      { runId: this.id || undefined, phase, afterMs },
      'Cursor run silent past its bound; cancelling it',
    );
    this.#finish({
      type: 'error',
      error: createTurnError(
        'overloaded',
        `${what} (the backend is unreachable or stalled); the run was cancelled. Retry shortly.`,
      ),
    });
    this.#onExpired();
    if (this.#run !== undefined) this.#cancelExpired(this.#run);
  }

  #cancelExpired(run: Run): void {
    run.cancel().catch((error: unknown) => {
      this.#options.logger.warn({ err: error }, 'run.cancel() after the silence bound failed');
    });
  }

  #finish(event: TerminalEvent): void {
    if (this.#finished) return;
    this.#watchdog.stop();
    this.#closeThinking();
    this.#finished = true;
    this.flow.dispose();
    this.toolCalls.stop('the run ended');
    this.#delta.release();
    this.#stream.release();
    this.#result.release();
    this.#push(event);
    this.#queue.end();
    this.#onTerminal();
    this.#options.onFinished(event);
  }
}
