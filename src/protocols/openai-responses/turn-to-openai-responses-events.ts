/**
 * TurnEvent stream → OpenAI Responses SSE events. One stateful encoder per response; its snapshot is
 * the non-streaming response object.
 *
 * Wire contract (what the `openai` SDK's `responses.stream()` accumulator, Codex and @ai-sdk/openai read):
 * - every event's data carries `type` and a `sequence_number` increasing by one from 0; the SSE event
 *   name equals `type`;
 * - `response.created` + `response.in_progress` open the stream; each output item is announced with
 *   `response.output_item.added` and finished with `response.output_item.done`, never interleaved;
 * - exactly one terminal event: `response.completed`, `response.incomplete` (max tokens, refusal) or,
 *   after an in-band `error` event, `response.failed`.
 *
 * @see https://platform.openai.com/docs/api-reference/responses-streaming
 */

import type { ResponseMeta, StreamEncoder } from '../protocol-adapter.js';
import type { SseFrame } from '../sse-frame.js';
import type { TurnError } from '../../turn/turn-error.js';
import { createTurnError } from '../../turn/turn-error.js';
import type { TurnEvent, TurnStopReason, TurnWebSearchCall } from '../../turn/turn-event.js';
import type { TurnRequest, TurnTool } from '../../turn/turn-request.js';
import type { TurnUsage } from '../../turn/turn-usage.js';
import { promptTokens } from '../../turn/turn-usage.js';
import { createEventFrame } from '../shared/create-event-frame.js';
import {
  createJsonResponseFromEvents,
  type SnapshotEncoder,
} from '../shared/create-json-response-from-events.js';
import { unwrapCustomToolInput } from '../shared/custom-tool-input.js';
import { safeParseJson } from '../shared/safe-parse-json.js';
import { mapOpenaiResponsesStopReason } from './map-openai-responses-stop-reason.js';
import {
  createOpenaiResponsesErrorFrames,
  createOpenaiResponsesFailedResponse,
} from './openai-responses-error.js';
import { createUnavailableToolsUserNote } from './openai-responses-tool-notes.js';
import { createWebSearchCallItem } from './openai-responses-web-search.js';

type Json = Record<string, unknown>;
/** `tool_search` is Codex's client-executed search, called with a `tool_search_call` item of its own. */
type ToolKind = 'function' | 'custom' | 'tool_search';

type TextBlock = { kind: 'text'; id: string; item: Json; text: string };
type ReasoningBlock = { kind: 'reasoning'; id: string; item: Json; text: string };
/** `item` is undefined while the call is not announced yet (deltas arrived before its name was known). */
type ToolBlock = { kind: 'tool'; id: string; toolKind: ToolKind; item: Json | undefined; input: string };
type Block = TextBlock | ReasoningBlock | ToolBlock;

const missingEndMessage = 'The upstream run ended without finishing the response; please retry.';

/**
 * The Responses {@link StreamEncoder}. Robust to out-of-contract input: a delta for a block that was
 * not started starts it, a new block closes the open one, and a `tool-call` without its
 * `tool-input-start` is announced whole. Custom tool input (`{"input":"…"}` upstream) is unwrapped to
 * the raw string and sent once, when the call is complete. A call goes back the way the client addresses
 * the tool ({@link TurnTool.clientAddress}): a namespace tool's call carries `namespace` and the bare name,
 * a `tool_search` call is a `tool_search_call` item with its arguments as an object, sent when complete.
 * A hosted web search the server ran (`web-search`) is a `web_search_call` item of its own, in its place
 * among the other items, announced and finished at once.
 * A conversation's first response opens with a note naming the tools that could not be offered.
 */
export class OpenaiResponsesStreamEncoder implements StreamEncoder, SnapshotEncoder<Json> {
  readonly #request: TurnRequest;
  readonly #meta: ResponseMeta;
  readonly #idSuffix: string;
  readonly #output: Json[] = [];
  readonly #finishedCalls = new Set<string>();
  readonly #finishedWebSearches = new Set<string>();
  #sequenceNumber = 0;
  #started = false;
  #open: Block | undefined;
  #usage: TurnUsage | undefined;
  #finalResponse: Json | undefined;

  constructor(request: TurnRequest, meta: ResponseMeta) {
    this.#request = request;
    this.#meta = meta;
    this.#idSuffix = meta.id.startsWith('resp_') ? meta.id.slice('resp_'.length) : meta.id;
  }

  get ended(): boolean {
    return this.#finalResponse !== undefined;
  }

  /**
   * The response object the events so far describe: the terminal one (status, output, usage) once the
   * stream has ended, an `in_progress` one before.
   */
  get snapshot(): Json {
    return this.#finalResponse ?? this.#snapshot('in_progress');
  }

  start(): SseFrame[] {
    if (this.#started) return [];
    this.#started = true;
    const response = this.#snapshot('in_progress');
    return [
      this.#frame({ type: 'response.created', response }),
      this.#frame({ type: 'response.in_progress', response }),
      ...this.#unavailableToolsNote(),
    ];
  }

  /**
   * The user's view of dropped tools: a message item before the model's output, only in a conversation's
   * first response (the client resends it as history, where the request converter drops it again).
   */
  #unavailableToolsNote(): SseFrame[] {
    if (this.#request.messages.some((message) => message.role !== 'user' && message.role !== 'system')) {
      return [];
    }
    const note = createUnavailableToolsUserNote(this.#request.warnings);
    if (note === undefined) return [];
    const id = 'bridge-note';
    return [...this.#openText(id), ...this.#appendText(id, note), ...this.#closeOpen()];
  }

  push(event: TurnEvent): SseFrame[] {
    if (this.ended) return [];
    const frames = this.start();
    switch (event.type) {
      case 'text-start':
        frames.push(...this.#openText(event.id));
        break;
      case 'text-delta':
        frames.push(...this.#appendText(event.id, event.delta));
        break;
      case 'text-end':
        if (this.#open?.kind === 'text' && this.#open.id === event.id) frames.push(...this.#closeOpen());
        break;
      case 'reasoning-start':
        frames.push(...this.#openReasoning(event.id));
        break;
      case 'reasoning-delta':
        frames.push(...this.#appendReasoning(event.id, event.delta));
        break;
      case 'reasoning-end':
        if (this.#open?.kind === 'reasoning' && this.#open.id === event.id) {
          frames.push(...this.#closeOpen(event.signature));
        }
        break;
      case 'tool-input-start':
        // A call that was already sent is never announced twice (an upstream retry may replay it).
        if (this.#finishedCalls.has(event.id)) break;
        frames.push(...this.#closeOpen(), ...this.#openTool(event.id, event.kind, event.toolName));
        break;
      case 'tool-input-delta':
        frames.push(...this.#appendToolInput(event.id, event.delta));
        break;
      case 'tool-input-end':
        // The complete arguments arrive with `tool-call`; the item stays open until then.
        break;
      case 'tool-call':
        frames.push(...this.#finishToolCall(event.toolCallId, event.kind, event.toolName, event.input));
        break;
      case 'usage':
        this.#usage = event.usage;
        break;
      case 'turn-end':
        this.#usage = event.usage;
        frames.push(...this.#closeOpen(), this.#terminalFrame(event.stopReason));
        break;
      case 'error':
        frames.push(...this.#fail(event.error));
        break;
      case 'web-search':
        frames.push(...this.#webSearch(event));
        break;
      default: {
        const _exhaustive: never = event;
        return _exhaustive;
      }
    }
    return frames;
  }

  end(): SseFrame[] {
    if (this.ended) return [];
    return [...this.start(), ...this.#fail(createTurnError('api', missingEndMessage))];
  }

  /** A repeated `response.in_progress` with the current snapshot: a real event, unlike an SSE comment. */
  keepalive(): SseFrame {
    if (this.ended || !this.#started) return { comment: 'keepalive' };
    return this.#frame({ type: 'response.in_progress', response: this.#snapshot('in_progress') });
  }

  #frame(payload: { type: string } & Json): SseFrame {
    const { type, ...fields } = payload;
    return createEventFrame({ type, sequence_number: this.#sequenceNumber++, ...fields });
  }

  #itemId(prefix: string): string {
    return `${prefix}_${this.#idSuffix}_${this.#output.length}`;
  }

  #addItem(item: Json): SseFrame {
    const frame = this.#frame({
      type: 'response.output_item.added',
      output_index: this.#output.length,
      item,
    });
    this.#output.push(item);
    return frame;
  }

  #itemDone(item: Json): SseFrame {
    return this.#frame({ type: 'response.output_item.done', output_index: this.#output.indexOf(item), item });
  }

  #openText(id: string): SseFrame[] {
    const frames = this.#closeOpen();
    const item: Json = {
      id: this.#itemId('msg'),
      type: 'message',
      status: 'in_progress',
      role: 'assistant',
      content: [],
    };
    frames.push(this.#addItem(item));
    const part = { type: 'output_text', text: '', annotations: [] };
    frames.push(
      this.#frame({ type: 'response.content_part.added', ...this.#itemRef(item), content_index: 0, part }),
    );
    item['content'] = [{ ...part }];
    this.#open = { kind: 'text', id, item, text: '' };
    return frames;
  }

  #appendText(id: string, delta: string): SseFrame[] {
    const frames = this.#open?.kind === 'text' && this.#open.id === id ? [] : this.#openText(id);
    const block = this.#open as TextBlock;
    block.text += delta;
    block.item['content'] = [{ type: 'output_text', text: block.text, annotations: [] }];
    frames.push(
      this.#frame({
        type: 'response.output_text.delta',
        ...this.#itemRef(block.item),
        content_index: 0,
        delta,
        logprobs: [],
      }),
    );
    return frames;
  }

  #openReasoning(id: string): SseFrame[] {
    const frames = this.#closeOpen();
    const item: Json = { id: this.#itemId('rs'), type: 'reasoning', summary: [] };
    frames.push(this.#addItem(item));
    const part = { type: 'summary_text', text: '' };
    frames.push(
      this.#frame({
        type: 'response.reasoning_summary_part.added',
        ...this.#itemRef(item),
        summary_index: 0,
        part,
      }),
    );
    item['summary'] = [{ ...part }];
    this.#open = { kind: 'reasoning', id, item, text: '' };
    return frames;
  }

  #appendReasoning(id: string, delta: string): SseFrame[] {
    const frames = this.#open?.kind === 'reasoning' && this.#open.id === id ? [] : this.#openReasoning(id);
    const block = this.#open as ReasoningBlock;
    block.text += delta;
    block.item['summary'] = [{ type: 'summary_text', text: block.text }];
    frames.push(
      this.#frame({
        type: 'response.reasoning_summary_text.delta',
        ...this.#itemRef(block.item),
        summary_index: 0,
        delta,
      }),
    );
    return frames;
  }

  #toolOf(name: string): TurnTool | undefined {
    return this.#request.tools.find((tool) => tool.name === name);
  }

  #openTool(id: string, toolKind: ToolKind, name: string | undefined): SseFrame[] {
    const block: ToolBlock = { kind: 'tool', id, toolKind, item: undefined, input: '' };
    this.#open = block;
    return name === undefined ? [] : [this.#announceTool(block, name)];
  }

  #announceTool(block: ToolBlock, name: string): SseFrame {
    const address = this.#toolOf(name)?.clientAddress;
    if (address?.call === 'tool_search_call') {
      block.toolKind = 'tool_search';
      block.item = {
        id: this.#itemId('tsc'),
        type: 'tool_search_call',
        status: 'in_progress',
        execution: 'client',
        call_id: block.id,
        arguments: {},
      };
      return this.#addItem(block.item);
    }
    const wireName = address?.name ?? name;
    const namespace = address?.namespace === undefined ? {} : { namespace: address.namespace };
    block.item =
      block.toolKind === 'custom'
        ? {
            id: this.#itemId('ctc'),
            type: 'custom_tool_call',
            call_id: block.id,
            ...namespace,
            name: wireName,
            input: '',
          }
        : {
            id: this.#itemId('fc'),
            type: 'function_call',
            status: 'in_progress',
            arguments: '',
            call_id: block.id,
            ...namespace,
            name: wireName,
          };
    return this.#addItem(block.item);
  }

  #appendToolInput(id: string, delta: string): SseFrame[] {
    const frames: SseFrame[] = [];
    if (this.#open?.kind !== 'tool' || this.#open.id !== id) {
      if (this.#finishedCalls.has(id)) return frames;
      frames.push(...this.#closeOpen(), ...this.#openTool(id, 'function', undefined));
    }
    const block = this.#open as ToolBlock;
    block.input += delta;
    // Custom input is JSON-wrapped upstream; it is unwrapped and sent once the call is complete.
    if (block.item !== undefined && block.toolKind === 'function') {
      block.item['arguments'] = block.input;
      frames.push(
        this.#frame({ type: 'response.function_call_arguments.delta', ...this.#itemRef(block.item), delta }),
      );
    }
    return frames;
  }

  #finishToolCall(id: string, toolKind: ToolKind, name: string, input: string): SseFrame[] {
    const frames: SseFrame[] = [];
    if (this.#open?.kind !== 'tool' || this.#open.id !== id) {
      if (this.#finishedCalls.has(id)) return frames;
      frames.push(...this.#closeOpen(), ...this.#openTool(id, toolKind, undefined));
    }
    const block = this.#open as ToolBlock;
    if (block.item === undefined) {
      block.toolKind = toolKind;
      frames.push(this.#announceTool(block, name));
    }
    block.input = input;
    frames.push(...this.#closeOpen());
    return frames;
  }

  /**
   * A search (or page open) the server already ran: the open item is closed, then the `web_search_call`
   * item goes through its whole lifecycle (added in progress, in_progress, searching, completed, done
   * with its status and sources). A search already sent is never sent twice (its id is the item's id).
   */
  #webSearch(event: TurnWebSearchCall): SseFrame[] {
    const item = createWebSearchCallItem(event, false);
    const id = String(item['id']);
    if (this.#finishedWebSearches.has(id)) return [];
    this.#finishedWebSearches.add(id);
    const frames = [...this.#closeOpen(), this.#addItem(item)];
    const ref = this.#itemRef(item);
    for (const phase of ['in_progress', 'searching', 'completed']) {
      frames.push(this.#frame({ type: `response.web_search_call.${phase}`, ...ref }));
    }
    Object.assign(item, createWebSearchCallItem(event, true));
    frames.push(this.#itemDone(item));
    return frames;
  }

  #itemRef(item: Json): Json {
    return { item_id: item['id'], output_index: this.#output.indexOf(item) };
  }

  /** Finish the open block (if any) with its done events. */
  #closeOpen(signature?: string): SseFrame[] {
    const block = this.#open;
    this.#open = undefined;
    if (block === undefined) return [];
    switch (block.kind) {
      case 'text': {
        const part = { type: 'output_text', text: block.text, annotations: [] };
        const ref = this.#itemRef(block.item);
        const frames = [
          this.#frame({
            type: 'response.output_text.done',
            ...ref,
            content_index: 0,
            text: block.text,
            logprobs: [],
          }),
          this.#frame({ type: 'response.content_part.done', ...ref, content_index: 0, part }),
        ];
        Object.assign(block.item, { status: 'completed', content: [part] });
        return [...frames, this.#itemDone(block.item)];
      }
      case 'reasoning': {
        const part = { type: 'summary_text', text: block.text };
        const ref = this.#itemRef(block.item);
        const frames = [
          this.#frame({
            type: 'response.reasoning_summary_text.done',
            ...ref,
            summary_index: 0,
            text: block.text,
          }),
          this.#frame({ type: 'response.reasoning_summary_part.done', ...ref, summary_index: 0, part }),
        ];
        block.item['summary'] = [part];
        if (signature) block.item['encrypted_content'] = signature;
        return [...frames, this.#itemDone(block.item)];
      }
      case 'tool':
        return this.#closeTool(block);
      default: {
        const _exhaustive: never = block;
        return _exhaustive;
      }
    }
  }

  #closeTool(block: ToolBlock): SseFrame[] {
    // Deltas without a start or a tool-call never told us the tool's name: nothing can be announced.
    if (block.item === undefined) return [];
    this.#finishedCalls.add(block.id);
    const item = block.item;
    const ref = this.#itemRef(item);
    if (block.toolKind === 'tool_search') {
      const parsed = safeParseJson(block.input);
      Object.assign(item, { status: 'completed', arguments: parsed.ok ? parsed.value : {} });
      return [this.#itemDone(item)];
    }
    if (block.toolKind === 'custom') {
      const input = unwrapCustomToolInput(block.input);
      item['input'] = input;
      return [
        ...(input === ''
          ? []
          : [this.#frame({ type: 'response.custom_tool_call_input.delta', ...ref, delta: input })]),
        this.#frame({ type: 'response.custom_tool_call_input.done', ...ref, input }),
        this.#itemDone(item),
      ];
    }
    Object.assign(item, { status: 'completed', arguments: block.input });
    return [
      this.#frame({ type: 'response.function_call_arguments.done', ...ref, arguments: block.input }),
      this.#itemDone(item),
    ];
  }

  #terminalFrame(stopReason: TurnStopReason): SseFrame {
    const end = mapOpenaiResponsesStopReason(stopReason);
    const response = this.#snapshot(end.status, {
      incomplete_details: end.status === 'incomplete' ? { reason: end.reason } : null,
      usage: this.#usageJson(),
    });
    this.#finalResponse = response;
    return this.#frame({ type: end.event, response });
  }

  /** In-band failure: open items are left unfinished (status `incomplete`), then `error` + `response.failed`. */
  #fail(error: TurnError): SseFrame[] {
    const open = this.#open;
    this.#open = undefined;
    if (open?.item !== undefined && 'status' in open.item) open.item['status'] = 'incomplete';
    const response = this.#snapshot('in_progress', { usage: this.#usageJson() });
    const frames = createOpenaiResponsesErrorFrames(error, this.#sequenceNumber, response);
    this.#sequenceNumber += frames.length;
    this.#finalResponse = createOpenaiResponsesFailedResponse(error, response);
    return frames;
  }

  #usageJson(): Json | null {
    const usage = this.#usage;
    if (usage === undefined) return null;
    const input = promptTokens(usage);
    return {
      input_tokens: input,
      input_tokens_details: { cached_tokens: usage.cacheReadTokens },
      output_tokens: usage.outputTokens,
      output_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
      total_tokens: input + usage.outputTokens,
    };
  }

  #snapshot(status: string, extra: { incomplete_details?: Json | null; usage?: Json | null } = {}): Json {
    const request = this.#request;
    return {
      id: this.#meta.id,
      object: 'response',
      created_at: this.#meta.createdAt,
      status,
      background: false,
      error: null,
      incomplete_details: extra.incomplete_details ?? null,
      instructions: null,
      max_output_tokens: request.maxOutputTokens ?? null,
      model: this.#meta.model,
      output: structuredClone(this.#output),
      parallel_tool_calls: true,
      previous_response_id: null,
      reasoning: { effort: request.reasoning.effort ?? null, summary: null },
      store: false,
      temperature: null,
      text: { format: { type: 'text' } },
      tool_choice: this.#toolChoiceJson(),
      tools: [],
      top_p: null,
      truncation: 'disabled',
      usage: extra.usage ?? null,
      metadata: {},
    };
  }

  #toolChoiceJson(): unknown {
    const choice = this.#request.toolChoice;
    if (choice.type !== 'tool') return choice.type;
    const tool = this.#request.tools.find((candidate) => candidate.name === choice.name);
    return { type: tool?.kind === 'custom' ? 'custom' : 'function', name: choice.name };
  }
}

/**
 * The non-streaming response object for a complete event list ending in `turn-end`: the
 * {@link OpenaiResponsesStreamEncoder}'s snapshot after the events ran through it.
 */
export const createOpenaiResponsesJsonResponse = (
  request: TurnRequest,
  meta: ResponseMeta,
  events: readonly TurnEvent[],
): Json => createJsonResponseFromEvents(new OpenaiResponsesStreamEncoder(request, meta), events);
