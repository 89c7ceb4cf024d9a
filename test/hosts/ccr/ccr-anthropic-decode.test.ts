/**
 * The facade's answers decoded by the real AnthropicTransformer of `@musistudio/llms@1.0.53` (what CCR runs
 * between the transformer and Claude Code), then read the way Claude Code reads them: the official
 * Anthropic client's MessageStream for streams, the raw event sequence where a stream fails.
 */
import Anthropic from '@anthropic-ai/sdk';
import pino from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createCcrTurnWriter,
  createErrorTurnResponse,
  createJsonTurnResponse,
  createStreamTurnResponse,
} from '../../../src/hosts/ccr/create-turn-response.js';
import { createWarningLimiter, runTurnRequest } from '../../../src/hosts/turn-pipeline.js';
import { createTestTurnRequest } from '../../helpers/protocols/create-test-turn-request.js';
import { createTurnError } from '../../../src/turn/turn-error.js';
import { createGate } from '../../helpers/gate.js';
import type { TurnEvent } from '../../../src/turn/turn-event.js';
import { reasoningEvents, textEvents, toolCallEvents } from '../../helpers/protocols/turn-event-builders.js';
import {
  llmsInstallTimeoutMs,
  loadAnthropicTransformer,
  type LlmsTransformer,
} from '../../helpers/ccr/real-llms.js';

const log = pino({ level: 'silent' });
const meta = { id: 'chatcmpl-test', model: 'composer-2', createdAt: 1_700_000_000 };
const usage = { inputTokens: 100, outputTokens: 20, cacheReadTokens: 30, cacheWriteTokens: 0 };
const context = { req: { id: 'req-test' } };

let anthropic: LlmsTransformer;
beforeAll(async () => {
  anthropic = await loadAnthropicTransformer();
}, llmsInstallTimeoutMs);

async function* play(events: readonly TurnEvent[]): AsyncGenerator<TurnEvent> {
  for (const event of events) yield event;
}

/** The facade's streaming Response for `events`, through AnthropicTransformer. */
const decodeStream = async (events: readonly TurnEvent[]): Promise<Response> => {
  const response = createStreamTurnResponse({
    meta,
    events: play(events),
    abort: new AbortController(),
    log,
  });
  expect(response.headers.get('content-type')).toBe('text/event-stream');
  return anthropic.transformResponseIn!(response, context);
};

/** What Claude Code's client makes of an Anthropic SSE response. */
const finalMessage = (response: Response) =>
  new Anthropic({
    apiKey: 'sk-test',
    baseURL: 'http://127.0.0.1:9',
    maxRetries: 0,
    fetch: async () => response,
  }).messages
    .stream({ model: 'composer-2', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] })
    .finalMessage();

/** The raw Anthropic events (`event:` name and parsed `data:`). */
const rawEvents = async (
  response: Response,
): Promise<Array<{ event: string; data: Record<string, unknown> }>> => {
  const text = await response.text();
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? '';
      const data = /^data: (.*)$/m.exec(block)?.[1] ?? '{}';
      return { event, data: JSON.parse(data) as Record<string, unknown> };
    });
};

describe('the CCR dialect through AnthropicTransformer', () => {
  it('gives one signed thinking block, one text block, then the tool calls, with usage', async () => {
    const events: TurnEvent[] = [
      ...reasoningEvents('r1', 'sig-1', 'Weighing ', 'the options. '),
      ...reasoningEvents('r2', 'sig-2', 'Deciding.'),
      ...textEvents('t1', 'Running ', 'it.'),
      ...toolCallEvents('c1', 'Bash', '{"command":"echo hi"}'),
      // After a tool call: still part of the one text block, before the calls.
      ...textEvents('t2', ' Then more.'),
      ...toolCallEvents('c2', 'Read', '{"file_path":"/tmp/a"}'),
      // After the answer started: not representable, dropped.
      ...reasoningEvents('r3', 'sig-3', 'A late thought.'),
      { type: 'usage', usage },
      { type: 'turn-end', stopReason: 'tool-use', usage },
    ];

    const message = await finalMessage(await decodeStream(events));

    expect(message.content).toEqual([
      { type: 'thinking', thinking: 'Weighing the options. Deciding.', signature: 'sig-2' },
      { type: 'text', text: 'Running it. Then more.' },
      { type: 'tool_use', id: 'c1', name: 'Bash', input: { command: 'echo hi' } },
      { type: 'tool_use', id: 'c2', name: 'Read', input: { file_path: '/tmp/a' } },
    ]);
    expect(message.stop_reason).toBe('tool_use');
    expect(message.model).toBe('composer-2');
    expect(message.usage).toMatchObject({
      input_tokens: 100,
      output_tokens: 20,
      cache_read_input_tokens: 30,
    });
  });

  describe('hosted web search', () => {
    const source = (n: number) => ({
      url: `https://example.com/${n}`,
      title: `Page ${n}`,
      snippet: `About ${n}`,
    });
    const search: TurnEvent = {
      type: 'web-search',
      id: 'ws1',
      action: { kind: 'search', query: 'node 22' },
      outcome: { status: 'completed', sources: [source(1), source(2)] },
    };
    const failed: TurnEvent = {
      type: 'web-search',
      id: 'ws2',
      action: { kind: 'search', query: 'refused' },
      outcome: {
        status: 'failed',
        code: 'unavailable',
        message: 'Cursor refused the web search: team admin',
      },
    };
    const events: TurnEvent[] = [
      search,
      failed,
      ...textEvents('t', 'Node 22 shipped in April.'),
      { type: 'turn-end', stopReason: 'end', usage },
    ];

    it('streaming: each source becomes a web_search_tool_result Claude Code lists as Links; a failure is said in text', async () => {
      const message = await finalMessage(await decodeStream(events));

      expect(message.content).toEqual([
        {
          type: 'web_search_tool_result',
          tool_use_id: expect.stringMatching(/^srvtoolu_/),
          content: [{ type: 'web_search_result', title: 'Page 1', url: 'https://example.com/1' }],
        },
        {
          type: 'web_search_tool_result',
          tool_use_id: expect.stringMatching(/^srvtoolu_/),
          content: [{ type: 'web_search_result', title: 'Page 2', url: 'https://example.com/2' }],
        },
        {
          type: 'text',
          text: `Web search "refused" failed: Cursor refused the web search: team admin\n\nNode 22 shipped in April.`,
        },
      ]);
    });

    it('non-streaming: one server_tool_use and one web_search_tool_result with every source, then the text', async () => {
      const response = createJsonTurnResponse(meta, events);
      const decoded = (await (await anthropic.transformResponseIn!(response, context)).json()) as {
        content: unknown[];
      };
      expect(decoded.content).toEqual([
        expect.objectContaining({ type: 'server_tool_use', name: 'web_search' }),
        expect.objectContaining({
          type: 'web_search_tool_result',
          content: [
            { type: 'web_search_result', url: 'https://example.com/1', title: 'Page 1' },
            { type: 'web_search_result', url: 'https://example.com/2', title: 'Page 2' },
          ],
        }),
        { type: 'text', text: expect.stringContaining('Node 22 shipped in April.') },
      ]);
    });
  });

  it('maps stop reasons: plain text ends the turn, max tokens is max_tokens', async () => {
    const plain = await finalMessage(
      await decodeStream([...textEvents('t', 'Hello.'), { type: 'turn-end', stopReason: 'end', usage }]),
    );
    expect(plain.content).toEqual([{ type: 'text', text: 'Hello.' }]);
    expect(plain.stop_reason).toBe('end_turn');

    const cut = await finalMessage(
      await decodeStream([...textEvents('t', 'Hel'), { type: 'turn-end', stopReason: 'max-tokens', usage }]),
    );
    expect(cut.stop_reason).toBe('max_tokens');
  });

  it('signs a thinking-only answer', async () => {
    const message = await finalMessage(
      await decodeStream([
        ...reasoningEvents('r', 'sig-only', 'Only thinking.'),
        { type: 'turn-end', stopReason: 'end', usage },
      ]),
    );
    expect(message.content).toEqual([
      { type: 'thinking', thinking: 'Only thinking.', signature: 'sig-only' },
    ]);
  });

  it('reports a mid-stream failure as an error event and still closes the message', async () => {
    const events: TurnEvent[] = [
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: 'Partial ' },
      { type: 'error', error: createTurnError('overloaded', 'Cursor is overloaded mid-stream.') },
      // Nothing after the terminal error reaches the wire.
      { type: 'text-delta', id: 't', delta: 'never sent' },
    ];

    const decoded = await rawEvents(await decodeStream(events));

    expect(decoded.map((entry) => entry.event)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'error',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(JSON.stringify(decoded[3]?.data)).toContain('Cursor is overloaded mid-stream.');
    expect(JSON.stringify(decoded)).not.toContain('never sent');
  });

  it('reports a mid-stream spent usage limit as an error event that keeps its message and quota code', async () => {
    const spent = createTurnError(
      'usage-limit',
      'Cursor usage limit reached. See https://cursor.com/dashboard.',
      {
        retryable: false,
      },
    );
    const decoded = await rawEvents(
      await decodeStream([
        { type: 'text-start', id: 't' },
        { type: 'error', error: spent },
      ]),
    );
    // CCR nests the Chat error chunk, as JSON text, in its own `api_error`; nothing in it says retry.
    const error = JSON.stringify(decoded.find((entry) => entry.event === 'error')?.data);
    expect(error).toContain('https://cursor.com/dashboard');
    expect(error).toContain('insufficient_quota');
    expect(decoded.at(-1)?.event).toBe('message_stop');
  });

  it('keeps a silent stream alive with comments the reader skips', async () => {
    // Silent until a keepalive went out, however long that takes.
    const sawKeepalive = createGate();
    async function* slow(): AsyncGenerator<TurnEvent> {
      yield* textEvents('t', 'Before ');
      await sawKeepalive.opened;
      yield* textEvents('t2', 'after.');
      yield { type: 'turn-end', stopReason: 'end', usage };
    }
    const response = createStreamTurnResponse({
      meta,
      events: slow(),
      abort: new AbortController(),
      log,
      keepaliveMs: 20,
    });
    const [raw, decoded] = response.body!.tee();
    const rawText = (async () => {
      const reader = raw.getReader();
      const decoder = new TextDecoder();
      let text = '';
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        text += decoder.decode(chunk.value, { stream: true });
        if (text.includes(': keepalive\n\n')) sawKeepalive.open();
      }
      return text;
    })();
    const message = await finalMessage(
      await anthropic.transformResponseIn!(new Response(decoded, { headers: response.headers }), context),
    );

    expect(await rawText).toContain(': keepalive\n\n');
    expect(message.content).toEqual([{ type: 'text', text: 'Before after.' }]);
  });

  it('treats an upstream that vanished without an end as a failure', async () => {
    const decoded = await rawEvents(await decodeStream(textEvents('t', 'Cut')));
    expect(decoded.map((entry) => entry.event)).toContain('error');
    expect(decoded.at(-1)?.event).toBe('message_stop');
  });

  it('turns the non-streaming answer into a signed thinking block, text and tool calls', async () => {
    const events: TurnEvent[] = [
      ...reasoningEvents('r', 'sig-json', 'Thinking it over.'),
      ...textEvents('t', 'Calling.'),
      ...toolCallEvents('c', 'Bash', '{"command":"ls"}'),
      { type: 'turn-end', stopReason: 'tool-use', usage },
    ];
    const response = createJsonTurnResponse(meta, events);
    expect(response.headers.get('content-type')).toBe('application/json');

    const decoded = (await (await anthropic.transformResponseIn!(response, context)).json()) as {
      content: unknown[];
      stop_reason: string;
      usage: Record<string, number>;
    };

    expect(decoded.content).toEqual([
      { type: 'text', text: 'Calling.' },
      { type: 'tool_use', id: 'c', name: 'Bash', input: { command: 'ls' } },
      { type: 'thinking', thinking: 'Thinking it over.', signature: 'sig-json' },
    ]);
    expect(decoded.stop_reason).toBe('tool_use');
    expect(decoded.usage).toMatchObject({
      input_tokens: 100,
      output_tokens: 20,
      cache_read_input_tokens: 30,
    });
  });

  it('answers a non-streaming failure with its status and an OpenAI error body', async () => {
    const events: TurnEvent[] = [{ type: 'error', error: createTurnError('rate-limit', 'Slow down.') }];
    const response = await runTurnRequest({
      parsed: { ok: true, value: createTestTurnRequest({ stream: false }) },
      handleTurn: async () => play(events),
      log: () => log,
      warnings: createWarningLimiter(log),
      idPrefix: 'chatcmpl-',
      watchClient: () => () => {},
      writer: createCcrTurnWriter(() => log),
    });
    expect(response.status).toBe(429);
    expect(await response.json()).toMatchObject({
      error: { message: 'Slow down.', type: 'rate_limit_error' },
    });
  });

  it('answers a rejected key 403, because CCR drops x-should-retry and Claude Code retries a bare 401', async () => {
    const rejected = createErrorTurnResponse(
      createTurnError('authentication', 'Cursor rejected the API key.', { retryable: false }),
    );
    expect(rejected.status).toBe(403);
    expect(await rejected.json()).toMatchObject({ error: { message: 'Cursor rejected the API key.' } });

    const retryable = createErrorTurnResponse(createTurnError('overloaded', 'Busy.'));
    expect(retryable.status).toBe(503);
  });

  it('answers a spent usage limit 403 (never a 429 Claude Code retries ten times), a rate limit 429', async () => {
    const spent = createErrorTurnResponse(
      createTurnError('usage-limit', 'Cursor usage limit reached.', { retryable: false }),
    );
    expect(spent.status).toBe(403);
    expect(await spent.json()).toMatchObject({
      error: { type: 'insufficient_quota', code: 'insufficient_quota' },
    });

    const limited = createErrorTurnResponse(
      createTurnError('rate-limit', 'Slow down.', { retryAfterSeconds: 7, resetSeconds: 7 }),
    );
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('7');
    expect(limited.headers.get('x-ratelimit-reset-requests')).toBe('7s');
  });
});
