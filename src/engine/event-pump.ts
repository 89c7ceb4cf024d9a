/**
 * Turns a run's upstream events into one client response's TurnEvents. The run's iterator outlives the
 * response: at a tool batch boundary the response ends with a tool-use stop and the iterator is kept for
 * the next request, which continues the same run.
 */

import { createHash } from 'node:crypto';
import type { TurnEvent } from '../turn/turn-event.js';
import type { TurnTool } from '../turn/turn-request.js';
import { emptyUsage, type TurnUsage } from '../turn/turn-usage.js';
import type { UpstreamEvent } from '../upstream/upstream-port.js';

/** How a response ended, for the session to decide what happens to the run. */
export type PumpOutcome =
  | { kind: 'tool-use'; toolCallIds: string[] }
  | { kind: 'finished' }
  | { kind: 'cancelled' }
  | { kind: 'failed' }
  /** The consumer stopped reading (client gone) before a boundary. */
  | { kind: 'interrupted' };

/** The assistant output of a response, as it will appear in the client's next transcript. */
export type PumpOutput = {
  text: string;
  toolCalls: Array<{ toolCallId: string; toolName: string; input: unknown }>;
};

export type PumpOptions = {
  tools: readonly TurnTool[];
  /** Decide per call whether it reaches the client; a `false` call must have been settled by the caller. */
  forwardToolCall?: (call: Extract<UpstreamEvent, { type: 'tool-call' }>) => boolean;
};

/** An opaque signature for a thinking block; Claude Code requires one and sends it back unchanged. */
export const reasoningSignature = (text: string): string =>
  `cursor-bridge.${createHash('sha256').update(text).digest('base64url')}`;

const addUsage = (total: TurnUsage, usage: TurnUsage): TurnUsage => ({
  inputTokens: total.inputTokens + usage.inputTokens,
  outputTokens: total.outputTokens + usage.outputTokens,
  cacheReadTokens: total.cacheReadTokens + usage.cacheReadTokens,
  cacheWriteTokens: total.cacheWriteTokens + usage.cacheWriteTokens,
  ...(total.reasoningTokens === undefined && usage.reasoningTokens === undefined
    ? {}
    : { reasoningTokens: (total.reasoningTokens ?? 0) + (usage.reasoningTokens ?? 0) }),
});

/**
 * Read `events` until the next boundary, yielding TurnEvents. `outcome` and `output` are filled when
 * the generator finishes.
 */
export class EventPump {
  outcome: PumpOutcome = { kind: 'interrupted' };
  readonly output: PumpOutput = { text: '', toolCalls: [] };
  #options: PumpOptions;
  #usage = emptyUsage();
  #block: { type: 'text' | 'reasoning'; id: string; text: string } | undefined;
  #nextId = 0;

  constructor(options: PumpOptions) {
    this.#options = options;
  }

  async *pump(events: AsyncIterator<UpstreamEvent>): AsyncGenerator<TurnEvent, void> {
    for (;;) {
      const next = await events.next();
      if (next.done) {
        yield* this.#close();
        this.outcome = { kind: 'failed' };
        yield {
          type: 'error',
          error: { kind: 'api', message: 'The Cursor run ended without a result.', retryable: true },
        };
        return;
      }
      const event = next.value;
      switch (event.type) {
        case 'text-delta':
          if (event.text === '') break;
          yield* this.#open('text');
          this.output.text += event.text;
          yield { type: 'text-delta', id: this.#blockId(), delta: event.text };
          break;
        case 'reasoning-delta':
          if (event.text === '') break;
          yield* this.#open('reasoning');
          if (this.#block !== undefined) this.#block.text += event.text;
          yield { type: 'reasoning-delta', id: this.#blockId(), delta: event.text };
          break;
        case 'reasoning-end':
          if (this.#block?.type === 'reasoning') yield* this.#close();
          break;
        case 'tool-call':
          if (this.#options.forwardToolCall?.(event) === false) break;
          yield* this.#close();
          yield* this.#toolCall(event);
          break;
        case 'tool-batch-end':
          if (this.output.toolCalls.length === 0) break;
          yield* this.#close();
          this.outcome = {
            kind: 'tool-use',
            toolCallIds: this.output.toolCalls.map((call) => call.toolCallId),
          };
          yield { type: 'turn-end', stopReason: 'tool-use', usage: this.#usage };
          return;
        case 'usage':
          this.#usage = addUsage(this.#usage, event.usage);
          yield { type: 'usage', usage: this.#usage };
          break;
        case 'end':
          yield* this.#close();
          this.outcome = { kind: event.status };
          yield { type: 'turn-end', stopReason: 'end', usage: this.#usage };
          return;
        case 'error':
          yield* this.#close();
          this.outcome = { kind: 'failed' };
          yield { type: 'error', error: event.error };
          return;
        default: {
          const _exhaustive: never = event;
          return _exhaustive;
        }
      }
    }
  }

  #blockId(): string {
    return this.#block?.id ?? '';
  }

  *#open(type: 'text' | 'reasoning'): Generator<TurnEvent> {
    if (this.#block?.type === type) return;
    yield* this.#close();
    const id = `${type}-${this.#nextId++}`;
    this.#block = { type, id, text: '' };
    yield type === 'text' ? { type: 'text-start', id } : { type: 'reasoning-start', id };
  }

  *#close(): Generator<TurnEvent> {
    const block = this.#block;
    if (block === undefined) return;
    this.#block = undefined;
    if (block.type === 'text') yield { type: 'text-end', id: block.id };
    else yield { type: 'reasoning-end', id: block.id, signature: reasoningSignature(block.id + block.text) };
  }

  *#toolCall(event: Extract<UpstreamEvent, { type: 'tool-call' }>): Generator<TurnEvent> {
    const tool = this.#options.tools.find((candidate) => candidate.name === event.toolName);
    const kind = tool?.kind ?? 'function';
    const rawInput = event.input['input'];
    const input = kind === 'custom' && typeof rawInput === 'string' ? rawInput : JSON.stringify(event.input);
    this.output.toolCalls.push({
      toolCallId: event.toolCallId,
      toolName: event.toolName,
      input: kind === 'custom' ? input : event.input,
    });
    yield { type: 'tool-input-start', id: event.toolCallId, toolName: event.toolName, kind };
    yield { type: 'tool-input-delta', id: event.toolCallId, delta: input };
    yield { type: 'tool-input-end', id: event.toolCallId };
    yield { type: 'tool-call', toolCallId: event.toolCallId, toolName: event.toolName, kind, input };
  }
}
