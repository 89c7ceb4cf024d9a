import { describe, expect, it } from 'vitest';
import { CcrStreamEncoder, createCcrJsonResponse } from '../../../src/hosts/ccr/turn-to-ccr-events.js';
import type { SseFrame } from '../../../src/protocols/sse-frame.js';
import { createTurnError } from '../../../src/turn/turn-error.js';
import type { TurnEvent } from '../../../src/turn/turn-event.js';
import { reasoningEvents, textEvents, toolCallEvents } from '../../helpers/protocols/turn-event-builders.js';

const meta = { id: 'chatcmpl-1', model: 'composer-2', createdAt: 1_700_000_000 };
const usage = { inputTokens: 7, outputTokens: 3, cacheReadTokens: 5, cacheWriteTokens: 1 };

type Chunk = {
  choices: Array<{ delta: Record<string, unknown>; finish_reason: string | null }>;
  usage?: Record<string, unknown>;
  error?: unknown;
};

const encode = (events: readonly TurnEvent[]): SseFrame[] => {
  const encoder = new CcrStreamEncoder(meta);
  return [...encoder.start(), ...events.flatMap((event) => encoder.push(event)), ...encoder.end()];
};

const chunks = (frames: readonly SseFrame[]): Chunk[] =>
  frames.flatMap((frame) =>
    'data' in frame && frame.data !== '[DONE]' ? [JSON.parse(frame.data) as Chunk] : [],
  );

const deltas = (frames: readonly SseFrame[]) => chunks(frames).map((chunk) => chunk.choices[0]?.delta ?? {});

describe('CcrStreamEncoder', () => {
  it('sends thinking content, then exactly one signature, before any text or tool call', () => {
    const frames = encode([
      ...reasoningEvents('r1', 'sig-1', 'a'),
      ...reasoningEvents('r2', 'sig-2', 'b'),
      ...textEvents('t', 'text'),
      { type: 'turn-end', stopReason: 'end', usage },
    ]);

    expect(deltas(frames)).toEqual([
      { role: 'assistant', content: '' },
      { thinking: { content: 'a' } },
      { thinking: { content: 'b' } },
      { thinking: { signature: 'sig-2' } },
      { content: 'text' },
      {},
    ]);
  });

  it('holds tool calls until the end so later text stays before them, each with its own index, id and name', () => {
    const frames = encode([
      ...toolCallEvents('c1', 'Bash', '{"a":1}', { deltas: ['{"a"', ':1}'] }),
      ...textEvents('t', 'late text'),
      ...toolCallEvents('c2', 'Read', '{}', { deltas: ['{}'] }),
      { type: 'turn-end', stopReason: 'tool-use', usage },
    ]);
    const sent = deltas(frames);

    expect(sent[1]).toEqual({ content: 'late text' });
    const calls = sent.flatMap((delta) => (delta['tool_calls'] as Array<Record<string, unknown>>) ?? []);
    expect(calls).toEqual([
      { index: 0, id: 'c1', type: 'function', function: { name: 'Bash', arguments: '' } },
      { index: 0, function: { arguments: '{"a"' } },
      { index: 0, function: { arguments: ':1}' } },
      { index: 1, id: 'c2', type: 'function', function: { name: 'Read', arguments: '' } },
      { index: 1, function: { arguments: '{}' } },
    ]);
  });

  it('puts finish_reason and usage on one chunk, then [DONE]', () => {
    const frames = encode([...textEvents('t', 'x'), { type: 'turn-end', stopReason: 'tool-use', usage }]);
    const last = chunks(frames).at(-1);

    expect(last?.choices[0]?.finish_reason).toBe('tool_calls');
    expect(last?.usage).toMatchObject({
      prompt_tokens: 13,
      completion_tokens: 3,
      prompt_tokens_details: { cached_tokens: 5 },
    });
    expect(frames.at(-1)).toEqual({ data: '[DONE]' });
    expect(chunks(frames).filter((chunk) => chunk.usage !== undefined)).toHaveLength(1);
  });

  it('drops reasoning after the answer started, and counts it', () => {
    const encoder = new CcrStreamEncoder(meta);
    const frames = [...textEvents('t', 'answer'), ...reasoningEvents('r', 'sig', 'too late')].flatMap(
      (event) => encoder.push(event),
    );

    expect(JSON.stringify(frames)).not.toContain('too late');
    expect(encoder.droppedReasoningChars).toBe('too late'.length);
  });

  it('ends with an error chunk then [DONE] on a failure, sending nothing after it', () => {
    const encoder = new CcrStreamEncoder(meta);
    const frames = [
      ...encoder.push({ type: 'error', error: createTurnError('overloaded', 'Busy.') }),
      ...encoder.push({ type: 'text-delta', id: 't', delta: 'more' }),
      ...encoder.end(),
    ];

    expect(frames).toEqual([
      { data: JSON.stringify({ error: { message: 'Busy.', type: 'server_error', code: 'overloaded' } }) },
      { data: '[DONE]' },
    ]);
    expect(encoder.ended).toBe(true);
  });
});

describe('createCcrJsonResponse', () => {
  it('carries the reasoning as message.thinking with the signature', () => {
    const body = createCcrJsonResponse(meta, [
      ...reasoningEvents('r', 'sig-j', 'why'),
      ...textEvents('t', 'answer'),
      { type: 'turn-end', stopReason: 'end', usage },
    ]);

    expect(body.choices[0]?.message).toEqual({
      role: 'assistant',
      content: 'answer',
      thinking: { content: 'why', signature: 'sig-j' },
    });
    expect(body.choices[0]?.finish_reason).toBe('stop');
  });
});
