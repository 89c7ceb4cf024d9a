import type { ResponseMeta, StreamEncoder } from '../protocol-adapter.js';
import type { SseFrame } from '../sse-frame.js';
import { createTurnError } from '../../turn/turn-error.js';
import type { TurnEvent, TurnStopReason, TurnWebSearchCall, TurnWebSource } from '../../turn/turn-event.js';
import { emptyUsage, type TurnUsage } from '../../turn/turn-usage.js';
import { createEventFrame } from '../shared/create-event-frame.js';
import {
  createJsonResponseFromEvents,
  type SnapshotEncoder,
} from '../shared/create-json-response-from-events.js';
import { wrapCustomToolInput } from '../shared/custom-tool-input.js';
import { safeParseJson } from '../shared/safe-parse-json.js';
import { createAnthropicErrorFrames } from './anthropic-error.js';
import { mapAnthropicStopReason, type AnthropicStopReason } from './map-anthropic-stop-reason.js';
import {
  createWebSearchBlocks,
  findCitations,
  type AnthropicServerToolUseBlock,
  type AnthropicWebSearchCitation,
  type AnthropicWebSearchToolResultBlock,
} from './anthropic-web-search.js';

/** Anthropic `usage` as the bridge reports it (cache counts always present). */
export type AnthropicUsage = {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  /** Hosted searches this answer ran (present when it ran any). */
  server_tool_use?: { web_search_requests: number };
};

export type AnthropicContentBlock =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'text'; text: string; citations?: AnthropicWebSearchCitation[] }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | AnthropicServerToolUseBlock
  | AnthropicWebSearchToolResultBlock;

/** Options of the encoder beyond the response's identity. */
export type AnthropicEncoderOptions = {
  /** The name the request gave its hosted web search tool (`server_tool_use.name`); default `web_search`. */
  webSearchToolName?: string;
};

/** The non-streaming Messages response body. */
export type AnthropicMessageResponse = {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: AnthropicContentBlock[];
  stop_reason: AnthropicStopReason;
  stop_sequence: null;
  usage: AnthropicUsage;
};

type ToolKind = 'function' | 'custom';

/** The block being streamed, with its entry in the message body (`content`). */
type OpenBlock =
  | {
      type: 'text' | 'thinking';
      id: string;
      index: number;
      content: Extract<AnthropicContentBlock, { type: 'text' | 'thinking' }>;
    }
  | {
      type: 'tool_use';
      id: string;
      index: number;
      kind: ToolKind;
      streamedInput: string;
      /** The complete input from `tool-call`; the body uses it even where the deltas disagreed. */
      finalInput: string | undefined;
      content: Extract<AnthropicContentBlock, { type: 'tool_use' }>;
    };

const toAnthropicUsage = (usage: TurnUsage, webSearchRequests = 0): AnthropicUsage => ({
  input_tokens: usage.inputTokens,
  output_tokens: usage.outputTokens,
  cache_read_input_tokens: usage.cacheReadTokens,
  cache_creation_input_tokens: usage.cacheWriteTokens,
  ...(webSearchRequests > 0 ? { server_tool_use: { web_search_requests: webSearchRequests } } : {}),
});

/** Whether a search reached Cursor's servers: a refused one (over `max_uses`, never run) is no request. */
const countsAsRequest = (event: TurnWebSearchCall): boolean =>
  event.action.kind === 'search' &&
  !(event.outcome.status === 'failed' && event.outcome.code !== 'unavailable');

/** A tool_use input is an object: a custom tool's raw string goes in its `{ input }` form. */
const parseToolInput = (input: string, kind: ToolKind): unknown => {
  if (kind === 'custom') return wrapCustomToolInput(input);
  if (input === '') return {};
  const parsed = safeParseJson(input);
  return parsed.ok ? parsed.value : {};
};

/**
 * TurnEvent → Anthropic Messages SSE (`message_start`, `content_block_*` with increasing `index`,
 * `message_delta`, `message_stop`).
 *
 * A hosted web search (`web-search`) becomes a `server_tool_use` block (its query as one
 * `input_json_delta`) and a `web_search_tool_result` block (sent whole in its `content_block_start`), as
 * Anthropic streams them; a later text block that names a source's URL carries its citation
 * (`citations_delta` before the block stops), and `usage.server_tool_use.web_search_requests` counts the
 * searches that ran.
 *
 * Robustness beyond the ordering contract of turn-event.ts: a delta for a block that is not open starts it;
 * starting a block closes the open one; a tool_use block stays open after `tool-input-end` until its
 * `tool-call`, so any argument text the deltas missed is sent before `content_block_stop`; events after
 * the terminal one are ignored.
 *
 * Errors: the Anthropic API ends a failed stream with `event: error` and nothing after it, and the
 * official SDK's `Stream` throws an `APIError` the moment it reads that event (MessageStream rejects
 * `finalMessage()`; Claude Code then retries without streaming). So after an `error` event, and on `end()`
 * without a terminal event, the `error` frame is followed only by `message_stop`, so every stream still
 * ends with its terminal event for parsers that read on: no `content_block_stop` (closing an open
 * tool_use block would hand a client that runs tools at `content_block_stop` a truncated input) and no
 * `message_delta` (there is no stop reason to report).
 */
export class AnthropicStreamEncoder implements StreamEncoder, SnapshotEncoder<AnthropicMessageResponse> {
  readonly #meta: ResponseMeta;
  #started = false;
  #ended = false;
  #nextIndex = 0;
  #open: OpenBlock | undefined;
  readonly #content: AnthropicContentBlock[] = [];
  #stopReason: TurnStopReason = 'end';
  #usage: TurnUsage = emptyUsage();
  readonly #webSearchToolName: string;
  /** Sources of this answer's searches, by URL: what its text may cite. */
  readonly #sources = new Map<string, TurnWebSource>();
  #webSearchRequests = 0;

  constructor(meta: ResponseMeta, options: AnthropicEncoderOptions = {}) {
    this.#meta = meta;
    this.#webSearchToolName = options.webSearchToolName ?? 'web_search';
  }

  get ended(): boolean {
    return this.#ended;
  }

  /**
   * The Messages body the frames so far describe: blocks in order (thinking with its signature, text,
   * tool_use with the parsed input), `stop_reason` and usage from `turn-end` (before it: `end_turn` and
   * the last `usage` event).
   */
  get snapshot(): AnthropicMessageResponse {
    return {
      id: this.#meta.id,
      type: 'message',
      role: 'assistant',
      model: this.#meta.model,
      content: this.#content.map((block) => ({ ...block })),
      stop_reason: mapAnthropicStopReason(this.#stopReason),
      stop_sequence: null,
      usage: toAnthropicUsage(this.#usage, this.#webSearchRequests),
    };
  }

  start(): SseFrame[] {
    if (this.#started || this.#ended) return [];
    this.#started = true;
    return [
      createEventFrame({
        type: 'message_start',
        message: {
          id: this.#meta.id,
          type: 'message',
          role: 'assistant',
          model: this.#meta.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: toAnthropicUsage(emptyUsage()),
        },
      }),
    ];
  }

  push(event: TurnEvent): SseFrame[] {
    if (this.#ended) return [];
    if (event.type === 'error') {
      this.#ended = true;
      return createAnthropicErrorFrames(event.error);
    }
    const frames = this.start();
    switch (event.type) {
      case 'text-start':
        frames.push(...this.#openBlock({ type: 'text', id: event.id }));
        break;
      case 'text-delta':
        frames.push(...this.#ensureOpen('text', event.id));
        if (this.#open?.content.type === 'text') this.#open.content.text += event.delta;
        if (event.delta !== '') frames.push(this.#delta({ type: 'text_delta', text: event.delta }));
        break;
      case 'reasoning-start':
        frames.push(...this.#openBlock({ type: 'thinking', id: event.id }));
        break;
      case 'reasoning-delta':
        frames.push(...this.#ensureOpen('thinking', event.id));
        if (this.#open?.content.type === 'thinking') this.#open.content.thinking += event.delta;
        if (event.delta !== '') frames.push(this.#delta({ type: 'thinking_delta', thinking: event.delta }));
        break;
      case 'reasoning-end':
        if (this.#open?.type === 'thinking' && this.#open.id === event.id) {
          if (this.#open.content.type === 'thinking') this.#open.content.signature = event.signature;
          if (event.signature !== '') {
            frames.push(this.#delta({ type: 'signature_delta', signature: event.signature }));
          }
          frames.push(...this.#closeBlock());
        }
        break;
      case 'text-end':
        if (this.#isOpen('text', event.id)) frames.push(...this.#closeBlock());
        break;
      case 'tool-input-start':
        frames.push(
          ...this.#openBlock({ type: 'tool_use', id: event.id, name: event.toolName, kind: event.kind }),
        );
        break;
      case 'tool-input-delta':
        // Without its start the tool name is unknown: drop the fragment, `tool-call` sends the full input.
        if (this.#open?.type === 'tool_use' && this.#open.id === event.id) {
          frames.push(...this.#appendToolInput(this.#open, event.delta));
        }
        break;
      case 'tool-input-end':
        // Kept open until `tool-call` (see the class comment).
        break;
      case 'tool-call':
        frames.push(...this.#completeToolCall(event));
        break;
      case 'web-search':
        frames.push(...this.#webSearch(event));
        break;
      case 'usage':
        this.#usage = event.usage;
        break;
      case 'turn-end':
        this.#stopReason = event.stopReason;
        this.#usage = event.usage;
        frames.push(...this.#closeBlock(), ...this.#finish(event.stopReason, event.usage));
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
    return this.push({
      type: 'error',
      error: createTurnError('api', 'The upstream model stopped without finishing the response.'),
    });
  }

  keepalive(): SseFrame {
    return createEventFrame({ type: 'ping' });
  }

  #isOpen(type: OpenBlock['type'], id: string): boolean {
    return this.#open?.type === type && this.#open.id === id;
  }

  #ensureOpen(type: 'text' | 'thinking', id: string): SseFrame[] {
    return this.#isOpen(type, id) ? [] : this.#openBlock({ type, id });
  }

  #openBlock(
    block:
      | { type: 'text' | 'thinking'; id: string }
      | { type: 'tool_use'; id: string; name: string; kind: ToolKind },
  ): SseFrame[] {
    const frames = this.#closeBlock();
    const index = this.#nextIndex++;
    if (block.type === 'tool_use') {
      const content = { type: 'tool_use' as const, id: block.id, name: block.name, input: {} };
      this.#open = {
        type: 'tool_use',
        id: block.id,
        index,
        kind: block.kind,
        streamedInput: '',
        finalInput: undefined,
        content,
      };
    } else {
      const content: AnthropicContentBlock =
        block.type === 'text'
          ? { type: 'text', text: '' }
          : { type: 'thinking', thinking: '', signature: '' };
      this.#open = { type: block.type, id: block.id, index, content };
    }
    frames.push(
      createEventFrame({ type: 'content_block_start', index, content_block: { ...this.#open.content } }),
    );
    this.#content.push(this.#open.content);
    return frames;
  }

  #webSearch(event: TurnWebSearchCall): SseFrame[] {
    const blocks = createWebSearchBlocks(event, this.#webSearchToolName);
    if (blocks === undefined) return [];
    if (countsAsRequest(event)) this.#webSearchRequests += 1;
    if (event.outcome.status === 'completed') {
      for (const source of event.outcome.sources)
        if (!this.#sources.has(source.url)) this.#sources.set(source.url, source);
    }
    const frames = this.#closeBlock();
    const useIndex = this.#nextIndex++;
    const resultIndex = this.#nextIndex++;
    this.#content.push(blocks.use, blocks.result);
    frames.push(
      createEventFrame({
        type: 'content_block_start',
        index: useIndex,
        content_block: { ...blocks.use, input: {} },
      }),
      createEventFrame({
        type: 'content_block_delta',
        index: useIndex,
        delta: { type: 'input_json_delta', partial_json: JSON.stringify(blocks.use.input) },
      }),
      createEventFrame({ type: 'content_block_stop', index: useIndex }),
      createEventFrame({ type: 'content_block_start', index: resultIndex, content_block: blocks.result }),
      createEventFrame({ type: 'content_block_stop', index: resultIndex }),
    );
    return frames;
  }

  #delta(delta: { type: string } & Record<string, unknown>): SseFrame {
    return createEventFrame({ type: 'content_block_delta', index: this.#open?.index ?? 0, delta });
  }

  #appendToolInput(block: Extract<OpenBlock, { type: 'tool_use' }>, text: string): SseFrame[] {
    block.streamedInput += text;
    // Custom tool input is raw text, not JSON: it is sent whole, wrapped, when the block closes.
    if (block.kind === 'custom' || text === '') return [];
    return [this.#delta({ type: 'input_json_delta', partial_json: text })];
  }

  #completeToolCall(event: Extract<TurnEvent, { type: 'tool-call' }>): SseFrame[] {
    const frames: SseFrame[] = [];
    if (!this.#isOpen('tool_use', event.toolCallId)) {
      frames.push(
        ...this.#openBlock({
          type: 'tool_use',
          id: event.toolCallId,
          name: event.toolName,
          kind: event.kind,
        }),
      );
    }
    const block = this.#open;
    if (block?.type === 'tool_use') {
      block.finalInput = event.input;
      block.content.name = event.toolName;
      // Send what the deltas missed; if they disagree with the final input it is too late to correct.
      if (block.kind === 'custom') block.streamedInput = event.input;
      else if (event.input.startsWith(block.streamedInput)) {
        frames.push(...this.#appendToolInput(block, event.input.slice(block.streamedInput.length)));
      }
    }
    frames.push(...this.#closeBlock());
    return frames;
  }

  #closeBlock(): SseFrame[] {
    const block = this.#open;
    if (block === undefined) return [];
    const frames: SseFrame[] = [];
    if (block.content.type === 'text' && this.#sources.size > 0) {
      const citations = findCitations(block.content.text, this.#sources);
      if (citations.length > 0) block.content.citations = citations;
      for (const citation of citations) frames.push(this.#delta({ type: 'citations_delta', citation }));
    }
    if (block.type === 'tool_use') {
      block.content.input = parseToolInput(block.finalInput ?? block.streamedInput, block.kind);
      if (block.kind === 'custom') {
        frames.push(
          this.#delta({
            type: 'input_json_delta',
            partial_json: JSON.stringify(wrapCustomToolInput(block.streamedInput)),
          }),
        );
      }
    }
    frames.push(createEventFrame({ type: 'content_block_stop', index: block.index }));
    this.#open = undefined;
    return frames;
  }

  #finish(stopReason: TurnStopReason, usage: TurnUsage): SseFrame[] {
    this.#ended = true;
    return [
      createEventFrame({
        type: 'message_delta',
        delta: { stop_reason: mapAnthropicStopReason(stopReason), stop_sequence: null },
        usage: {
          output_tokens: usage.outputTokens,
          input_tokens: usage.inputTokens,
          cache_read_input_tokens: usage.cacheReadTokens,
          cache_creation_input_tokens: usage.cacheWriteTokens,
          ...(this.#webSearchRequests > 0
            ? { server_tool_use: { web_search_requests: this.#webSearchRequests } }
            : {}),
          ...(usage.reasoningTokens === undefined
            ? {}
            : { output_tokens_details: { thinking_tokens: usage.reasoningTokens } }),
        },
      }),
      createEventFrame({ type: 'message_stop' }),
    ];
  }
}

/**
 * The non-streaming Messages body for a complete event list ending in `turn-end`: the
 * {@link AnthropicStreamEncoder}'s snapshot after the events ran through it.
 */
export const createAnthropicJsonResponse = (
  meta: ResponseMeta,
  events: readonly TurnEvent[],
  options: AnthropicEncoderOptions = {},
): AnthropicMessageResponse =>
  createJsonResponseFromEvents(new AnthropicStreamEncoder(meta, options), events);
