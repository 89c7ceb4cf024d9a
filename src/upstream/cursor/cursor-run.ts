/**
 * One SDK run seen through the upstream port. It merges the SDK's two event sources — `onDelta`
 * (text, thinking, tool-call signals, usage) and `run.stream()` (thinking, text, status) — into one
 * ordered UpstreamEvent stream without duplicates, announces host tool calls as they park, decides when
 * a tool batch is complete, and ends with exactly one terminal event taken from `run.wait()`.
 */

import type { InteractionUpdate, Run, SDKMessage } from '@cursor/sdk';
import type { Logger } from 'pino';
import { AsyncQueue, type ToolCallResult } from '../../../mcp/index.js';
import type { TurnUserPart } from '../../turn/turn-request.js';
import type { UpstreamEvent, UpstreamRun, UpstreamToolResult } from '../upstream-port.js';
import { DeltaMerger } from './delta-merger.js';
import { mapCursorRunError } from './map-cursor-error.js';
import { mapCursorUsage } from './map-cursor-usage.js';
import { ToolBatchTracker } from './tool-batch-tracker.js';

export const CUSTOM_TOOLS_PROVIDER = 'custom-user-tools';

/** The session's tool host as a run sees it. */
export interface HostToolPort {
  /** Settle a parked call with the client's result; false when the id is not pending. */
  resolve(toolCallId: string, result: ToolCallResult): boolean;
  /** Settle every pending call with an error result naming the reason. */
  settleAll(reason: string): void;
}

export type CursorRunOptions = {
  host: HostToolPort;
  logger: Logger;
  /** Quiet period that ends a tool batch when the SDK never announced its size. */
  batchQuietMs?: number;
  /** Bound on waiting for `run.stream()` to drain after `run.wait()` resolved. */
  drainMs?: number;
};

/** Client tool-result parts → MCP content the SDK accepts from `execute`. */
export const toToolCallResult = (content: readonly TurnUserPart[], isError: boolean): ToolCallResult => ({
  content: content.map((part) =>
    part.type === 'text'
      ? { type: 'text' as const, text: part.text }
      : part.source.kind === 'base64'
        ? { type: 'image' as const, data: part.source.data, mimeType: part.source.mediaType }
        : { type: 'text' as const, text: `[image: ${part.source.url}]` },
  ),
  ...(isError ? { isError: true } : {}),
});

const isCustomToolCall = (toolCall: unknown): boolean => {
  if (typeof toolCall !== 'object' || toolCall === null) return false;
  const { type, args } = toolCall as { type?: unknown; args?: { providerIdentifier?: unknown } };
  return (
    type === 'mcp' &&
    (args?.providerIdentifier === undefined || args.providerIdentifier === CUSTOM_TOOLS_PROVIDER)
  );
};

type StartedCall = { callId: string; toolName: string; args: unknown };

const customToolCall = (toolCall: unknown): { toolName: string; args: unknown } => {
  const args = (toolCall as { args?: { toolName?: unknown; name?: unknown; args?: unknown } }).args;
  const toolName =
    typeof args?.toolName === 'string'
      ? args.toolName
      : typeof args?.name === 'string'
        ? args.name.replace(/^custom-user-tools-/, '')
        : '';
  return { toolName, args: args?.args ?? {} };
};

const sameJson = (left: unknown, right: unknown): boolean => JSON.stringify(left) === JSON.stringify(right);

export class CursorRun implements UpstreamRun {
  readonly events = new AsyncQueue<UpstreamEvent>();
  #run: Run | undefined;
  readonly #options: Required<CursorRunOptions>;
  readonly #text = new DeltaMerger();
  readonly #thinking = new DeltaMerger();
  readonly #batch = new ToolBatchTracker();
  /** Parked (SDK) tool call ids announced to the engine. */
  readonly #announced = new Set<string>();
  /** Started-update call ids whose call has parked. */
  readonly #announcedCallIds = new Set<string>();
  readonly #outstanding = new Set<string>();
  /** Custom tool calls the SDK announced (`tool-call-started`) that have not reached `execute` yet. */
  readonly #startedCalls: StartedCall[] = [];
  /** Text and thinking positions at the first start of each step, to recognise an SDK retry's replay. */
  readonly #stepStarts = new Map<number, { text: number; thinking: number }>();
  #thinkingOpen = false;
  #batchTimer: NodeJS.Timeout | undefined;
  #terminal: Promise<void> | undefined;
  #finished = false;

  constructor(options: CursorRunOptions) {
    this.#options = { batchQuietMs: 60, drainMs: 500, ...options };
  }

  get id(): string {
    return this.#run?.id ?? '';
  }

  get finished(): boolean {
    return this.#finished;
  }

  /** The `onDelta` callback for `agent.send`. Runs before the Run object exists. */
  readonly onDelta = ({ update }: { update: InteractionUpdate }): void => {
    if (this.#finished) return;
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
        this.#batch.listed(update.callCount);
        break;
      case 'tool-call-started':
        // A retried stream replays started updates: a call already known (started or parked) is not new.
        if (
          isCustomToolCall(update.toolCall) &&
          !this.#announcedCallIds.has(update.callId) &&
          !this.#startedCalls.some((call) => call.callId === update.callId)
        ) {
          this.#batch.started(update.callId);
          this.#startedCalls.push({ callId: update.callId, ...customToolCall(update.toolCall) });
        }
        this.#closeThinking();
        break;
      case 'turn-ended':
        if (update.usage !== undefined)
          this.events.push({ type: 'usage', usage: mapCursorUsage(update.usage) });
        break;
      default:
        break;
    }
  };

  /** Attach the SDK run once `send()` resolved: drain its stream and watch for the terminal result. */
  attach(run: Run): void {
    this.#run = run;
    const drained = this.#drain(run);
    this.#terminal = run
      .wait()
      .then(async (result) => {
        await Promise.race([
          drained,
          new Promise((resolve) => setTimeout(resolve, this.#options.drainMs).unref()),
        ]);
        this.#finish(
          result.status === 'error'
            ? { type: 'error', error: mapCursorRunError(result.error) }
            : { type: 'end', status: result.status === 'cancelled' ? 'cancelled' : 'finished' },
        );
      })
      .catch((error: unknown) => {
        this.#options.logger.error({ err: error }, 'run.wait() failed');
        this.#finish({ type: 'error', error: mapCursorRunError({ message: String(error) }) });
      });
  }

  /** A host tool call reached the tool host; announce it once. */
  parked(call: {
    toolCallId: string;
    toolName: string;
    args: Record<string, unknown>;
    parkedAt?: number;
  }): void {
    if (this.#finished || this.#announced.has(call.toolCallId)) return;
    this.#announced.add(call.toolCallId);
    this.#outstanding.add(call.toolCallId);
    this.#closeThinking();
    this.events.push({
      type: 'tool-call',
      toolCallId: call.toolCallId,
      toolName: call.toolName,
      input: call.args,
      parkedAt: call.parkedAt ?? Date.now(),
    });
    // `McpArgs.toolCallId` and the started update's `callId` are different wire fields: match by id, else
    // by tool and arguments, else by tool, in the order the calls started.
    const started = this.#takeStartedCall(
      (candidate) => candidate.callId === call.toolCallId,
      (candidate) => candidate.toolName === call.toolName && sameJson(candidate.args, call.args),
      (candidate) => candidate.toolName === call.toolName,
    );
    const callId = started?.callId ?? call.toolCallId;
    this.#announcedCallIds.add(callId);
    this.#batch.parked(callId);
    this.#checkBatch();
  }

  /**
   * The id for an `execute` call that came without `context.toolCallId`: the oldest started call of
   * that tool (the SDK reports calls in the order it executes them).
   */
  claimStartedCall(toolName: string, args: Record<string, unknown>): string | undefined {
    const started = this.#takeStartedCall(
      (candidate) => candidate.toolName === toolName && sameJson(candidate.args, args),
      (candidate) => candidate.toolName === toolName,
    );
    if (started === undefined) return undefined;
    // `parked` will find it by id; put it back at the front so the batch bookkeeping sees it.
    this.#startedCalls.unshift(started);
    return started.callId;
  }

  #takeStartedCall(...predicates: Array<(call: StartedCall) => boolean>): StartedCall | undefined {
    for (const predicate of predicates) {
      const index = this.#startedCalls.findIndex(predicate);
      if (index >= 0) return this.#startedCalls.splice(index, 1)[0];
    }
    return undefined;
  }

  pendingToolCalls(): string[] {
    return [...this.#outstanding];
  }

  resolveToolCalls(results: UpstreamToolResult[]): { unknown: string[] } {
    const unknown: string[] = [];
    for (const result of results) {
      if (!this.#outstanding.has(result.toolCallId)) {
        if (!this.#announced.has(result.toolCallId)) unknown.push(result.toolCallId);
        continue;
      }
      this.#outstanding.delete(result.toolCallId);
      this.#options.host.resolve(result.toolCallId, toToolCallResult(result.content, result.isError));
    }
    return { unknown };
  }

  async cancel(): Promise<void> {
    if (this.#finished) return;
    this.#options.host.settleAll('the run was cancelled');
    this.#outstanding.clear();
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

  async #drain(run: Run): Promise<void> {
    try {
      for await (const message of run.stream()) this.#onStreamMessage(message);
    } catch (error) {
      // The live buffer overflows only when we stop reading; the run itself goes on, and onDelta still
      // delivers everything that matters.
      this.#options.logger.debug({ err: error }, 'run.stream() ended early');
    }
  }

  #onStreamMessage(message: SDKMessage): void {
    if (this.#finished) return;
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
    this.events.push({ type: 'text-delta', text: fresh });
  }

  #pushThinking(source: string, text: string): void {
    const fresh = this.#thinking.accept(source, text);
    if (fresh === '') return;
    this.#thinkingOpen = true;
    this.events.push({ type: 'reasoning-delta', text: fresh });
  }

  #closeThinking(): void {
    if (!this.#thinkingOpen) return;
    this.#thinkingOpen = false;
    this.events.push({ type: 'reasoning-end' });
  }

  #checkBatch(): void {
    if (this.#batchTimer) clearTimeout(this.#batchTimer);
    this.#batchTimer = undefined;
    if (!this.#batch.complete) return;
    if (!this.#batch.waitingWithoutListing) return this.#endBatch();
    this.#batchTimer = setTimeout(() => {
      this.#batchTimer = undefined;
      if (this.#batch.complete) this.#endBatch();
    }, this.#options.batchQuietMs);
    this.#batchTimer.unref();
  }

  #endBatch(): void {
    this.#batch.reset();
    this.events.push({ type: 'tool-batch-end' });
  }

  #finish(event: Extract<UpstreamEvent, { type: 'end' | 'error' }>): void {
    if (this.#finished) return;
    this.#closeThinking();
    if (this.#batchTimer) clearTimeout(this.#batchTimer);
    this.#finished = true;
    this.#options.host.settleAll('the run ended');
    this.#outstanding.clear();
    this.events.push(event);
    this.events.end();
  }
}
