import { createTurnError, type TurnError } from '../../turn/turn-error.js';
import type { TurnEvent, TurnStopReason, TurnWebSearchCall, TurnWebSource } from '../../turn/turn-event.js';
import type { TurnRequest } from '../../turn/turn-request.js';
import { emptyUsage, promptTokens, type TurnUsage } from '../../turn/turn-usage.js';
import type { ResponseMeta, StreamEncoder } from '../protocol-adapter.js';
import type { SseFrame } from '../sse-frame.js';
import { createDataFrame } from '../shared/create-event-frame.js';
import {
  createJsonResponseFromEvents,
  type SnapshotEncoder,
} from '../shared/create-json-response-from-events.js';
import { createOpenaiChatErrorFrames } from './openai-chat-error.js';
import { mapOpenaiChatStopReason, type OpenaiChatFinishReason } from './map-openai-chat-stop-reason.js';

/** Chat Completions usage; `prompt_tokens` counts cache reads and writes, `cached_tokens` the reads. */
export type OpenaiChatUsage = {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  completion_tokens_details: { reasoning_tokens: number };
};

type ToolCallDelta =
  | { index: number; id: string; type: 'function'; function: { name: string; arguments: string } }
  | { index: number; function: { arguments: string } };

/** A source of the answer's hosted web searches, as OpenAI's search models cite one. */
export type OpenaiChatUrlCitation = {
  type: 'url_citation';
  url_citation: { url: string; title: string; start_index: number; end_index: number };
};

type ChunkDelta = {
  role?: 'assistant';
  content?: string;
  reasoning_content?: string;
  tool_calls?: ToolCallDelta[];
  annotations?: OpenaiChatUrlCitation[];
};

/** One `chat.completion.chunk`. `choices` is empty only in the trailing usage chunk. */
export type OpenaiChatChunk = {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{ index: 0; delta: ChunkDelta; finish_reason: OpenaiChatFinishReason | null }>;
  usage?: OpenaiChatUsage;
};

export type OpenaiChatToolCall = {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
};

/** The non-streaming `chat.completion` body. */
export type OpenaiChatCompletion = {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: 0;
    message: {
      role: 'assistant';
      content: string | null;
      reasoning_content?: string;
      tool_calls?: OpenaiChatToolCall[];
      annotations?: OpenaiChatUrlCitation[];
    };
    finish_reason: OpenaiChatFinishReason;
  }>;
  usage: OpenaiChatUsage;
};

/** TurnUsage (Anthropic-style) → Chat Completions usage. */
export const convertTurnUsageToOpenaiChat = (usage: TurnUsage): OpenaiChatUsage => {
  const prompt = promptTokens(usage);
  return {
    prompt_tokens: prompt,
    completion_tokens: usage.outputTokens,
    total_tokens: prompt + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cacheReadTokens },
    completion_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
  };
};

const doneFrame: SseFrame = { data: '[DONE]' };

/**
 * The `url_citation` annotations of `sources` for the message `content`: each source's span is where its
 * URL is first mentioned in the text (UTF-16 indices), else the empty span at the end — a source the text
 * does not name is still a source of the answer, and clients list them.
 */
export const createUrlCitations = (
  sources: readonly TurnWebSource[],
  content: string,
): OpenaiChatUrlCitation[] =>
  sources.map((source) => {
    const at = content.indexOf(source.url);
    const [start, end] = at < 0 ? [content.length, content.length] : [at, at + source.url.length];
    return {
      type: 'url_citation',
      url_citation: { url: source.url, title: source.title, start_index: start, end_index: end },
    };
  });

/** The sources of the completed searches among `searches`, each URL once, in order. */
export const collectWebSources = (sources: Map<string, TurnWebSource>, event: TurnWebSearchCall): void => {
  if (event.outcome.status !== 'completed') return;
  for (const source of event.outcome.sources) if (!sources.has(source.url)) sources.set(source.url, source);
};

/**
 * TurnEvent stream → Chat Completions SSE. The wire has no block boundaries, so text and reasoning
 * start/end events emit nothing and a delta needs no prior start. Tool calls get a distinct 0-based
 * `index` in order of first appearance; the first chunk of a call carries `id`, `type` and `function.name`
 * with empty `arguments`, later chunks only argument fragments. Argument deltas for a call that was never
 * started are held back until its name is known (its `tool-input-start` or `tool-call`).
 *
 * Terminal frames: after `turn-end`, a finish chunk (with usage when the client asked for
 * `stream_options.include_usage`, because CCR reads usage only from the finish chunk), the standard
 * trailing `choices: []` usage chunk, then `[DONE]`; after `error` or a bare `end()`, the in-band error
 * chunk then `[DONE]`.
 */
export class OpenaiChatStreamEncoder implements StreamEncoder, SnapshotEncoder<OpenaiChatCompletion> {
  readonly #meta: ResponseMeta;
  readonly #includeUsage: boolean;
  #started = false;
  #ended = false;
  #text = '';
  #reasoning = '';
  #end: { stopReason: TurnStopReason; usage: TurnUsage } | undefined;
  /**
   * Started calls in `index` order. `arguments` is what was streamed; `finalArguments` the complete text
   * from `tool-call`, which the body uses even where the fragments disagreed.
   */
  readonly #toolCalls = new Map<
    string,
    { index: number; name: string; arguments: string; finalArguments: string | undefined }
  >();
  /** Argument fragments of calls not started yet, by call id. */
  readonly #heldArguments = new Map<string, string>();
  /** Sources of the answer's hosted web searches, by URL (annotated on the message at its end). */
  readonly #sources = new Map<string, TurnWebSource>();

  constructor(request: Pick<TurnRequest, 'includeStreamUsage'>, meta: ResponseMeta) {
    this.#meta = meta;
    this.#includeUsage = request.includeStreamUsage;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /**
   * The `chat.completion` the chunks so far describe. `content` is `null` when the turn is only tool
   * calls; reasoning goes to `reasoning_content`; finish reason and usage come from `turn-end` (before
   * it: `stop` and zero usage).
   */
  get snapshot(): OpenaiChatCompletion {
    const calls = [...this.#toolCalls].map(([id, call]): OpenaiChatToolCall => ({
      id,
      type: 'function',
      function: { name: call.name, arguments: call.finalArguments ?? call.arguments },
    }));
    return {
      id: this.#meta.id,
      object: 'chat.completion',
      created: this.#meta.createdAt,
      model: this.#meta.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: this.#text === '' && calls.length > 0 ? null : this.#text,
            ...(this.#reasoning === '' ? {} : { reasoning_content: this.#reasoning }),
            ...(calls.length === 0 ? {} : { tool_calls: calls }),
            ...(this.#sources.size === 0
              ? {}
              : { annotations: createUrlCitations([...this.#sources.values()], this.#text) }),
          },
          finish_reason: mapOpenaiChatStopReason(this.#end?.stopReason ?? 'end'),
        },
      ],
      usage: convertTurnUsageToOpenaiChat(this.#end?.usage ?? emptyUsage()),
    };
  }

  /** The role chunk (`{role:"assistant", content:""}`); emitted once, lazily by `push`/`end` if needed. */
  start(): SseFrame[] {
    if (this.#started) return [];
    this.#started = true;
    return [this.#chunk({ role: 'assistant', content: '' })];
  }

  push(event: TurnEvent): SseFrame[] {
    if (this.#ended) return [];
    const frames = this.start();
    switch (event.type) {
      case 'text-start':
      case 'text-end':
      case 'reasoning-start':
      case 'reasoning-end':
      case 'tool-input-end':
      case 'usage':
        break;
      case 'text-delta':
        this.#text += event.delta;
        if (event.delta !== '') frames.push(this.#chunk({ content: event.delta }));
        break;
      case 'reasoning-delta':
        this.#reasoning += event.delta;
        if (event.delta !== '') frames.push(this.#chunk({ reasoning_content: event.delta }));
        break;
      case 'tool-input-start':
        frames.push(...this.#startToolCall(event.id, event.toolName));
        break;
      case 'tool-input-delta':
        if (this.#toolCalls.has(event.id)) frames.push(...this.#appendArguments(event.id, event.delta));
        else this.#heldArguments.set(event.id, (this.#heldArguments.get(event.id) ?? '') + event.delta);
        break;
      case 'tool-call':
        frames.push(...this.#startToolCall(event.toolCallId, event.toolName));
        frames.push(...this.#completeArguments(event.toolCallId, event.toolName, event.input));
        break;
      case 'turn-end':
        this.#end = { stopReason: event.stopReason, usage: event.usage };
        frames.push(...this.#finish(event.stopReason, event.usage));
        break;
      case 'error':
        frames.push(...this.#fail(event.error));
        break;
      case 'web-search':
        // Chat Completions has no search item: the sources are the message's annotations (at its end,
        // when the text they point into is complete). A failed search has no annotation.
        collectWebSources(this.#sources, event);
        break;
      default: {
        const _exhaustive: never = event;
        return _exhaustive;
      }
    }
    return frames;
  }

  end(): SseFrame[] {
    if (this.#ended) return [];
    const error = createTurnError('api', 'The upstream stream ended without finishing the response');
    return [...this.start(), ...this.#fail(error)];
  }

  keepalive(): SseFrame {
    return { comment: 'keepalive' };
  }

  #chunk(
    delta: ChunkDelta,
    finishReason: OpenaiChatFinishReason | null = null,
    usage?: OpenaiChatUsage,
  ): SseFrame {
    const chunk: OpenaiChatChunk = {
      id: this.#meta.id,
      object: 'chat.completion.chunk',
      created: this.#meta.createdAt,
      model: this.#meta.model,
      choices: [{ index: 0, delta, finish_reason: finishReason }],
      ...(usage === undefined ? {} : { usage }),
    };
    return createDataFrame(chunk);
  }

  #startToolCall(id: string, name: string): SseFrame[] {
    if (this.#toolCalls.has(id)) return [];
    const index = this.#toolCalls.size;
    this.#toolCalls.set(id, { index, name, arguments: '', finalArguments: undefined });
    const frames = [
      this.#chunk({ tool_calls: [{ index, id, type: 'function', function: { name, arguments: '' } }] }),
    ];
    const held = this.#heldArguments.get(id);
    if (held !== undefined) {
      this.#heldArguments.delete(id);
      frames.push(...this.#appendArguments(id, held));
    }
    return frames;
  }

  #appendArguments(id: string, fragment: string): SseFrame[] {
    const call = this.#toolCalls.get(id);
    if (call === undefined || fragment === '') return [];
    call.arguments += fragment;
    return [this.#chunk({ tool_calls: [{ index: call.index, function: { arguments: fragment } }] })];
  }

  /** `tool-call` carries the full arguments: send whatever the deltas have not sent yet. */
  #completeArguments(id: string, name: string, input: string): SseFrame[] {
    const call = this.#toolCalls.get(id);
    if (call === undefined) return [];
    call.name = name;
    call.finalArguments = input;
    if (!input.startsWith(call.arguments)) return [];
    return this.#appendArguments(id, input.slice(call.arguments.length));
  }

  #finish(stopReason: TurnStopReason, turnUsage: TurnUsage): SseFrame[] {
    this.#ended = true;
    const finishReason = mapOpenaiChatStopReason(stopReason);
    const annotations =
      this.#sources.size === 0
        ? []
        : [this.#chunk({ annotations: createUrlCitations([...this.#sources.values()], this.#text) })];
    if (!this.#includeUsage) return [...annotations, this.#chunk({}, finishReason), doneFrame];
    const usage = convertTurnUsageToOpenaiChat(turnUsage);
    const trailing = {
      id: this.#meta.id,
      object: 'chat.completion.chunk',
      created: this.#meta.createdAt,
      model: this.#meta.model,
      choices: [],
      usage,
    } satisfies OpenaiChatChunk;
    return [...annotations, this.#chunk({}, finishReason, usage), createDataFrame(trailing), doneFrame];
  }

  #fail(error: TurnError): SseFrame[] {
    this.#ended = true;
    return createOpenaiChatErrorFrames(error);
  }
}

/**
 * The non-streaming `chat.completion` for a complete event list ending in `turn-end`: the
 * {@link OpenaiChatStreamEncoder}'s snapshot after the events ran through it.
 */
export const createOpenaiChatJsonResponse = (
  meta: ResponseMeta,
  events: readonly TurnEvent[],
): OpenaiChatCompletion =>
  createJsonResponseFromEvents(new OpenaiChatStreamEncoder({ includeStreamUsage: false }, meta), events);
