/**
 * Turns a run's upstream events into one client response's TurnEvents. The run's iterator outlives the
 * response: at a tool batch boundary the response ends with a tool-use stop and the iterator is kept for
 * the next request, which continues the same run.
 */

import { createHash } from 'node:crypto';
import type { TurnEvent, TurnWebSearchCall } from '../turn/turn-event.js';
import type { TurnTool, TurnWebSearch } from '../turn/turn-request.js';
import { addUsage, emptyUsage, type TurnUsage } from '../turn/turn-usage.js';
import type { UpstreamEvent } from '../upstream/upstream-port.js';
import { WebSearchPolicy } from './web-search-policy.js';

/** How a response ended, for the session to decide what happens to the run. */
export type PumpOutcome =
  | { kind: 'tool-use' }
  | { kind: 'finished' }
  | { kind: 'cancelled' }
  | { kind: 'failed' }
  /** The consumer stopped reading (client gone) before a boundary. */
  | { kind: 'interrupted' };

/** The assistant output of a response, as it will appear in the client's next transcript. */
export type PumpOutput = {
  text: string;
  toolCalls: Array<{ toolCallId: string; toolName: string; input: unknown }>;
  /** The hosted web searches the response reported, in order. */
  webSearches: TurnWebSearchCall[];
};

export type PumpOptions = {
  tools: readonly TurnTool[];
  /**
   * The request's hosted web search: the run's web calls are reported under its rules. Absent, they are
   * not reported (an agent that uses Cursor's own tools searches for itself).
   */
  webSearch?: TurnWebSearch;
  /** Told of each tool call as it goes to the client. */
  onToolCall?: (call: Extract<UpstreamEvent, { type: 'tool-call' }>) => void;
  /**
   * The usage a response reports when Cursor reported none while it streamed — always so for a tool-use
   * response: the run is still live, and Cursor reports a run's usage once, when it ends. Never rejects
   * (a failed count resolves to what it can). Absent: such a response reports zeros.
   */
  estimateUsage?: (output: PumpOutput & { reasoning: string }) => Promise<TurnUsage>;
};

/** An opaque signature for a thinking block; Claude Code requires one and sends it back unchanged. */
export const reasoningSignature = (text: string): string =>
  `cursor-bridge.${createHash('sha256').update(text).digest('base64url')}`;

/**
 * Read `events` until the next boundary, yielding TurnEvents. `outcome` and `output` are filled when
 * the iterator finishes; `outcome` is set before the terminal event is handed out.
 */
export class EventPump {
  outcome: PumpOutcome = { kind: 'interrupted' };
  readonly output: PumpOutput = { text: '', toolCalls: [], webSearches: [] };
  #options: PumpOptions;
  #usage = emptyUsage();
  /** Whether Cursor reported usage during this response. */
  #usageReported = false;
  /** The response's reasoning text, for a usage estimate. */
  #reasoning = '';
  /** The usage the response's `turn-end` reported, and whether it was the estimate; set at the boundary. */
  reported: { usage: TurnUsage; estimated: boolean } | undefined;
  /** The `turn-end` queued last, whose usage is still to be estimated. */
  #estimateFor: Extract<TurnEvent, { type: 'turn-end' }> | undefined;
  #block: { type: 'text' | 'reasoning'; id: string; text: string } | undefined;
  #nextId = 0;
  /** Events translated from one upstream event and not handed out yet (a few at most). */
  #pending: TurnEvent[] = [];
  readonly #webSearch: WebSearchPolicy | undefined;

  constructor(options: PumpOptions) {
    this.#options = options;
    this.#webSearch = options.webSearch === undefined ? undefined : new WebSearchPolicy(options.webSearch);
  }

  /**
   * The TurnEvents of `events` up to the next boundary. One consumer, one `next()` at a time (as
   * `for await` and `yield*` call it). Hand-written rather than an async generator: an event handed out
   * costs its consumer one microtask, where a generator (and its `yield*` of the block helpers) took
   * several per event, each waiting behind the SDK's own queued microtasks.
   */
  pump(events: AsyncIterator<UpstreamEvent>): AsyncIterableIterator<TurnEvent> {
    // At a boundary (or stopped by the consumer): nothing more is read from `events`.
    let ended = false;
    const done: IteratorReturnResult<undefined> = { done: true, value: undefined };
    return {
      next: async (): Promise<IteratorResult<TurnEvent>> => {
        while (this.#pending.length === 0) {
          if (ended) return done;
          let next: IteratorResult<UpstreamEvent>;
          try {
            next = await events.next();
          } catch (error) {
            ended = true;
            throw error;
          }
          ended = this.#translate(next);
          if (this.#estimateFor !== undefined) await this.#estimate(this.#estimateFor);
        }
        return { done: false, value: this.#pending.shift() as TurnEvent };
      },
      return: async (): Promise<IteratorResult<TurnEvent>> => {
        ended = true;
        this.#pending = [];
        return done;
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }

  /** Queue the TurnEvents of one upstream result; true when it was the response's boundary. */
  #translate(next: IteratorResult<UpstreamEvent>): boolean {
    if (next.done === true) {
      this.#close();
      this.outcome = { kind: 'failed' };
      this.#pending.push({
        type: 'error',
        error: { kind: 'api', message: 'The Cursor run ended without a result.', retryable: true },
      });
      return true;
    }
    const event = next.value;
    switch (event.type) {
      case 'text-delta':
        if (event.text === '') return false;
        this.#open('text');
        this.output.text += event.text;
        this.#pending.push({ type: 'text-delta', id: this.#blockId(), delta: event.text });
        return false;
      case 'reasoning-delta':
        if (event.text === '') return false;
        this.#open('reasoning');
        if (this.#block !== undefined) this.#block.text += event.text;
        this.#reasoning += event.text;
        this.#pending.push({ type: 'reasoning-delta', id: this.#blockId(), delta: event.text });
        return false;
      case 'reasoning-end':
        if (this.#block?.type === 'reasoning') this.#close();
        return false;
      case 'tool-call':
        this.#options.onToolCall?.(event);
        this.#close();
        this.#toolCall(event);
        return false;
      case 'tool-batch-end':
        // A batch whose every call was corrected upstream showed the client nothing: the run goes on.
        if (this.output.toolCalls.length === 0) return false;
        this.#close();
        this.outcome = { kind: 'tool-use' };
        this.#end('tool-use');
        return true;
      case 'web-call': {
        const search = this.#webSearch?.apply(event.call);
        if (search === undefined) return false;
        this.#close();
        this.output.webSearches.push(search);
        this.#pending.push(search);
        return false;
      }
      case 'usage':
        this.#usageReported = true;
        this.#usage = addUsage(this.#usage, event.usage);
        this.#pending.push({ type: 'usage', usage: this.#usage });
        return false;
      case 'end':
        this.#close();
        this.outcome = { kind: event.status };
        this.#end('end');
        return true;
      case 'error':
        this.#close();
        this.outcome = { kind: 'failed' };
        this.#pending.push({ type: 'error', error: event.error });
        return true;
      default: {
        const _exhaustive: never = event;
        return _exhaustive;
      }
    }
  }

  /** Queue the response's `turn-end`; its usage is estimated when Cursor reported none. */
  #end(stopReason: Extract<TurnEvent, { type: 'turn-end' }>['stopReason']): void {
    const end: Extract<TurnEvent, { type: 'turn-end' }> = {
      type: 'turn-end',
      stopReason,
      usage: this.#usage,
    };
    this.#pending.push(end);
    this.reported = { usage: end.usage, estimated: false };
    if (!this.#usageReported && this.#options.estimateUsage !== undefined) this.#estimateFor = end;
  }

  /** Fill `end`'s usage with the estimate (the estimator never rejects: it reports its own failure). */
  async #estimate(end: Extract<TurnEvent, { type: 'turn-end' }>): Promise<void> {
    this.#estimateFor = undefined;
    const estimate = this.#options.estimateUsage;
    if (estimate === undefined) return;
    end.usage = await estimate({ ...this.output, reasoning: this.#reasoning });
    this.reported = { usage: end.usage, estimated: true };
  }

  #blockId(): string {
    return this.#block?.id ?? '';
  }

  #open(type: 'text' | 'reasoning'): void {
    if (this.#block?.type === type) return;
    this.#close();
    const id = `${type}-${this.#nextId++}`;
    this.#block = { type, id, text: '' };
    this.#pending.push(type === 'text' ? { type: 'text-start', id } : { type: 'reasoning-start', id });
  }

  #close(): void {
    const block = this.#block;
    if (block === undefined) return;
    this.#block = undefined;
    this.#pending.push(
      block.type === 'text'
        ? { type: 'text-end', id: block.id }
        : { type: 'reasoning-end', id: block.id, signature: reasoningSignature(block.id + block.text) },
    );
  }

  #toolCall(event: Extract<UpstreamEvent, { type: 'tool-call' }>): void {
    const tool = this.#options.tools.find((candidate) => candidate.name === event.toolName);
    const kind = tool?.kind ?? 'function';
    const rawInput = event.input['input'];
    const input = kind === 'custom' && typeof rawInput === 'string' ? rawInput : JSON.stringify(event.input);
    this.output.toolCalls.push({
      toolCallId: event.toolCallId,
      toolName: event.toolName,
      input: kind === 'custom' ? input : event.input,
    });
    this.#pending.push(
      { type: 'tool-input-start', id: event.toolCallId, toolName: event.toolName, kind },
      { type: 'tool-input-delta', id: event.toolCallId, delta: input },
      { type: 'tool-input-end', id: event.toolCallId },
      { type: 'tool-call', toolCallId: event.toolCallId, toolName: event.toolName, kind, input },
    );
  }
}
