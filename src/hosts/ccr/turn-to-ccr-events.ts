/**
 * The CCR dialect of Chat Completions: what `@musistudio/llms`' AnthropicTransformer reads back into Anthropic
 * events for Claude Code (its `convertOpenAIStreamToAnthropic`). It differs from plain Chat Completions where that reader has
 * quirks: thinking travels as `delta.thinking.{content,signature}` (it ignores `reasoning_content`), usage
 * must sit on the `finish_reason` chunk, and a message is one thinking block, one text block, then tool calls.
 */
import { createTurnError, type TurnError } from '../../turn/turn-error.js';
import type { TurnEvent, TurnStopReason, TurnWebSearchCall } from '../../turn/turn-event.js';
import { emptyUsage, type TurnUsage } from '../../turn/turn-usage.js';
import type { ResponseMeta, StreamEncoder } from '../../protocols/protocol-adapter.js';
import type { SseFrame } from '../../protocols/sse-frame.js';
import { createDataFrame } from '../../protocols/shared/create-event-frame.js';
import { mapOpenaiChatStopReason } from '../../protocols/openai-chat/map-openai-chat-stop-reason.js';
import { createOpenaiChatErrorFrames } from '../../protocols/openai-chat/openai-chat-error.js';
import {
  convertTurnUsageToOpenaiChat,
  createUrlCitations,
  OpenaiChatStreamEncoder,
  type OpenaiChatCompletion,
} from '../../protocols/openai-chat/turn-to-openai-chat-events.js';
import {
  createJsonResponseFromEvents,
  type SnapshotEncoder,
} from '../../protocols/shared/create-json-response-from-events.js';

type ToolEvent = Extract<
  TurnEvent,
  { type: 'tool-input-start' | 'tool-input-delta' | 'tool-input-end' | 'tool-call' }
>;

/** The non-streaming body: a `chat.completion` whose message carries `thinking` instead of `reasoning_content`. */
export type CcrChatCompletion = Omit<OpenaiChatCompletion, 'choices'> & {
  choices: Array<
    Omit<OpenaiChatCompletion['choices'][number], 'message'> & {
      message: Omit<OpenaiChatCompletion['choices'][number]['message'], 'reasoning_content'> & {
        thinking?: { content: string; signature: string };
      };
    }
  >;
};

/**
 * TurnEvent stream → CCR-dialect Chat Completions SSE. Text and tool-call chunks are the plain Chat
 * Completions ones ({@link OpenaiChatStreamEncoder}: distinct `index`, `id` and `function.name` in a call's
 * first chunk); the rest is shaped for AnthropicTransformer:
 *
 * - Reasoning streams as `delta.thinking.content`. Its signature is held back and sent as exactly one
 *   `delta.thinking.signature` chunk just before the first text, tool call or finish, so several reasoning
 *   blocks in a row arrive as one signed thinking block (the reader opens one thinking block per message).
 * - Reasoning that arrives after text or a tool call is dropped: the reader would write it into the text
 *   block (it opens one thinking block per message and never closes the text block for it). {@link droppedReasoningChars} counts it so the caller can log it.
 * - Tool calls are held until the turn ends, so text that follows a tool call still lands in the one text
 *   block before them (the reader writes later text into the tool block, quirk 3). Claude Code runs tools
 *   only after the message ends, so holding them delays nothing it acts on.
 * - `turn-end` → one chunk with `finish_reason` and `usage` (`prompt_tokens`, `completion_tokens`,
 *   `prompt_tokens_details.cached_tokens`), then `[DONE]`; the reader rebuilds usage from that chunk alone.
 * - `error` or a bare `end()` → an `{error}` chunk then `[DONE]`; the reader turns it into an Anthropic
 *   `error` event and still closes the message.
 */
export class CcrStreamEncoder implements StreamEncoder, SnapshotEncoder<CcrChatCompletion> {
  readonly #meta: ResponseMeta;
  /** Text and tool-call chunks; its role chunk and terminal frames are not used. */
  readonly #chat: OpenaiChatStreamEncoder;
  #ended = false;
  /** Text or a tool call has been seen: no more thinking fits in this message. */
  #answerStarted = false;
  #thinkingSent = false;
  #signature: string | undefined;
  readonly #heldToolEvents: ToolEvent[] = [];
  #droppedReasoningChars = 0;
  /** All reasoning and its last signature, for the body (a JSON message has no ordering quirk to avoid). */
  #reasoning = '';
  #lastSignature = '';
  #end: { stopReason: TurnStopReason; usage: TurnUsage } | undefined;

  constructor(meta: ResponseMeta) {
    this.#meta = meta;
    this.#chat = new OpenaiChatStreamEncoder({ includeStreamUsage: false }, meta);
    this.#chat.start();
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Characters of reasoning dropped because they came after the answer had started. */
  get droppedReasoningChars(): number {
    return this.#droppedReasoningChars;
  }

  /**
   * The non-streaming CCR-dialect body the events so far describe: the plain `chat.completion` (text and
   * tool calls) with the reasoning in `message.thinking.{content,signature}` (the last block's signature),
   * which AnthropicTransformer turns into a signed thinking block. All reasoning is kept, also what the
   * stream drops for coming after the answer.
   */
  get snapshot(): CcrChatCompletion {
    const completion = this.#chat.snapshot;
    const finishReason = mapOpenaiChatStopReason(this.#end?.stopReason ?? 'end');
    const thinking = { content: this.#reasoning, signature: this.#lastSignature };
    return {
      ...completion,
      choices: completion.choices.map((choice) => ({
        ...choice,
        message: this.#reasoning === '' ? choice.message : { ...choice.message, thinking },
        finish_reason: finishReason,
      })),
      usage: convertTurnUsageToOpenaiChat(this.#end?.usage ?? emptyUsage()),
    };
  }

  /** The role chunk; AnthropicTransformer opens the message on the first chunk it sees. */
  start(): SseFrame[] {
    return [this.#chunk({ role: 'assistant', content: '' })];
  }

  push(event: TurnEvent): SseFrame[] {
    if (this.#ended) return [];
    switch (event.type) {
      case 'reasoning-start':
      case 'text-start':
      case 'text-end':
      case 'usage':
        return [];
      case 'reasoning-delta':
        this.#reasoning += event.delta;
        if (event.delta === '') return [];
        if (this.#answerStarted) {
          this.#droppedReasoningChars += event.delta.length;
          return [];
        }
        this.#thinkingSent = true;
        return [this.#chunk({ thinking: { content: event.delta } })];
      case 'reasoning-end':
        if (event.signature !== '') this.#lastSignature = event.signature;
        if (!this.#answerStarted && event.signature !== '') this.#signature = event.signature;
        return [];
      case 'text-delta':
        if (event.delta === '') return [];
        return [...this.#startAnswer(), ...this.#chat.push(event)];
      case 'tool-input-start':
      case 'tool-input-delta':
      case 'tool-input-end':
      case 'tool-call':
        this.#heldToolEvents.push(event);
        return this.#startAnswer();
      case 'turn-end':
        this.#end = { stopReason: event.stopReason, usage: event.usage };
        return this.#finish(event.stopReason, event.usage);
      case 'error':
        return this.#fail(event.error);
      case 'web-search':
        return this.#webSearch(event);
      default: {
        const _exhaustive: never = event;
        return _exhaustive;
      }
    }
  }

  end(): SseFrame[] {
    if (this.#ended) return [];
    return this.#fail(createTurnError('api', 'The upstream stream ended without finishing the response'));
  }

  keepalive(): SseFrame {
    return { comment: 'keepalive' };
  }

  /**
   * A hosted web search, in the one shape AnthropicTransformer reads back: `delta.annotations` of type
   * `url_citation`. Streaming, it closes an open text block and makes each annotation a
   * `web_search_tool_result` block of one source (Claude Code lists each as Links and counts each as a
   * search); the body's `message.annotations` become one `server_tool_use` + `web_search_tool_result`. A
   * failed search has no such shape: it is said in the text, so it is never mistaken for results.
   */
  #webSearch(event: TurnWebSearchCall): SseFrame[] {
    this.#chat.push(event);
    if (event.outcome.status === 'failed') {
      const action = event.action.kind === 'search' ? `"${event.action.query}"` : event.action.url;
      const delta = `Web search ${action} failed: ${event.outcome.message}\n\n`;
      return [...this.#startAnswer(), ...this.#chat.push({ type: 'text-delta', id: event.id, delta })];
    }
    if (event.outcome.sources.length === 0) return [];
    return [
      ...this.#startAnswer(),
      this.#chunk({ annotations: createUrlCitations(event.outcome.sources, '') }),
    ];
  }

  /** The held signature, once, before the first answer chunk. */
  #startAnswer(): SseFrame[] {
    if (this.#answerStarted) return [];
    this.#answerStarted = true;
    if (!this.#thinkingSent || this.#signature === undefined) return [];
    return [this.#chunk({ thinking: { signature: this.#signature } })];
  }

  #finish(stopReason: TurnStopReason, usage: TurnUsage): SseFrame[] {
    const frames = this.#startAnswer();
    for (const event of this.#heldToolEvents.splice(0)) frames.push(...this.#chat.push(event));
    this.#ended = true;
    const finish = {
      id: this.#meta.id,
      object: 'chat.completion.chunk',
      created: this.#meta.createdAt,
      model: this.#meta.model,
      choices: [{ index: 0, delta: {}, finish_reason: mapOpenaiChatStopReason(stopReason) }],
      usage: convertTurnUsageToOpenaiChat(usage),
    };
    frames.push(createDataFrame(finish), { data: '[DONE]' });
    return frames;
  }

  #fail(error: TurnError): SseFrame[] {
    this.#ended = true;
    this.#heldToolEvents.length = 0;
    return createOpenaiChatErrorFrames(error);
  }

  #chunk(delta: Record<string, unknown>): SseFrame {
    return createDataFrame({
      id: this.#meta.id,
      object: 'chat.completion.chunk',
      created: this.#meta.createdAt,
      model: this.#meta.model,
      choices: [{ index: 0, delta, finish_reason: null }],
    });
  }
}

/**
 * The non-streaming CCR-dialect body for a complete event list ending in `turn-end`: the
 * {@link CcrStreamEncoder}'s snapshot after the events ran through it.
 */
export const createCcrJsonResponse = (meta: ResponseMeta, events: readonly TurnEvent[]): CcrChatCompletion =>
  createJsonResponseFromEvents(new CcrStreamEncoder(meta), events);
