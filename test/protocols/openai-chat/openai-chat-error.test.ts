import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import {
  createOpenaiChatErrorFrames,
  createOpenaiChatErrorResponse,
} from '../../../src/protocols/openai-chat/openai-chat-error.js';
import { createTurnError, type TurnErrorKind } from '../../../src/turn/turn-error.js';
import { createJsonFetch } from '../../helpers/sse-response.js';

/** Sends one request through the official client against the error response and returns what it threw. */
const thrownBy = async (kind: TurnErrorKind, extra: { param?: string; retryable?: boolean } = {}) => {
  const answer = createOpenaiChatErrorResponse(createTurnError(kind, `failure of kind ${kind}`, extra));
  let calls = 0;
  const answerFetch = createJsonFetch(answer.body, answer.status, answer.headers);
  const client = new OpenAI({
    apiKey: 'sk-test',
    baseURL: 'http://127.0.0.1:9/v1',
    // One retry allowed, so the test sees whether `x-should-retry` stops it (SDK backoff is ~0.5-1 s).
    maxRetries: 1,
    fetch: async () => {
      calls += 1;
      return answerFetch();
    },
  });
  try {
    await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
  } catch (error) {
    return { error, calls, answer };
  }
  throw new Error('expected the client to throw');
};

describe('createOpenaiChatErrorResponse with the official openai client', () => {
  it.each([
    ['invalid-request', 400, OpenAI.BadRequestError, 'invalid_request_error', null],
    // What OpenAI answers a prompt over the model's window with.
    ['context-length', 400, OpenAI.BadRequestError, 'invalid_request_error', 'context_length_exceeded'],
    ['authentication', 401, OpenAI.AuthenticationError, 'invalid_request_error', 'invalid_api_key'],
    ['permission', 403, OpenAI.PermissionDeniedError, 'invalid_request_error', 'permission_denied'],
    ['not-found', 404, OpenAI.NotFoundError, 'invalid_request_error', 'not_found'],
    ['request-too-large', 413, OpenAI.APIError, 'invalid_request_error', 'request_too_large'],
    ['rate-limit', 429, OpenAI.RateLimitError, 'rate_limit_error', 'rate_limit_exceeded'],
    // What OpenAI answers a spent quota with.
    ['usage-limit', 429, OpenAI.RateLimitError, 'insufficient_quota', 'insufficient_quota'],
    ['api', 500, OpenAI.InternalServerError, 'server_error', 'server_error'],
    ['overloaded', 503, OpenAI.InternalServerError, 'server_error', 'overloaded'],
    ['timeout', 504, OpenAI.InternalServerError, 'server_error', 'timeout'],
  ] as const)('%s → %i %s', async (kind, status, errorClass, type, code) => {
    const { error } = await thrownBy(kind, { retryable: false });
    expect(error).toBeInstanceOf(errorClass);
    const apiError = error as InstanceType<typeof OpenAI.APIError>;
    expect(apiError.status).toBe(status);
    expect(apiError.message).toContain(`failure of kind ${kind}`);
    expect(apiError.type).toBe(type);
    expect(apiError.code).toBe(code);
  });

  it('keeps a usage limit from being retried; gives a rate limit retry-after and, when known, its reset', async () => {
    const { calls, answer } = await thrownBy('usage-limit', { retryable: false });
    expect(answer.headers).toEqual({ 'x-should-retry': 'false' });
    expect(calls).toBe(1);
    const told = createTurnError('rate-limit', 'slow', { retryAfterSeconds: 30, resetSeconds: 30 });
    expect(createOpenaiChatErrorResponse(told).headers).toEqual({
      'retry-after': '30',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': '30s',
    });
    const untold = createTurnError('rate-limit', 'slow', { retryAfterSeconds: 10 });
    expect(createOpenaiChatErrorResponse(untold).headers).toEqual({ 'retry-after': '10' });
  });

  it('carries param for invalid requests', async () => {
    const { error, answer } = await thrownBy('invalid-request', { param: 'messages.2.content' });
    expect((error as InstanceType<typeof OpenAI.APIError>).param).toBe('messages.2.content');
    expect(answer.body).toEqual({
      error: {
        message: 'failure of kind invalid-request',
        type: 'invalid_request_error',
        param: 'messages.2.content',
        code: null,
      },
    });
  });

  it('adds x-should-retry: false to non-retryable errors, so the SDK does not retry them', async () => {
    const { calls, answer } = await thrownBy('rate-limit', { retryable: false });
    expect(answer.headers).toEqual({ 'x-should-retry': 'false' });
    expect(calls).toBe(1);
  });

  it('leaves retryable errors to the SDK retry policy', async () => {
    const { calls, answer } = await thrownBy('overloaded');
    expect(answer.headers).toEqual({});
    expect(calls).toBe(2);
  }, 20_000);

  it('authentication defaults to non-retryable', () => {
    expect(createOpenaiChatErrorResponse(createTurnError('authentication', 'bad key')).headers).toEqual({
      'x-should-retry': 'false',
    });
  });
});

describe('a conversation over the context window (context-length)', () => {
  it('is not retried: x-should-retry: false by default', async () => {
    const { calls, answer } = await thrownBy('context-length');
    expect(answer.headers).toEqual({ 'x-should-retry': 'false' });
    expect(calls).toBe(1);
  });

  it('goes in-band as an error chunk with code context_length_exceeded, then [DONE]', () => {
    expect(createOpenaiChatErrorFrames(createTurnError('context-length', 'too long'))).toEqual([
      {
        data: '{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}',
      },
      { data: '[DONE]' },
    ]);
  });
});

describe('createOpenaiChatErrorFrames', () => {
  it('is one data error chunk then [DONE]', () => {
    expect(createOpenaiChatErrorFrames(createTurnError('permission', 'no access'))).toEqual([
      { data: '{"error":{"message":"no access","type":"invalid_request_error","code":"permission_denied"}}' },
      { data: '[DONE]' },
    ]);
  });
});
