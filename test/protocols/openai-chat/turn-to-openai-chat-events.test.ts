import { describe, expect, it } from 'vitest';
import type { SseFrame } from '../../../src/protocols/sse-frame.js';
import {
  convertTurnUsageToOpenaiChat,
  createOpenaiChatJsonResponse,
  OpenaiChatStreamEncoder,
} from '../../../src/protocols/openai-chat/turn-to-openai-chat-events.js';
import { serializeSseFrames } from '../../../src/protocols/sse-serialize.js';
import type { TurnEvent } from '../../../src/turn/turn-event.js';
import { emptyUsage } from '../../../src/turn/turn-usage.js';
import { readFixture } from '../../helpers/protocols/read-fixture.js';
import { runStreamEncoder } from '../../helpers/protocols/run-stream-encoder.js';
import {
  encodeScript,
  expectedUsage,
  meta,
  scripts,
  usage,
  type ScriptName,
} from '../../helpers/protocols/openai-chat-scripts.js';

const readSse = (name: string): string => readFixture('openai-chat', `${name}.sse`);

/** The JSON payloads of data frames, `[DONE]` kept as a string; comments dropped. */
const payloads = (frames: readonly SseFrame[]): unknown[] =>
  frames.flatMap((frame) =>
    'comment' in frame ? [] : [frame.data === '[DONE]' ? '[DONE]' : (JSON.parse(frame.data) as unknown)],
  );

const deltas = (frames: readonly SseFrame[]): unknown[] =>
  payloads(frames).flatMap((payload) => {
    const choices = (payload as { choices?: Array<{ delta: unknown }> }).choices;
    return choices?.[0] ? [choices[0].delta] : [];
  });

const newEncoder = (includeStreamUsage = false) => new OpenaiChatStreamEncoder({ includeStreamUsage }, meta);

const run = (events: TurnEvent[], includeStreamUsage = false): SseFrame[] =>
  runStreamEncoder(newEncoder(includeStreamUsage), events);

const turnEnd: TurnEvent = { type: 'turn-end', stopReason: 'end', usage };

describe('OpenaiChatStreamEncoder: byte-level fixtures', () => {
  it.each(Object.keys(scripts) as ScriptName[])('%s.sse', (name) => {
    expect(serializeSseFrames(encodeScript(scripts[name]))).toBe(readSse(name));
  });
});

describe('OpenaiChatStreamEncoder: behaviour', () => {
  it('starts with the role chunk once, even when push comes first', () => {
    const encoder = newEncoder();
    const first = encoder.push({ type: 'text-delta', id: 't', delta: 'a' });
    expect(deltas(first)).toEqual([{ role: 'assistant', content: '' }, { content: 'a' }]);
    expect(encoder.start()).toEqual([]);
  });

  it('puts chunk identity from ResponseMeta on every chunk', () => {
    const chunks = payloads(run([{ type: 'text-delta', id: 't', delta: 'a' }, turnEnd], true));
    for (const chunk of chunks.filter((payload) => payload !== '[DONE]')) {
      expect(chunk).toMatchObject({
        id: 'chatcmpl-test0001',
        object: 'chat.completion.chunk',
        created: 1_764_450_000,
        model: 'composer-2',
      });
    }
  });

  it.each([
    ['end', 'stop'],
    ['tool-use', 'tool_calls'],
    ['max-tokens', 'length'],
    ['refusal', 'content_filter'],
  ] as const)('maps stop reason %s to finish_reason %s', (stopReason, finishReason) => {
    const chunks = payloads(run([{ type: 'turn-end', stopReason, usage }]));
    expect(chunks.at(-2)).toMatchObject({ choices: [{ delta: {}, finish_reason: finishReason }] });
  });

  it('reports usage on the finish chunk and a trailing choices:[] chunk only when asked', () => {
    const withUsage = payloads(run([turnEnd], true));
    expect(withUsage.slice(1)).toEqual([
      expect.objectContaining({
        choices: [expect.objectContaining({ finish_reason: 'stop' })],
        usage: expectedUsage,
      }),
      expect.objectContaining({ choices: [], usage: expectedUsage }),
      '[DONE]',
    ]);
    const withoutUsage = payloads(run([turnEnd], false));
    expect(withoutUsage).toHaveLength(3);
    expect(withoutUsage[1]).not.toHaveProperty('usage');
  });

  it('skips empty deltas and emits nothing for block boundaries or usage events', () => {
    const frames = run([
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: '' },
      { type: 'text-end', id: 't' },
      { type: 'reasoning-start', id: 'r' },
      { type: 'reasoning-end', id: 'r', signature: 's' },
      { type: 'usage', usage },
      turnEnd,
    ]);
    expect(deltas(frames)).toEqual([{ role: 'assistant', content: '' }, {}]);
  });

  it('starts an unstarted text or reasoning block on its first delta', () => {
    const frames = run([
      { type: 'reasoning-delta', id: 'r', delta: 'why' },
      { type: 'text-delta', id: 't', delta: 'what' },
      turnEnd,
    ]);
    expect(deltas(frames).slice(1, 3)).toEqual([{ reasoning_content: 'why' }, { content: 'what' }]);
  });

  it('emits a tool call that only arrives as a complete tool-call event', () => {
    const frames = run([
      { type: 'tool-call', toolCallId: 'c1', toolName: 'bash', kind: 'function', input: '{"command":"ls"}' },
      { type: 'turn-end', stopReason: 'tool-use', usage },
    ]);
    expect(deltas(frames).slice(1, 3)).toEqual([
      { tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'bash', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"command":"ls"}' } }] },
    ]);
  });

  it('sends only the missing tail when tool-call carries more than the deltas sent', () => {
    const frames = run([
      { type: 'tool-input-start', id: 'c1', toolName: 'bash', kind: 'function' },
      { type: 'tool-input-delta', id: 'c1', delta: '{"a":' },
      { type: 'tool-call', toolCallId: 'c1', toolName: 'bash', kind: 'function', input: '{"a":1}' },
    ]);
    expect(deltas(frames).slice(2, 4)).toEqual([
      { tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '1}' } }] },
    ]);
  });

  it('holds argument deltas of an unstarted call until its name is known', () => {
    const encoder = newEncoder();
    encoder.start();
    expect(encoder.push({ type: 'tool-input-delta', id: 'c9', delta: '{"x":' })).toEqual([]);
    expect(encoder.push({ type: 'tool-input-delta', id: 'c9', delta: '2}' })).toEqual([]);
    const frames = encoder.push({
      type: 'tool-call',
      toolCallId: 'c9',
      toolName: 'calc',
      kind: 'function',
      input: '{"x":2}',
    });
    expect(deltas(frames)).toEqual([
      { tool_calls: [{ index: 0, id: 'c9', type: 'function', function: { name: 'calc', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"x":2}' } }] },
    ]);
  });

  it('gives interleaved or restarted calls stable, distinct indexes', () => {
    const frames = run([
      { type: 'tool-input-start', id: 'a', toolName: 'one', kind: 'function' },
      { type: 'tool-input-start', id: 'b', toolName: 'two', kind: 'function' },
      { type: 'tool-input-delta', id: 'a', delta: '{}' },
      { type: 'tool-input-start', id: 'a', toolName: 'one', kind: 'function' },
      { type: 'tool-call', toolCallId: 'a', toolName: 'one', kind: 'function', input: '{}' },
      { type: 'tool-call', toolCallId: 'b', toolName: 'two', kind: 'function', input: '{}' },
    ]);
    expect(deltas(frames).slice(1)).toEqual([
      { tool_calls: [{ index: 0, id: 'a', type: 'function', function: { name: 'one', arguments: '' } }] },
      { tool_calls: [{ index: 1, id: 'b', type: 'function', function: { name: 'two', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{}' } }] },
      { tool_calls: [{ index: 1, function: { arguments: '{}' } }] },
    ]);
  });

  it('ends with the in-band error then [DONE] after an error event, and ignores later events', () => {
    const encoder = newEncoder(true);
    encoder.start();
    const frames = encoder.push({
      type: 'error',
      error: { kind: 'rate-limit', message: 'slow down', retryable: true },
    });
    expect(payloads(frames)).toEqual([
      { error: { message: 'slow down', type: 'rate_limit_error', code: 'rate_limit_exceeded' } },
      '[DONE]',
    ]);
    expect(encoder.ended).toBe(true);
    expect(encoder.push(turnEnd)).toEqual([]);
    expect(encoder.end()).toEqual([]);
  });

  it('treats end() without a terminal event as an api error, once', () => {
    const encoder = newEncoder();
    expect(encoder.ended).toBe(false);
    const frames = encoder.end();
    expect(payloads(frames)).toEqual([
      expect.objectContaining({
        choices: [expect.objectContaining({ delta: { role: 'assistant', content: '' } })],
      }),
      { error: expect.objectContaining({ type: 'server_error', code: 'server_error' }) },
      '[DONE]',
    ]);
    expect(encoder.ended).toBe(true);
    expect(encoder.end()).toEqual([]);
  });

  it('end() after turn-end adds nothing', () => {
    const encoder = newEncoder();
    encoder.start();
    encoder.push(turnEnd);
    expect(encoder.end()).toEqual([]);
  });

  it('keepalive is an SSE comment', () => {
    expect(newEncoder().keepalive()).toEqual({ comment: 'keepalive' });
    expect(serializeSseFrames([newEncoder().keepalive()])).toBe(': keepalive\n\n');
  });
});

describe('convertTurnUsageToOpenaiChat', () => {
  it('counts cache reads and writes into prompt_tokens and reads into cached_tokens', () => {
    expect(
      convertTurnUsageToOpenaiChat({
        inputTokens: 100,
        outputTokens: 7,
        cacheReadTokens: 40,
        cacheWriteTokens: 9,
      }),
    ).toEqual({
      prompt_tokens: 149,
      completion_tokens: 7,
      total_tokens: 156,
      prompt_tokens_details: { cached_tokens: 40 },
      completion_tokens_details: { reasoning_tokens: 0 },
    });
  });
});

describe('createOpenaiChatJsonResponse', () => {
  it('builds a chat.completion with text, reasoning and usage', () => {
    const events = scripts.reasoning.steps.filter((step): step is TurnEvent => step !== 'keepalive');
    expect(createOpenaiChatJsonResponse(meta, events)).toEqual({
      id: 'chatcmpl-test0001',
      object: 'chat.completion',
      created: 1_764_450_000,
      model: 'composer-2',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Done.', reasoning_content: 'Thinking about it.' },
          finish_reason: 'stop',
        },
      ],
      usage: convertTurnUsageToOpenaiChat(usage),
    });
  });

  it('sets content null when the turn is only tool calls', () => {
    const response = createOpenaiChatJsonResponse(meta, scripts['two-tool-calls'].steps);
    expect(response.choices[0]).toEqual({
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_1',
            type: 'function',
            function: { name: 'read', arguments: '{"filePath":"/w/a.txt"}' },
          },
          { id: 'call_2', type: 'function', function: { name: 'glob', arguments: '{"pattern":"**/*.ts"}' } },
        ],
      },
      finish_reason: 'tool_calls',
    });
  });

  it('keeps text next to tool calls, and uses streamed fragments when tool-call is missing', () => {
    const response = createOpenaiChatJsonResponse(meta, [
      { type: 'text-delta', id: 't', delta: 'Checking.' },
      { type: 'tool-input-start', id: 'c1', toolName: 'bash', kind: 'function' },
      { type: 'tool-input-delta', id: 'c1', delta: '{"command":' },
      { type: 'tool-input-delta', id: 'c1', delta: '"ls"}' },
      { type: 'turn-end', stopReason: 'tool-use', usage: emptyUsage() },
    ]);
    expect(response.choices[0]?.message).toEqual({
      role: 'assistant',
      content: 'Checking.',
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } }],
    });
  });

  it('answers an empty text turn with content "" and a missing turn-end with stop and zero usage', () => {
    const response = createOpenaiChatJsonResponse(meta, []);
    expect(response.choices[0]).toEqual({
      index: 0,
      message: { role: 'assistant', content: '' },
      finish_reason: 'stop',
    });
    expect(response.usage.total_tokens).toBe(0);
  });
});
