import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';

import {
  createAnthropicErrorFrames,
  createAnthropicErrorResponse,
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

describe('createAnthropicErrorResponse through the official client', () => {
  it.each([
    ['invalid-request', 400, 'invalid_request_error', Anthropic.BadRequestError],
    ['authentication', 401, 'authentication_error', Anthropic.AuthenticationError],
    ['permission', 403, 'permission_error', Anthropic.PermissionDeniedError],
    ['not-found', 404, 'not_found_error', Anthropic.NotFoundError],
    ['request-too-large', 413, 'request_too_large', Anthropic.ContentTooLargeError],
    ['rate-limit', 429, 'rate_limit_error', Anthropic.RateLimitError],
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
    const client = new Anthropic({
      apiKey: 'sk-test',
      baseURL: 'http://127.0.0.1:9',
      maxRetries: 0,
      fetch: createSseFetch(frames),
    });
    const stream = await client.messages.create({ ...request, stream: true });
    const error = await (async () => {
      for await (const _event of stream) {
        // no events precede the error
      }
    })().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect(error).toMatchObject({ type: 'rate_limit_error', apiMessage: 'Cursor rate limit reached' });
  });
});
