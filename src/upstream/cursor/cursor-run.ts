/**
 * One SDK run seen through the upstream port. It merges the SDK's two event sources — `onDelta`
 * (text, thinking, tool-call signals, usage) and `run.stream()` (thinking, text, status) — into one
 * ordered UpstreamEvent stream without duplicates, announces host tool calls as they park, decides when
 * a tool batch is complete, and ends with exactly one terminal event taken from `run.wait()`.
 */

import type { InteractionUpdate, Run, SDKMessage } from '@cursor/sdk';
import type { Logger } from 'pino';
import { AsyncQueue, type ParkedCall, type ToolCallResult } from '../../../mcp/index.js';
import type { TurnUserPart } from '../../turn/turn-request.js';
import type { UpstreamEvent, UpstreamRun, UpstreamToolResult } from '../upstream-port.js';
import { DeltaMerger } from './delta-merger.js';
import { mapCursorRunError } from './map-cursor-error.js';
import { mapCursorUsage } from './map-cursor-usage.js';
import { ToolCallLedger } from './tool-call-ledger.js';

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

export class CursorRun implements UpstreamRun {
  readonly events = new AsyncQueue<UpstreamEvent>();
  #run: Run | undefined;
  readonly #options: Required<CursorRunOptions>;
  readonly #text = new DeltaMerger();
  readonly #thinking = new DeltaMerger();
  /** Every host tool call of this run under both its ids, and the current tool batch. */
  readonly #calls = new ToolCallLedger();
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
        this.#calls.listed(update.callCount);
        break;
      case 'tool-call-started':
        if (isCustomToolCall(update.toolCall)) {
          const { toolName, args } = customToolCall(update.toolCall);
          this.#calls.started(update.callId, toolName, args);
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

  /** A host tool call reached the tool host; announce it once (an SDK retry parks the same id again). */
  parked(call: ParkedCall): void {
    if (this.#finished || this.#calls.park(call) === undefined) return;
    this.#closeThinking();
    this.events.push({
      type: 'tool-call',
      toolCallId: call.toolCallId,
      toolName: call.toolName,
      input: call.args,
      parkedAt: call.parkedAt,
    });
    this.#checkBatch();
  }

  /**
   * The id for an `execute` call that came without `context.toolCallId`: the started call it matches
   * (the SDK reports calls in the order it executes them), or undefined (the tool host makes one up).
   */
  claimStartedCall(toolName: string, args: Record<string, unknown>): string | undefined {
    return this.#calls.claim(toolName, args);
  }

  pendingToolCalls(): string[] {
    return this.#calls.pending();
  }

  resolveToolCalls(results: UpstreamToolResult[]): { unknown: string[] } {
    const unknown: string[] = [];
    for (const result of results) {
      const resolution = this.#calls.resolve(result.toolCallId);
      if (resolution === 'unknown') unknown.push(result.toolCallId);
      if (resolution !== 'resolved') continue;
      this.#options.host.resolve(result.toolCallId, toToolCallResult(result.content, result.isError));
    }
    return { unknown };
  }

  async cancel(): Promise<void> {
    if (this.#finished) return;
    this.#options.host.settleAll('the run was cancelled');
    this.#calls.abandonAll();
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
    const status = this.#calls.batchStatus;
    if (status === 'open') return;
    if (status === 'complete') return this.#endBatch();
    this.#batchTimer = setTimeout(() => {
      this.#batchTimer = undefined;
      if (this.#calls.batchStatus !== 'open') this.#endBatch();
    }, this.#options.batchQuietMs);
    this.#batchTimer.unref();
  }

  #endBatch(): void {
    this.#calls.endBatch();
    this.events.push({ type: 'tool-batch-end' });
  }

  #finish(event: Extract<UpstreamEvent, { type: 'end' | 'error' }>): void {
    if (this.#finished) return;
    this.#closeThinking();
    if (this.#batchTimer) clearTimeout(this.#batchTimer);
    this.#finished = true;
    this.#options.host.settleAll('the run ended');
    this.#calls.abandonAll();
    this.events.push(event);
    this.events.end();
  }
}
