import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';

import { createAnthropicJsonResponse } from '../../../src/protocols/anthropic/turn-to-anthropic-events.js';
import type { SseFrame } from '../../../src/protocols/sse-frame.js';
import { createSseFetch } from '../../helpers/sse-response.js';
import { encodeScript, meta, scripts, type ScriptName } from '../../helpers/protocols/turn-event-scripts.js';

/** Decode the encoder's output with the official client's own SSE parser and MessageStream accumulator. */

type Framing = { chunkSize?: number; crlf?: boolean };

const framings: Array<[string, Framing]> = [
  ['whole body', {}],
  ['1-byte chunks', { chunkSize: 1 }],
  ['7-byte chunks', { chunkSize: 7 }],
  ['CRLF, 7-byte chunks', { chunkSize: 7, crlf: true }],
  ['CRLF, whole body', { crlf: true }],
];

const clientFor = (frames: readonly SseFrame[], framing: Framing): Anthropic =>
  new Anthropic({
    apiKey: 'sk-test',
    baseURL: 'http://127.0.0.1:9',
    maxRetries: 0,
    fetch: createSseFetch(frames, framing),
  });

const request = {
  model: 'claude-opus-4-8',
  max_tokens: 1024,
  messages: [{ role: 'user' as const, content: 'hi' }],
};

const finalMessage = (name: ScriptName, framing: Framing = {}) =>
  clientFor(encodeScript(scripts[name]), framing).messages.stream(request).finalMessage();

/** Raw events from `messages.create({stream: true})` until the stream ends or throws. */
const rawEvents = async (name: ScriptName, framing: Framing = {}) => {
  const events: string[] = [];
  const stream = await clientFor(encodeScript(scripts[name]), framing).messages.create({
    ...request,
    stream: true,
  });
  try {
    for await (const event of stream) events.push(event.type);
  } catch (error) {
    return { events, error };
  }
  return { events, error: undefined };
};

describe.each(framings)('official client decodes the encoder output (%s)', (_name, framing) => {
  it('text', async () => {
    const message = await finalMessage('text', framing);
    expect(message).toMatchObject({
      id: 'msg_01fixture',
      type: 'message',
      role: 'assistant',
      model: 'claude-opus-4-8',
      content: [{ type: 'text', text: 'Hello, "world"\n' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
    });
  });

  it('thinking with its signature, then text', async () => {
    const message = await finalMessage('thinking', framing);
    expect(message.content).toEqual([
      { type: 'thinking', thinking: 'The user greets me. Reply briefly.', signature: 'c2lnbmF0dXJl' },
      { type: 'text', text: 'Hi!' },
    ]);
    expect(message.usage.output_tokens_details).toEqual({ thinking_tokens: 9 });
  });

  it('one tool call', async () => {
    const message = await finalMessage('tool-call', framing);
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content).toEqual([
      { type: 'text', text: 'Running it.' },
      {
        type: 'tool_use',
        id: 'toolu_fake_0001',
        name: 'Bash',
        input: { command: 'echo hello-from-tool', description: 'Print a greeting' },
      },
    ]);
  });

  it('two tool calls', async () => {
    const message = await finalMessage('two-tool-calls', framing);
    expect(message.content).toEqual([
      { type: 'tool_use', id: 'toolu_fake_0001', name: 'Bash', input: { command: 'ls' } },
      { type: 'tool_use', id: 'toolu_fake_0002', name: 'Bash', input: { command: 'pwd' } },
    ]);
  });

  it('usage', async () => {
    const message = await finalMessage('max-tokens', framing);
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.usage).toMatchObject({
      input_tokens: 12,
      output_tokens: 34,
      cache_read_input_tokens: 5000,
      cache_creation_input_tokens: 200,
    });
  });

  it('an upstream failure mid-stream throws the API error and yields no message', async () => {
    const stream = clientFor(encodeScript(scripts['error-mid-stream']), framing).messages.stream(request);
    const error = await stream.finalMessage().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect(error).toMatchObject({
      type: 'overloaded_error',
      apiMessage: 'Cursor is overloaded; try again shortly.',
    });
    expect(stream.receivedMessages).toEqual([]);

    const raw = await rawEvents('error-mid-stream', framing);
    expect(raw.events).toEqual(['message_start', 'content_block_start', 'content_block_delta']);
    expect(raw.error).toBeInstanceOf(Anthropic.APIError);
  });

  it('an upstream that vanished surfaces as an api_error', async () => {
    const raw = await rawEvents('upstream-vanished', framing);
    expect(raw.events).toEqual(['message_start', 'content_block_start', 'content_block_delta']);
    expect(raw.error).toBeInstanceOf(Anthropic.APIError);
    expect(raw.error).toMatchObject({ type: 'api_error' });
  });
});

describe('stream and JSON agree', () => {
  it.each(['text', 'thinking', 'tool-call', 'two-tool-calls'] as const)(
    '%s: the streamed final message equals the non-stream body',
    async (name) => {
      const streamed = await finalMessage(name);
      const json = createAnthropicJsonResponse(meta, scripts[name]);
      expect(streamed.content).toEqual(json.content);
      expect(streamed.stop_reason).toBe(json.stop_reason);
      expect(streamed.usage).toMatchObject(json.usage);
    },
  );
});

describe('keepalive', () => {
  it('ping frames are skipped by the client', async () => {
    const frames = encodeScript(scripts.text);
    const withPings = frames.flatMap((frame) => [{ event: 'ping', data: '{"type":"ping"}' }, frame]);
    const message = await clientFor(withPings, { chunkSize: 3 }).messages.stream(request).finalMessage();
    expect(message.content).toEqual([{ type: 'text', text: 'Hello, "world"\n' }]);
  });
});
