import OpenAI from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { describe, expect, it } from 'vitest';
import type { SseFrame } from '../../../src/protocols/sse-frame.js';
import { createSseFetch } from '../../helpers/sse-response.js';
import { createOpenaiChatJsonResponse } from '../../../src/protocols/openai-chat/turn-to-openai-chat-events.js';
import type { TurnEvent } from '../../../src/turn/turn-event.js';
import type { EncoderStep } from '../../helpers/protocols/run-stream-encoder.js';
import {
  encodeScript,
  expectedUsage,
  meta,
  scripts,
  type ScriptName,
} from '../../helpers/protocols/openai-chat-scripts.js';

/** The official client, pointed at a fetch stand-in; the base URL is never contacted. */
const clientFor = (frames: readonly SseFrame[], options: { chunkSize?: number; crlf?: boolean } = {}) =>
  new OpenAI({
    apiKey: 'sk-test',
    baseURL: 'http://127.0.0.1:9/v1',
    maxRetries: 0,
    fetch: createSseFetch(frames, options),
  });

const request = {
  model: 'composer-2',
  messages: [{ role: 'user' as const, content: 'hi' }],
  stream: true as const,
};

/** Raw chunks through `chat.completions.create({stream:true})`; an error thrown mid-stream is returned. */
const collectChunks = async (
  name: ScriptName,
  options: { chunkSize?: number; crlf?: boolean } = {},
): Promise<{ chunks: ChatCompletionChunk[]; error?: unknown }> => {
  const stream = await clientFor(encodeScript(scripts[name]), options).chat.completions.create(request);
  const chunks: ChatCompletionChunk[] = [];
  try {
    for await (const chunk of stream) chunks.push(chunk);
  } catch (error) {
    return { chunks, error };
  }
  return { chunks };
};

/** The SDK's own accumulator (`ChatCompletionStream`), which assembles content and tool calls. */
const finalCompletion = async (name: ScriptName, options: { chunkSize?: number; crlf?: boolean } = {}) =>
  clientFor(encodeScript(scripts[name]), options).chat.completions.stream(request).finalChatCompletion();

const transports = [
  { label: 'whole body', options: {} },
  { label: 'chunkSize 1', options: { chunkSize: 1 } },
  { label: 'chunkSize 7', options: { chunkSize: 7 } },
  { label: 'CRLF, chunkSize 7', options: { chunkSize: 7, crlf: true } },
  { label: 'CRLF, chunkSize 1', options: { chunkSize: 1, crlf: true } },
];

describe.each(transports)('openai SDK decodes the encoder stream ($label)', ({ options }) => {
  it('text, with the finish chunk and trailing usage chunk', async () => {
    const { chunks, error } = await collectChunks('text', options);
    expect(error).toBeUndefined();
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? null)).toEqual([
      '',
      'Hello',
      ', world',
      null,
      null,
    ]);
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe('stop');
    expect(chunks.at(-2)?.usage).toEqual(expectedUsage);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: expectedUsage });
    expect(chunks.every((chunk) => chunk.id === 'chatcmpl-test0001')).toBe(true);

    const completion = await finalCompletion('text', options);
    expect(completion.choices[0]?.message.content).toBe('Hello, world');
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage).toEqual(expectedUsage);
  });

  it('reasoning arrives as delta.reasoning_content, before the text', async () => {
    const { chunks, error } = await collectChunks('reasoning', options);
    expect(error).toBeUndefined();
    const reasoning = chunks
      .map(
        (chunk) => (chunk.choices[0]?.delta as { reasoning_content?: string } | undefined)?.reasoning_content,
      )
      .filter((part) => part !== undefined);
    expect(reasoning).toEqual(['Thinking about ', 'it.']);
    const completion = await finalCompletion('reasoning', options);
    expect(completion.choices[0]?.message.content).toBe('Done.');
  });

  it('one tool call, assembled by the SDK', async () => {
    const completion = await finalCompletion('tool-call', options);
    expect(completion.choices[0]?.finish_reason).toBe('tool_calls');
    expect(completion.choices[0]?.message.content).toBe('Let me check.');
    expect(completion.choices[0]?.message.tool_calls).toEqual([
      { id: 'call_1', type: 'function', function: { name: 'bash', arguments: '{"command":"ls -la"}' } },
    ]);
  });

  it('two tool calls, assembled by the SDK', async () => {
    const completion = await finalCompletion('two-tool-calls', options);
    expect(completion.choices[0]?.finish_reason).toBe('tool_calls');
    expect(completion.choices[0]?.message.tool_calls).toEqual([
      { id: 'call_1', type: 'function', function: { name: 'read', arguments: '{"filePath":"/w/a.txt"}' } },
      { id: 'call_2', type: 'function', function: { name: 'glob', arguments: '{"pattern":"**/*.ts"}' } },
    ]);
    expect(completion.usage).toEqual(expectedUsage);
  });

  it('an upstream failure mid-stream throws an APIError after the clean partial chunks', async () => {
    const { chunks, error } = await collectChunks('error-mid-stream', options);
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content)).toEqual(['', 'Partial']);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    const apiError = error as InstanceType<typeof OpenAI.APIError>;
    expect(apiError.message).toContain('Cursor is overloaded; try again shortly.');
    expect(apiError.type).toBe('server_error');
    expect(apiError.code).toBe('overloaded');
  });

  it('an upstream that vanished surfaces as an APIError too', async () => {
    const { chunks, error } = await collectChunks('upstream-vanished', options);
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content)).toEqual(['', 'Cut']);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as Error).message).toContain('ended without finishing');
  });
});

describe('openai SDK without include_usage', () => {
  it('decodes a stream with no usage anywhere', async () => {
    const { chunks, error } = await collectChunks('text-no-usage');
    expect(error).toBeUndefined();
    expect(chunks.map((chunk) => chunk.usage ?? null)).toEqual([null, null, null]);
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('stop');
  });
});

describe('stream and JSON agree', () => {
  it.each(['text', 'reasoning', 'tool-call', 'two-tool-calls'] as const)(
    '%s: the SDK-accumulated stream equals the non-stream body',
    async (name) => {
      const streamed = await finalCompletion(name);
      const steps: readonly EncoderStep[] = scripts[name].steps;
      const events = steps.filter((step): step is TurnEvent => step !== 'keepalive');
      const json = createOpenaiChatJsonResponse(meta, events);
      const message = json.choices[0]?.message;
      expect(streamed.choices[0]?.message).toMatchObject({
        // The role chunk carries `content: ""`; the body says `null` for a tool-only turn, as OpenAI does.
        content: message?.content ?? '',
        ...(message?.tool_calls === undefined ? {} : { tool_calls: message.tool_calls }),
      });
      expect(streamed.choices[0]?.finish_reason).toBe(json.choices[0]?.finish_reason);
    },
  );
});
