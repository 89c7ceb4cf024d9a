import OpenAI, { APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import type { SseFrame } from '../../../src/protocols/sse-frame.js';
import { OpenaiResponsesStreamEncoder } from '../../../src/protocols/openai-responses/turn-to-openai-responses-events.js';
import { createTurnError } from '../../../src/turn/turn-error.js';
import type { TurnEvent } from '../../../src/turn/turn-event.js';
import { createSseFetch } from '../../helpers/sse-response.js';
import { createTestTurnRequest } from '../../helpers/protocols/create-test-turn-request.js';
import { reasoningEvents, textEvents, toolCallEvents } from '../../helpers/protocols/turn-event-builders.js';
import { encodeTurnEvents, testMeta, testUsage } from '../../helpers/protocols/encode-turn-events.js';

const createClient = (frames: readonly SseFrame[], options: { chunkSize?: number; crlf?: boolean } = {}) =>
  new OpenAI({
    apiKey: 'sk-test',
    baseURL: 'http://127.0.0.1:9/v1',
    maxRetries: 0,
    fetch: createSseFetch(frames, options),
  });

/** The raw event stream as `responses.create({stream: true})` yields it. */
const decodeEvents = async (
  frames: readonly SseFrame[],
  options: { chunkSize?: number; crlf?: boolean } = {},
) => {
  const stream = await createClient(frames, options).responses.create({
    model: 'gpt-5.5',
    input: 'say hi',
    stream: true,
  });
  const events: OpenAI.Responses.ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
};

/** The accumulated response from the SDK's strict `responses.stream()` helper. */
const decodeFinalResponse = async (
  frames: readonly SseFrame[],
  options: { chunkSize?: number; crlf?: boolean } = {},
) => {
  const stream = createClient(frames, options).responses.stream({ model: 'gpt-5.5', input: 'say hi' });
  const types: string[] = [];
  stream.on('event', (event) => types.push(event.type));
  const response = await stream.finalResponse();
  return { response, types };
};

const end = (stopReason: 'end' | 'tool-use' | 'max-tokens' = 'end'): TurnEvent => ({
  type: 'turn-end',
  stopReason,
  usage: testUsage,
});

describe('openai SDK decodes the Responses encoder output', () => {
  it('decodes a text response into output_text and usage', async () => {
    const frames = encodeTurnEvents([...textEvents('t1', 'Hel', 'lo ', 'world'), end()]);
    const { response, types } = await decodeFinalResponse(frames);
    expect(response.id).toBe('resp_test1');
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe('Hello world');
    expect(response.usage).toEqual({
      input_tokens: 125,
      input_tokens_details: { cached_tokens: 20 },
      output_tokens: 40,
      output_tokens_details: { reasoning_tokens: 12 },
      total_tokens: 165,
    });
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
  });

  it('decodes reasoning summaries with the signature as encrypted_content', async () => {
    const frames = encodeTurnEvents([
      ...reasoningEvents('r1', 'sig-1', 'Let me ', 'think.'),
      ...textEvents('t1', 'Done.'),
      end(),
    ]);
    const { response } = await decodeFinalResponse(frames);
    expect(response.output).toMatchObject([
      {
        id: 'rs_test1_0',
        type: 'reasoning',
        summary: [{ type: 'summary_text', text: 'Let me think.' }],
        encrypted_content: 'sig-1',
      },
      {
        id: 'msg_test1_1',
        type: 'message',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'Done.', annotations: [] }],
      },
    ]);
    const events = await decodeEvents(frames);
    const deltas = events.flatMap((event) =>
      event.type === 'response.reasoning_summary_text.delta' ? [event.delta] : [],
    );
    expect(deltas).toEqual(['Let me ', 'think.']);
  });

  it('decodes one function call with streamed arguments', async () => {
    const input = '{"cmd":"echo hello-from-tool","workdir":"/tmp"}';
    const frames = encodeTurnEvents([
      ...textEvents('t1', 'Running it.'),
      ...toolCallEvents('call_fake_0001', 'exec_command', input),
      end('tool-use'),
    ]);
    const { response } = await decodeFinalResponse(frames);
    expect(response.status).toBe('completed');
    expect(response.output[1]).toMatchObject({
      id: 'fc_test1_1',
      type: 'function_call',
      status: 'completed',
      arguments: input,
      call_id: 'call_fake_0001',
      name: 'exec_command',
    });
    const events = await decodeEvents(frames);
    const argumentDeltas = events.flatMap((event) =>
      event.type === 'response.function_call_arguments.delta' ? [event.delta] : [],
    );
    expect(argumentDeltas.join('')).toBe(input);
    expect(argumentDeltas.length).toBeGreaterThan(1);
  });

  it('decodes two function calls as two output items in order', async () => {
    const frames = encodeTurnEvents([
      ...toolCallEvents('call_a', 'read', '{"filePath":"a.txt"}'),
      ...toolCallEvents('call_b', 'read', '{"filePath":"b.txt"}'),
      end('tool-use'),
    ]);
    const { response } = await decodeFinalResponse(frames);
    const calls = response.output.map((item) =>
      item.type === 'function_call' ? [item.call_id, item.arguments] : item.type,
    );
    expect(calls).toEqual([
      ['call_a', '{"filePath":"a.txt"}'],
      ['call_b', '{"filePath":"b.txt"}'],
    ]);
  });

  it('decodes a custom tool call with the raw (unwrapped) input', async () => {
    const patch = '*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n';
    const frames = encodeTurnEvents([
      ...toolCallEvents('call_patch', 'apply_patch', JSON.stringify({ input: patch }), { kind: 'custom' }),
      end('tool-use'),
    ]);
    const { response } = await decodeFinalResponse(frames);
    expect(response.output).toEqual([
      {
        id: 'ctc_test1_0',
        type: 'custom_tool_call',
        call_id: 'call_patch',
        name: 'apply_patch',
        input: patch,
      },
    ]);
  });

  it('reports max-tokens as an incomplete response', async () => {
    const frames = encodeTurnEvents([...textEvents('t1', 'Trunc'), end('max-tokens')]);
    const { response, types } = await decodeFinalResponse(frames);
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(response.output_text).toBe('Trunc');
    expect(types.at(-1)).toBe('response.incomplete');
  });

  it.each([1, 7, undefined])('decodes identically across chunk size %s and CRLF', async (chunkSize) => {
    const frames = encodeTurnEvents([
      ...reasoningEvents('r1', 'sig', 'Hmm… ünïcødé 🙂'),
      ...textEvents('t1', 'Line one\nline two', ' and 🙂'),
      ...toolCallEvents('call_x', 'bash', '{"command":"printf \\"a\\\\nb\\""}', { chunkSize: 3 }),
      end('tool-use'),
    ]);
    const whole = await decodeEvents(frames);
    const options = chunkSize === undefined ? {} : { chunkSize };
    expect(await decodeEvents(frames, options)).toEqual(whole);
    expect(await decodeEvents(frames, { ...options, crlf: true })).toEqual(whole);
    const { response } = await decodeFinalResponse(frames, { ...options, crlf: true });
    expect(response.output_text).toBe('Line one\nline two and 🙂');
    expect(response.output[2]).toMatchObject({ arguments: '{"command":"printf \\"a\\\\nb\\""}' });
  });

  it('accepts repeated response.in_progress keepalives mid-stream', async () => {
    const encoder = new OpenaiResponsesStreamEncoder(createTestTurnRequest(), testMeta);
    const frames = [...encoder.start(), encoder.keepalive()];
    frames.push(...encoder.push({ type: 'reasoning-start', id: 'r1' }), encoder.keepalive());
    frames.push(
      ...encoder.push({ type: 'reasoning-delta', id: 'r1', delta: 'thinking' }),
      encoder.keepalive(),
    );
    frames.push(...encoder.push({ type: 'reasoning-end', id: 'r1', signature: 's' }));
    frames.push(...encoder.push({ type: 'text-delta', id: 't1', delta: 'Hi' }), encoder.keepalive());
    frames.push(...encoder.push({ type: 'text-delta', id: 't1', delta: ' there' }));
    frames.push(...encoder.push({ type: 'tool-input-start', id: 'c1', toolName: 'bash', kind: 'function' }));
    frames.push(
      ...encoder.push({ type: 'tool-input-delta', id: 'c1', delta: '{"command":' }),
      encoder.keepalive(),
    );
    frames.push(...encoder.push({ type: 'tool-input-delta', id: 'c1', delta: '"ls"}' }));
    frames.push(
      ...encoder.push({
        type: 'tool-call',
        toolCallId: 'c1',
        toolName: 'bash',
        kind: 'function',
        input: '{"command":"ls"}',
      }),
    );
    frames.push(encoder.keepalive(), ...encoder.push(end('tool-use')), ...encoder.end());

    const { response, types } = await decodeFinalResponse(frames);
    // One from start() plus six keepalives.
    expect(types.filter((type) => type === 'response.in_progress')).toHaveLength(7);
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe('Hi there');
    expect(response.output.map((item) => item.type)).toEqual(['reasoning', 'message', 'function_call']);
    expect(response.output[0]).toMatchObject({ summary: [{ type: 'summary_text', text: 'thinking' }] });
    expect(response.output[2]).toMatchObject({ arguments: '{"command":"ls"}', status: 'completed' });
    const sequenceNumbers = (await decodeEvents(frames)).map((event) => event.sequence_number);
    expect(sequenceNumbers).toEqual(sequenceNumbers.map((_, index) => index));
  });

  describe('upstream failures', () => {
    const failingFrames = () =>
      encodeTurnEvents([
        { type: 'text-start', id: 't1' },
        { type: 'text-delta', id: 't1', delta: 'Partial' },
        { type: 'error', error: createTurnError('rate-limit', 'Cursor rate limit reached; retry in 30s.') },
      ]);

    it('makes the raw stream iterator throw the API error after the partial text', async () => {
      const seen: string[] = [];
      const iterate = async () => {
        const stream = await createClient(failingFrames()).responses.create({
          model: 'gpt-5.5',
          input: 'say hi',
          stream: true,
        });
        for await (const event of stream) seen.push(event.type);
      };
      const error = await iterate().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(APIError);
      expect((error as APIError).message).toBe('Cursor rate limit reached; retry in 30s.');
      expect((error as APIError).code).toBe('rate_limit_exceeded');
      expect((error as APIError).type).toBe('rate_limit_error');
      expect(seen).toEqual([
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
      ]);
    });

    it.each([1, 7, undefined])('rejects responses.stream() cleanly (chunk size %s)', async (chunkSize) => {
      const options = chunkSize === undefined ? {} : { chunkSize };
      const stream = createClient(failingFrames(), options).responses.stream({
        model: 'gpt-5.5',
        input: 'x',
      });
      const error = await stream.finalResponse().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(APIError);
      expect((error as Error).message).toBe('Cursor rate limit reached; retry in 30s.');
    });

    it('reports an upstream that vanished (end() without a terminal event) as an API error', async () => {
      const encoder = new OpenaiResponsesStreamEncoder(createTestTurnRequest(), testMeta);
      const frames = [
        ...encoder.start(),
        ...encoder.push({ type: 'text-delta', id: 't1', delta: 'Par' }),
        ...encoder.end(),
      ];
      const stream = createClient(frames).responses.stream({ model: 'gpt-5.5', input: 'x' });
      const error = await stream.finalResponse().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(APIError);
      expect((error as APIError).code).toBe('server_error');
      expect((error as Error).message).toMatch(/upstream run ended/);
    });
  });
});
