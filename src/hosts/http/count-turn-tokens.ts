/**
 * Token counts for `POST /v1/messages/count_tokens`, over the neutral request: its system text, every
 * message (text, reasoning, tool-call input JSON, tool results) and its tool definitions.
 *
 * The tokenizer is OpenAI's `o200k_base` from `gpt-tokenizer` (pure JS): the vocabulary of the GPT models
 * Cursor serves and the nearest public one to its other models (Claude's own tokenizer is not public; the
 * npm `@anthropic-ai/tokenizer` is Claude 2's). It is imported on first use: loading the vocabulary is
 * costly, and neither `serve`'s start nor a request that counts nothing should pay for it.
 *
 * Counting is CPU work on the event loop, so it yields to the loop every
 * {@link sliceChars} characters, and counts of long texts are remembered by digest: Claude Code's `/context`
 * sends about 30 requests that repeat the same system prompt and tools.
 */

import { createHash } from 'node:crypto';
import type { TurnMessage, TurnRequest, TurnUserPart } from '../../turn/turn-request.js';

/**
 * What one image counts: Anthropic's own figure for a full-size image (≈ 1.15 megapixels, `width × height
 * / 750`). The bridge does not decode images to measure them; a flat upper estimate keeps a client's
 * context meter on the safe side.
 */
export const IMAGE_TOKEN_ESTIMATE = 1_600;

/** Framing per message and per tool (role markers, separators), as OpenAI's chat format counts it. */
export const MESSAGE_OVERHEAD_TOKENS = 3;

/** Texts counted in one go before the counter yields to the event loop. */
const sliceChars = 64 * 1024;

/** Texts at least this long have their counts remembered. */
const cachedMinChars = 512;
/** Remembered counts (an LRU by digest): bounded whatever the traffic. */
const cacheEntries = 2_048;

type Tokenizer = { countTokens: (text: string, options: { disallowedSpecial: Set<string> }) => number };

let loading: Promise<Tokenizer> | undefined;
const cache = new Map<string, number>();
/** Special-token markers such as `<|endoftext|>` in a request are text like any other, never an error. */
const plainText = { disallowedSpecial: new Set<string>() };

/** The tokenizer, imported once on first use (concurrent first callers share the import). */
export const loadTokenizer = (): Promise<Tokenizer> => {
  loading ??= import('gpt-tokenizer/encoding/o200k_base').catch((error: unknown) => {
    loading = undefined;
    throw error;
  });
  return loading;
};

const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * `text` in pieces of about {@link sliceChars}, each cut just after a line break where there is one, so the
 * pieces tokenize as the whole does (a line break ends a pre-token in o200k_base) but for a token or so per
 * cut in text without line breaks.
 */
const slices = (text: string): string[] => {
  if (text.length <= sliceChars) return [text];
  const pieces: string[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(start + sliceChars, text.length);
    if (end < text.length) {
      const newline = text.lastIndexOf('\n', end);
      if (newline > start) end = newline + 1;
    }
    pieces.push(text.slice(start, end));
    start = end;
  }
  return pieces;
};

/** Counts texts one after another, yielding to the event loop between slices of work. */
class TextCounter {
  #sinceYield = 0;
  total = 0;

  constructor(private readonly tokenizer: Tokenizer) {}

  async add(text: string): Promise<void> {
    if (text.length === 0) return;
    const key = text.length >= cachedMinChars ? createHash('sha1').update(text).digest('base64') : undefined;
    const known = key === undefined ? undefined : cache.get(key);
    if (known !== undefined && key !== undefined) {
      cache.delete(key);
      cache.set(key, known);
      this.total += known;
      return;
    }
    let count = 0;
    for (const piece of slices(text)) {
      if (this.#sinceYield >= sliceChars) {
        this.#sinceYield = 0;
        await yieldToEventLoop();
      }
      count += this.tokenizer.countTokens(piece, plainText);
      this.#sinceYield += piece.length;
    }
    this.total += count;
    if (key === undefined) return;
    cache.set(key, count);
    if (cache.size > cacheEntries) cache.delete(cache.keys().next().value as string);
  }

  addFixed(tokens: number): void {
    this.total += tokens;
  }
}

const json = (value: unknown): string => (typeof value === 'string' ? value : (JSON.stringify(value) ?? ''));

const addUserParts = async (counter: TextCounter, parts: readonly TurnUserPart[]): Promise<void> => {
  for (const part of parts) {
    if (part.type === 'text') await counter.add(part.text);
    else counter.addFixed(IMAGE_TOKEN_ESTIMATE);
  }
};

const addMessage = async (counter: TextCounter, message: TurnMessage): Promise<void> => {
  counter.addFixed(MESSAGE_OVERHEAD_TOKENS);
  switch (message.role) {
    case 'system':
    case 'user':
      return addUserParts(counter, message.content);
    case 'tool':
      return addUserParts(counter, message.content);
    case 'assistant':
      for (const part of message.content) {
        if (part.type === 'tool-call') await counter.add(`${part.toolName} ${json(part.input)}`);
        else if (part.type === 'web-search') await counter.add(json(part));
        else await counter.add(part.text);
      }
      return;
    default: {
      const _exhaustive: never = message;
      return _exhaustive;
    }
  }
};

/**
 * The request's input tokens: system text, messages and tool definitions (name, description and input
 * schema as JSON), plus {@link MESSAGE_OVERHEAD_TOKENS} per message and per tool, and
 * {@link IMAGE_TOKEN_ESTIMATE} per image. Resolves after loading the tokenizer on first use.
 */
export const countTurnTokens = async (
  request: Pick<TurnRequest, 'system' | 'messages' | 'tools'>,
): Promise<number> => {
  const counter = new TextCounter(await loadTokenizer());
  for (const part of request.system) await counter.add(part.text);
  for (const message of request.messages) await addMessage(counter, message);
  for (const tool of request.tools) {
    counter.addFixed(MESSAGE_OVERHEAD_TOKENS);
    const definition = { name: tool.name, description: tool.description, input_schema: tool.inputSchema };
    await counter.add(JSON.stringify(definition));
  }
  return counter.total;
};
