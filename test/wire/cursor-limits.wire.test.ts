import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { fakeLimitTexts } from '../fakes/cursor-backend/limit-texts.js';
import type { FakeCursorLimit, FakeLimitOptions } from '../fakes/cursor-backend/run-context.js';
import { closeWireBackend, startWireBridge, type WireBridge } from '../helpers/wire-bridge.js';

/**
 * Each of Cursor's rate and usage limits, sent by the fake as Cursor's ErrorDetails, through the real
 * @cursor/sdk and the bridge, answered in each protocol before the stream (status, type/code, headers,
 * read by the official clients where they read them) and in-band (the terminal error event's type/code).
 * A usage limit is final everywhere (`x-should-retry: false`, OpenAI `insufficient_quota`); a rate limit is
 * a retryable 429 with `retry-after`. The six requests of a row are six conversations run side by side;
 * each conversation's run count says whether the SDK retried the run itself.
 */

let wire: WireBridge | undefined;
afterEach(async () => {
  await wire?.close();
  wire = undefined;
});
afterAll(closeWireBackend);

const model = 'composer-2';
const dashboard = 'https://cursor.com/dashboard';

type Expected = {
  status: number;
  final: boolean;
  anthropicType: string;
  openaiType: string;
  openaiCode: string;
  responsesType: string;
  retryAfter: string | null;
  /** What the client is told to do: the dashboard for a spent quota, the wait for a rate limit. */
  says: string | null;
  runsPerConversation: number;
};

const expectedFor = (limit: FakeCursorLimit, options: FakeLimitOptions): Expected => {
  const usage = fakeLimitTexts[limit].kind === 'usage';
  // The SDK re-sends these two (3 more times) unless the details say isRetryable: false; what is left
  // then is `[<connect code>] Error`, Cursor's bare Connect message.
  const sdkRetries =
    (limit === 'ERROR_API_KEY_RATE_LIMIT' || limit === 'ERROR_SUSPICIOUS_USAGE_BLOCKED') &&
    (options.isRetryable ?? !usage);
  if (sdkRetries && fakeLimitTexts[limit].code === 'permission_denied') {
    // Only `[permission_denied] Error` is left: a refusal no retry helps, never a 429.
    return {
      status: 403,
      final: true,
      anthropicType: 'permission_error',
      openaiType: 'invalid_request_error',
      openaiCode: 'permission_denied',
      responsesType: 'permission_error',
      retryAfter: null,
      says: null,
      runsPerConversation: 4,
    };
  }
  const retryAfter = usage ? null : String(options.retryAfterSeconds ?? 10);
  return {
    status: 429,
    final: usage,
    anthropicType: 'rate_limit_error',
    openaiType: usage ? 'insufficient_quota' : 'rate_limit_error',
    openaiCode: usage ? 'insufficient_quota' : 'rate_limit_exceeded',
    responsesType: usage ? 'insufficient_quota' : 'rate_limit_error',
    retryAfter,
    says: usage ? dashboard : `try again in ${retryAfter}s`,
    runsPerConversation: sdkRetries ? 4 : 1,
  };
};

const sseData = (text: string): Array<Record<string, unknown>> =>
  text
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
    .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);

const post = (url: string, path: string, body: Record<string, unknown>): Promise<Response> =>
  fetch(`${url}${path}`, { method: 'POST', body: JSON.stringify(body) });

const user = (label: string) => [{ role: 'user' as const, content: `a turn that meets a limit (${label})` }];

/** The six answers of one limit, one conversation each, side by side. */
const answersFor = async (url: string) => {
  const anthropicClient = new Anthropic({ baseURL: url, apiKey: 'sk-test', maxRetries: 0 });
  const openaiClient = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
  const [anthropicJson, anthropicStream, chatJson, chatStream, responsesJson, responsesStream] =
    await Promise.all([
      post(url, '/v1/messages?beta=true', { model, max_tokens: 5, messages: user('anthropic json') }),
      (async () => {
        const stream = await anthropicClient.messages.create({
          model,
          max_tokens: 5,
          stream: true,
          messages: user('anthropic stream'),
        });
        for await (const _event of stream) {
          // message_start and pings may come first
        }
      })().catch((caught: unknown) => caught),
      openaiClient.chat.completions
        .create({ model, messages: user('chat json') })
        .catch((caught: unknown) => caught),
      post(url, '/v1/chat/completions', { model, stream: true, messages: user('chat stream') }).then((r) =>
        r.text(),
      ),
      post(url, '/v1/responses', { model, input: user('responses json')[0]?.content }),
      post(url, '/v1/responses', { model, stream: true, input: user('responses stream')[0]?.content }).then(
        (r) => r.text(),
      ),
    ]);
  return { anthropicJson, anthropicStream, chatJson, chatStream, responsesJson, responsesStream };
};

const limits = Object.keys(fakeLimitTexts) as FakeCursorLimit[];

const rows: Array<[string, FakeCursorLimit, FakeLimitOptions]> = [
  ...limits.map((limit): [string, FakeCursorLimit, FakeLimitOptions] => [limit, limit, {}]),
  ['ERROR_RATE_LIMITED, Cursor saying when', 'ERROR_RATE_LIMITED', { retryAfterSeconds: 42 }],
  [
    'ERROR_SUSPICIOUS_USAGE_BLOCKED, retryable per its details',
    'ERROR_SUSPICIOUS_USAGE_BLOCKED',
    { isRetryable: true },
  ],
];

describe("Cursor's limits through the real SDK, in each protocol", () => {
  it.each(rows)('%s', async (_label, limit, options) => {
    wire = await startWireBridge({ scenario: (run) => run.failLimit(limit, options) });
    const expected = expectedFor(limit, options);
    const answers = await answersFor(wire.url);
    const finalHeader = expected.final ? 'false' : null;

    // Anthropic, before the stream: 429 rate_limit_error; final ⇔ x-should-retry false.
    const anthropicJson = answers.anthropicJson;
    expect(anthropicJson.status).toBe(expected.status);
    expect(anthropicJson.headers.get('x-should-retry')).toBe(finalHeader);
    expect(anthropicJson.headers.get('retry-after')).toBe(expected.retryAfter);
    const anthropicBody = (await anthropicJson.json()) as { error: { type: string; message: string } };
    expect(anthropicBody.error.type).toBe(expected.anthropicType);
    if (expected.says !== null) expect(anthropicBody.error.message).toContain(expected.says);

    // Anthropic, in-band: the official client throws the `error` event with the same type.
    expect(answers.anthropicStream).toBeInstanceOf(Anthropic.APIError);
    expect(answers.anthropicStream).toMatchObject({ type: expected.anthropicType });
    if (expected.says !== null) expect(String(answers.anthropicStream)).toContain(expected.says);

    // Chat Completions, before the stream, through the official client.
    expect(answers.chatJson).toBeInstanceOf(
      expected.status === 429 ? OpenAI.RateLimitError : OpenAI.PermissionDeniedError,
    );
    const chatError = answers.chatJson as InstanceType<typeof OpenAI.RateLimitError>;
    expect(chatError).toMatchObject({
      status: expected.status,
      type: expected.openaiType,
      code: expected.openaiCode,
    });
    expect(chatError.headers.get('x-should-retry')).toBe(finalHeader);
    expect(chatError.headers.get('retry-after')).toBe(expected.retryAfter);

    // Chat Completions, in-band: the `data: {"error"}` chunk.
    const chatChunkError = sseData(answers.chatStream).find((chunk) => 'error' in chunk)?.['error'];
    expect(chatChunkError).toMatchObject({ type: expected.openaiType, code: expected.openaiCode });

    // Responses, before the stream.
    const responsesJson = answers.responsesJson;
    expect(responsesJson.status).toBe(expected.status);
    expect(responsesJson.headers.get('x-should-retry')).toBe(finalHeader);
    expect(await responsesJson.json()).toMatchObject({
      error: { type: expected.responsesType, code: expected.openaiCode },
    });

    // Responses, in-band: the `error` event and the terminal response.failed.
    const events = sseData(answers.responsesStream);
    expect(events.find((event) => event['type'] === 'error')).toMatchObject({
      code: expected.openaiCode,
      error: { type: expected.responsesType, code: expected.openaiCode },
    });
    expect(events.at(-1)).toMatchObject({
      type: 'response.failed',
      response: { status: 'failed', error: { code: expected.openaiCode } },
    });

    // Neither the bridge nor (but for the two codes it retries) the SDK ran a conversation twice.
    const runs = new Map<string, number>();
    for (const request of wire.runRequests()) {
      runs.set(request.conversationId, (runs.get(request.conversationId) ?? 0) + 1);
    }
    expect([...runs.values()]).toEqual(Array.from({ length: 6 }, () => expected.runsPerConversation));
  });

  it("sends Cursor's reset as the protocols' rate-limit headers when Cursor says when", async () => {
    wire = await startWireBridge({
      scenario: (run) => run.failLimit('ERROR_RATE_LIMITED', { retryAfterSeconds: 42 }),
    });
    const before = Date.now();
    const anthropic = await post(wire.url, '/v1/messages', { model, max_tokens: 5, messages: user('a') });
    const chat = await post(wire.url, '/v1/chat/completions', { model, messages: user('c') });
    expect(anthropic.headers.get('anthropic-ratelimit-requests-remaining')).toBe('0');
    const reset = Date.parse(anthropic.headers.get('anthropic-ratelimit-requests-reset') ?? '');
    expect(reset).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 42_000);
    expect(chat.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(chat.headers.get('x-ratelimit-reset-requests')).toBe('42s');

    // Without a time from Cursor: the default retry-after, and no reset made up.
    await wire.close();
    wire = await startWireBridge({ scenario: (run) => run.failLimit('ERROR_RATE_LIMITED') });
    const untold = await post(wire.url, '/v1/messages', { model, max_tokens: 5, messages: user('u') });
    expect(untold.headers.get('retry-after')).toBe('10');
    expect(untold.headers.get('anthropic-ratelimit-requests-reset')).toBeNull();
  });
});
