import OpenAI, {
  APIError,
  AuthenticationError,
  BadRequestError,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
} from 'openai';
import { describe, expect, it } from 'vitest';
import {
  createOpenaiResponsesErrorFrames,
  createOpenaiResponsesErrorResponse,
  mapOpenaiResponsesError,
} from '../../../src/protocols/openai-responses/openai-responses-error.js';
import type { TurnErrorKind } from '../../../src/turn/turn-error.js';
import { createTurnError } from '../../../src/turn/turn-error.js';
import { createJsonFetch } from '../../helpers/sse-response.js';

const createClient = (fetch: ReturnType<typeof createJsonFetch>, maxRetries = 0) =>
  new OpenAI({ apiKey: 'sk-test', baseURL: 'http://127.0.0.1:9/v1', maxRetries, fetch });

const callWith = async (fetch: ReturnType<typeof createJsonFetch>, maxRetries = 0): Promise<unknown> =>
  createClient(fetch, maxRetries)
    .responses.create({ model: 'gpt-5.5', input: 'hi' })
    .then(
      () => undefined,
      (error: unknown) => error,
    );

const cases: [TurnErrorKind, number, string, abstract new (...args: never[]) => APIError][] = [
  ['invalid-request', 400, 'invalid_request_error', BadRequestError],
  ['context-length', 400, 'invalid_request_error', BadRequestError],
  ['authentication', 401, 'authentication_error', AuthenticationError],
  ['permission', 403, 'permission_error', PermissionDeniedError],
  ['not-found', 404, 'not_found_error', NotFoundError],
  ['request-too-large', 413, 'request_too_large', APIError],
  ['rate-limit', 429, 'rate_limit_error', RateLimitError],
  ['usage-limit', 429, 'insufficient_quota', RateLimitError],
  ['api', 500, 'api_error', InternalServerError],
  ['overloaded', 503, 'overloaded_error', InternalServerError],
  ['timeout', 504, 'timeout_error', InternalServerError],
];

describe('createOpenaiResponsesErrorResponse', () => {
  it.each(cases)(
    'answers %s with %i %s, thrown by the openai SDK as the matching class',
    async (kind, status, type, errorClass) => {
      const turnError = createTurnError(kind, `failure of kind ${kind}`, { retryable: false });
      const response = createOpenaiResponsesErrorResponse(turnError);
      expect(response.status).toBe(status);
      expect(mapOpenaiResponsesError(kind).status).toBe(status);
      expect(response.body).toMatchObject({
        error: { message: `failure of kind ${kind}`, type, param: null },
      });

      const error = await callWith(createJsonFetch(response.body, response.status, response.headers));
      expect(error).toBeInstanceOf(errorClass);
      expect((error as APIError).status).toBe(status);
      expect((error as APIError).type).toBe(type);
      expect((error as APIError).message).toBe(`${status} failure of kind ${kind}`);
    },
  );

  it('answers context-length as OpenAI does: code context_length_exceeded, not retried', async () => {
    const response = createOpenaiResponsesErrorResponse(createTurnError('context-length', 'too long'));
    expect(response).toEqual({
      status: 400,
      headers: { 'x-should-retry': 'false' },
      body: {
        error: {
          message: 'too long',
          type: 'invalid_request_error',
          param: null,
          code: 'context_length_exceeded',
        },
      },
    });
    const error = await callWith(createJsonFetch(response.body, response.status, response.headers), 2);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as APIError).code).toBe('context_length_exceeded');
  });

  it('names the bad field in param', async () => {
    const turnError = createTurnError('invalid-request', 'Invalid request: input.2.content: bad', {
      param: 'input.2.content',
    });
    const response = createOpenaiResponsesErrorResponse(turnError);
    expect(response.body).toEqual({
      error: {
        message: 'Invalid request: input.2.content: bad',
        type: 'invalid_request_error',
        param: 'input.2.content',
        code: null,
      },
    });
    const error = await callWith(createJsonFetch(response.body, response.status, response.headers));
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as APIError).param).toBe('input.2.content');
  });

  it('adds x-should-retry: false to non-retryable errors, and the SDK stops retrying', async () => {
    const response = createOpenaiResponsesErrorResponse(
      createTurnError('api', 'broken for good', { retryable: false }),
    );
    expect(response.headers).toEqual({ 'x-should-retry': 'false' });
    let calls = 0;
    const fetch = createJsonFetch(response.body, response.status, response.headers);
    const error = await callWith(async () => {
      calls += 1;
      return fetch();
    }, 2);
    expect(error).toBeInstanceOf(InternalServerError);
    expect(calls).toBe(1);
  });

  it('leaves retryable errors retryable', async () => {
    const response = createOpenaiResponsesErrorResponse(createTurnError('overloaded', 'busy'));
    expect(response.headers).toEqual({});
    let calls = 0;
    const fetch = createJsonFetch(response.body, response.status, response.headers);
    await callWith(async () => {
      calls += 1;
      return fetch();
    }, 1);
    expect(calls).toBe(2);
  });
});

describe('createOpenaiResponsesErrorFrames', () => {
  it('emits an error event and response.failed with consecutive sequence numbers', () => {
    const frames = createOpenaiResponsesErrorFrames(
      createTurnError('request-too-large', 'Conversation too long for the model.'),
      7,
      { id: 'resp_x', object: 'response', status: 'in_progress', error: null, output: [] },
    );
    expect(frames.map((frame) => ('event' in frame ? frame.event : undefined))).toEqual([
      'error',
      'response.failed',
    ]);
    const data = frames.map((frame) => ('data' in frame ? (JSON.parse(frame.data) as unknown) : undefined));
    expect(data).toEqual([
      {
        type: 'error',
        sequence_number: 7,
        code: 'context_length_exceeded',
        message: 'Conversation too long for the model.',
        param: null,
        error: {
          type: 'request_too_large',
          code: 'context_length_exceeded',
          message: 'Conversation too long for the model.',
          param: null,
        },
      },
      {
        type: 'response.failed',
        sequence_number: 8,
        response: {
          id: 'resp_x',
          object: 'response',
          status: 'failed',
          error: { code: 'context_length_exceeded', message: 'Conversation too long for the model.' },
          output: [],
        },
      },
    ]);
  });

  it('reports context-length in-band as code context_length_exceeded, which Codex compacts on', () => {
    const frames = createOpenaiResponsesErrorFrames(createTurnError('context-length', 'too long'), 3, {
      id: 'resp_y',
      status: 'in_progress',
    });
    const data = frames.map((frame) => ('data' in frame ? (JSON.parse(frame.data) as unknown) : undefined));
    expect(data).toEqual([
      {
        type: 'error',
        sequence_number: 3,
        code: 'context_length_exceeded',
        message: 'too long',
        param: null,
        error: {
          type: 'invalid_request_error',
          code: 'context_length_exceeded',
          message: 'too long',
          param: null,
        },
      },
      {
        type: 'response.failed',
        sequence_number: 4,
        response: {
          id: 'resp_y',
          status: 'failed',
          error: { code: 'context_length_exceeded', message: 'too long' },
        },
      },
    ]);
  });

  it.each([
    ['invalid-request', 'invalid_prompt'],
    ['rate-limit', 'rate_limit_exceeded'],
    // Codex's quota-exceeded error: it stops instead of retrying.
    ['usage-limit', 'insufficient_quota'],
    ['overloaded', 'server_is_overloaded'],
    ['api', 'server_error'],
  ] as const)('uses the Responses error code for %s', (kind, code) => {
    const [first] = createOpenaiResponsesErrorFrames(createTurnError(kind, 'x'), 0, {});
    expect(first && 'data' in first ? JSON.parse(first.data) : undefined).toMatchObject({ code });
  });
});
