import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';

import {
  createAnthropicErrorFrames,
  createAnthropicErrorResponse,
  createAnthropicRateLimitHeaders,
} from '../../../src/protocols/anthropic/anthropic-error.js';
import { createTurnError, type TurnErrorKind } from '../../../src/turn/turn-error.js';
import { createJsonFetch, createSseFetch } from '../../helpers/sse-response.js';

const request = {
  model: 'claude-opus-4-8',
  max_tokens: 16,
  messages: [{ role: 'user' as const, content: 'hi' }],
};

/** Serve the error response to the official client and return what it throws, and how often it asked. */
const throwFor = async (kind: TurnErrorKind, options: { retryable?: boolean; maxRetries?: number } = {}) => {
  const response = createAnthropicErrorResponse(
    createTurnError(
      kind,
      `${kind} happened`,
      options.retryable === undefined ? {} : { retryable: options.retryable },
    ),
  );
  const serve = createJsonFetch(response.body, response.status, {
    ...response.headers,
    // Keep the client's backoff short when it does retry.
    'retry-after-ms': '1',
  });
  let calls = 0;
  const client = new Anthropic({
    apiKey: 'sk-test',
    baseURL: 'http://127.0.0.1:9',
    maxRetries: options.maxRetries ?? 0,
    fetch: async () => {
      calls += 1;
      return serve();
    },
  });
  const error = await client.messages.create(request).catch((caught: unknown) => caught);
  return { error, calls, response };
};

/** What the official SDK throws while reading `frames` as a Messages stream (no events precede the error). */
const streamError = async (frames: ReturnType<typeof createAnthropicErrorFrames>): Promise<unknown> => {
  const client = new Anthropic({
    apiKey: 'sk-test',
    baseURL: 'http://127.0.0.1:9',
    maxRetries: 0,
    fetch: createSseFetch(frames),
  });
  const stream = await client.messages.create({ ...request, stream: true });
  return (async () => {
    for await (const _event of stream) {
      // no events precede the error
    }
  })().catch((caught: unknown) => caught);
};

describe('createAnthropicErrorResponse through the official client', () => {
  it.each([
    ['invalid-request', 400, 'invalid_request_error', Anthropic.BadRequestError],
    ['authentication', 401, 'authentication_error', Anthropic.AuthenticationError],
    ['permission', 403, 'permission_error', Anthropic.PermissionDeniedError],
    ['not-found', 404, 'not_found_error', Anthropic.NotFoundError],
    ['request-too-large', 413, 'request_too_large', Anthropic.ContentTooLargeError],
    ['rate-limit', 429, 'rate_limit_error', Anthropic.RateLimitError],
    ['usage-limit', 429, 'rate_limit_error', Anthropic.RateLimitError],
    ['api', 500, 'api_error', Anthropic.InternalServerError],
    ['overloaded', 529, 'overloaded_error', Anthropic.OverloadedError],
    ['timeout', 504, 'timeout_error', Anthropic.GatewayTimeoutError],
  ] as const)('%s → %i %s', async (kind, status, type, errorClass) => {
    const { error, response } = await throwFor(kind);
    expect(response.status).toBe(status);
    expect(response.body).toEqual({ type: 'error', error: { type, message: `${kind} happened` } });
    expect(error).toBeInstanceOf(errorClass);
    expect(error).toMatchObject({ status, type, apiMessage: `${kind} happened` });
    // The SDK prints the status and the whole envelope (what Claude Code shows as "API Error: …").
    expect((error as Error).message).toBe(`${status} ${JSON.stringify(response.body)}`);
  });

  it('marks non-retryable errors with x-should-retry: false, and the client does not retry them', async () => {
    const { response, calls, error } = await throwFor('authentication', { maxRetries: 2 });
    expect(response.headers).toEqual({ 'x-should-retry': 'false' });
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(calls).toBe(1);
  });

  it('lets retryable errors be retried (no x-should-retry header)', async () => {
    const { response, calls } = await throwFor('overloaded', { maxRetries: 2 });
    expect(response.headers).toEqual({});
    expect(calls).toBe(3);
  });

  it('makes a usage limit final: x-should-retry false on its 429, the client asks once', async () => {
    const { response, calls, error } = await throwFor('usage-limit', { maxRetries: 2 });
    expect(response.headers).toEqual({ 'x-should-retry': 'false' });
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    expect(calls).toBe(1);
  });

  it('sends retry-after, and the rate-limit reset headers only when the upstream said when', () => {
    const now = Date.parse('2026-12-05T10:00:00Z');
    const told = createTurnError('rate-limit', 'slow', { retryAfterSeconds: 90, resetSeconds: 90 });
    expect(createAnthropicRateLimitHeaders(told, now)).toEqual({
      'anthropic-ratelimit-requests-remaining': '0',
      'anthropic-ratelimit-requests-reset': '2026-12-05T10:01:30Z',
    });
    expect(createAnthropicErrorResponse(told).headers).toMatchObject({ 'retry-after': '90' });
    const untold = createTurnError('rate-limit', 'slow', { retryAfterSeconds: 10 });
    expect(createAnthropicErrorResponse(untold).headers).toEqual({ 'retry-after': '10' });
  });

  it('honours an explicit retryable: false on a normally retryable kind', async () => {
    const { response, calls } = await throwFor('api', { retryable: false, maxRetries: 2 });
    expect(response.headers).toEqual({ 'x-should-retry': 'false' });
    expect(calls).toBe(1);
  });
});

describe('createAnthropicErrorFrames', () => {
  it('is an `error` event the client throws as an APIError with the type and message, then message_stop', async () => {
    const frames = createAnthropicErrorFrames(createTurnError('rate-limit', 'Cursor rate limit reached'));
    expect(frames).toEqual([
      {
        event: 'error',
        data: '{"type":"error","error":{"type":"rate_limit_error","message":"Cursor rate limit reached"}}',
      },
      { event: 'message_stop', data: '{"type":"message_stop"}' },
    ]);
    const error = await streamError(frames);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect(error).toMatchObject({ type: 'rate_limit_error', apiMessage: 'Cursor rate limit reached' });
  });
});

describe('a conversation over the context window (context-length)', () => {
  const overflow = createTurnError(
    'context-length',
    "The conversation exceeds the Cursor model's maximum context length (Cursor: Your conversation is too long).",
  );
  const expectedMessage = `prompt is too long: ${overflow.message}`;
  /**
   * Claude Code 2.1.332's own test (`nyo` in its bundle): the lower-cased error message includes
   * "prompt is too long". It then compacts, or shows "Prompt is too long", instead of retrying.
   */
  const claudeCodeSeesPromptTooLong = (message: string): boolean =>
    message.toLowerCase().includes('prompt is too long');

  it('is 400 invalid_request_error "prompt is too long: …", not retried by the client', async () => {
    const response = createAnthropicErrorResponse(overflow);
    expect(response).toEqual({
      status: 400,
      headers: { 'x-should-retry': 'false' },
      body: { type: 'error', error: { type: 'invalid_request_error', message: expectedMessage } },
    });
    let calls = 0;
    const serve = createJsonFetch(response.body, response.status, {
      ...response.headers,
      'retry-after-ms': '1',
    });
    const client = new Anthropic({
      apiKey: 'sk-test',
      baseURL: 'http://127.0.0.1:9',
      maxRetries: 2,
      fetch: async () => {
        calls += 1;
        return serve();
      },
    });
    const error = await client.messages.create(request).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect(error).toMatchObject({ status: 400, type: 'invalid_request_error', apiMessage: expectedMessage });
    expect(claudeCodeSeesPromptTooLong((error as Error).message)).toBe(true);
    expect(calls).toBe(1);
  });

  it('goes in-band as an `error` event of type invalid_request_error with the same message', async () => {
    const frames = createAnthropicErrorFrames(overflow);
    expect(frames[0]).toEqual({
      event: 'error',
      data: JSON.stringify({
        type: 'error',
        error: { type: 'invalid_request_error', message: expectedMessage },
      }),
    });
    const error = await streamError(frames);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect(error).toMatchObject({ type: 'invalid_request_error', apiMessage: expectedMessage });
    expect(claudeCodeSeesPromptTooLong((error as Error).message)).toBe(true);
  });

  it('keeps a message that already says "prompt is too long" as it is', () => {
    const upstream = createTurnError('context-length', 'prompt is too long: 210000 tokens > 200000 maximum');
    expect(createAnthropicErrorResponse(upstream).body).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' },
    });
  });
});
