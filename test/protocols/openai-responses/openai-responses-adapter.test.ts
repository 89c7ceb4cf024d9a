import OpenAI, { BadRequestError } from 'openai';
import { describe, expect, it } from 'vitest';
import { openaiResponsesAdapter } from '../../../src/protocols/openai-responses/openai-responses-adapter.js';
import { createJsonFetch, createSseFetch } from '../../helpers/sse-response.js';
import { runStreamEncoder } from '../../helpers/protocols/run-stream-encoder.js';
import { textEvents, toolCallEvents } from '../../helpers/protocols/turn-event-builders.js';
import { testMeta, testUsage } from '../../helpers/protocols/encode-turn-events.js';

const createClient = (fetch: ReturnType<typeof createJsonFetch>) =>
  new OpenAI({ apiKey: 'sk-test', baseURL: 'http://127.0.0.1:9/v1', maxRetries: 0, fetch });

const parse = (body: unknown) => {
  const result = openaiResponsesAdapter.parseRequest(body, {
    'x-session-id': 'ses_1',
    authorization: 'Bearer k',
  });
  if (!result.ok) throw new Error(result.error.message);
  return result.value;
};

describe('openaiResponsesAdapter', () => {
  it('identifies the protocol and its id prefix', () => {
    expect(openaiResponsesAdapter.protocol).toBe('openai-responses');
    expect(openaiResponsesAdapter.idPrefix).toBe('resp_');
  });

  it('parses requests and reports bad ones as invalid-request', () => {
    const request = parse({ model: 'gpt-5.5', input: 'hi', stream: true });
    expect(request).toMatchObject({
      protocol: 'openai-responses',
      stream: true,
      headers: { 'x-session-id': 'ses_1' },
    });
    expect(
      openaiResponsesAdapter.parseRequest({ model: 'gpt-5.5', input: 'x', conversation: 'c' }, {}),
    ).toMatchObject({
      ok: false,
      error: { kind: 'invalid-request', param: 'conversation' },
    });
  });

  it('builds a non-streaming response the openai SDK reads', async () => {
    const request = parse({ model: 'gpt-5.5', input: 'hi' });
    const body = openaiResponsesAdapter.createJsonResponse(request, testMeta, [
      ...textEvents('t1', 'Hello ', 'there'),
      ...toolCallEvents('call_1', 'bash', '{"command":"ls"}'),
      { type: 'turn-end', stopReason: 'tool-use', usage: testUsage },
    ]);
    const response = await createClient(createJsonFetch(body)).responses.create({
      model: 'gpt-5.5',
      input: 'hi',
    });
    expect(response.id).toBe('resp_test1');
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe('Hello there');
    expect(response.output[1]).toMatchObject({
      type: 'function_call',
      call_id: 'call_1',
      arguments: '{"command":"ls"}',
    });
    expect(response.usage?.total_tokens).toBe(165);
  });

  it('creates stream encoders bound to the response meta', async () => {
    const request = parse({ model: 'gpt-5.5', input: 'hi', stream: true });
    const encoder = openaiResponsesAdapter.createStreamEncoder(request, { ...testMeta, id: 'resp_other' });
    const frames = runStreamEncoder(encoder, [
      ...textEvents('t1', 'ok'),
      { type: 'turn-end', stopReason: 'end', usage: testUsage },
    ]);
    expect(encoder.ended).toBe(true);
    const stream = createClient(createSseFetch(frames)).responses.stream({ model: 'gpt-5.5', input: 'hi' });
    const response = await stream.finalResponse();
    expect(response.id).toBe('resp_other');
    expect(response.output_text).toBe('ok');
  });

  it('answers errors in the OpenAI envelope', async () => {
    const response = openaiResponsesAdapter.createErrorResponse({
      kind: 'invalid-request',
      message: 'bad input',
      param: 'input',
      retryable: false,
    });
    expect(response.status).toBe(400);
    const error = await createClient(createJsonFetch(response.body, response.status, response.headers))
      .responses.create({ model: 'gpt-5.5', input: 'hi' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BadRequestError);
  });
});
