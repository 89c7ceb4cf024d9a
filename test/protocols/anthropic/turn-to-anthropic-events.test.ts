import { describe, expect, it } from 'vitest';

import {
  AnthropicStreamEncoder,
  createAnthropicJsonResponse,
} from '../../../src/protocols/anthropic/turn-to-anthropic-events.js';
import type { SseFrame } from '../../../src/protocols/sse-frame.js';
import { serializeSseFrames } from '../../../src/protocols/sse-serialize.js';
import { createTurnError } from '../../../src/turn/turn-error.js';
import type { TurnEvent } from '../../../src/turn/turn-event.js';
import { readFixture } from '../../helpers/protocols/read-fixture.js';
import { toolCallEvents } from '../../helpers/protocols/turn-event-builders.js';
import {
  encodeScript,
  meta,
  scripts,
  usage,
  type ScriptName,
} from '../../helpers/protocols/turn-event-scripts.js';

const readSse = (name: string): string => readFixture('anthropic', `${name}.sse`);

/** The data of every frame, parsed (our own output, so a bare JSON.parse is fine here). */
const payloads = (frames: readonly SseFrame[]): Array<Record<string, unknown>> =>
  frames.map((frame) => {
    if ('comment' in frame) throw new Error('unexpected comment frame');
    const data = JSON.parse(frame.data) as Record<string, unknown>;
    expect(frame.event).toBe(data.type);
    return data;
  });

const types = (frames: readonly SseFrame[]): unknown[] => payloads(frames).map((payload) => payload.type);

describe('AnthropicStreamEncoder byte-level fixtures', () => {
  it.each(Object.keys(scripts) as ScriptName[])('%s', (name) => {
    expect(serializeSseFrames(encodeScript(scripts[name]))).toBe(readSse(name));
  });
});

describe('AnthropicStreamEncoder lifecycle', () => {
  it('starts once, with message_start carrying the id and model from the meta', () => {
    const encoder = new AnthropicStreamEncoder(meta);
    const [start] = payloads(encoder.start());
    expect(start).toEqual({
      type: 'message_start',
      message: {
        id: 'msg_01fixture',
        type: 'message',
        role: 'assistant',
        model: 'claude-opus-4-8',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: 0,
          output_tokens: 0,
          cache_read_input_tokens: 0,
          cache_creation_input_tokens: 0,
        },
      },
    });
    expect(encoder.start()).toEqual([]);
  });

  it('emits message_start itself when push comes before start()', () => {
    const encoder = new AnthropicStreamEncoder(meta);
    expect(types(encoder.push({ type: 'text-delta', id: 'a', delta: 'x' }))).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
    ]);
  });

  it('is ended after turn-end, ignores later events, and end() is idempotent', () => {
    const encoder = new AnthropicStreamEncoder(meta);
    encoder.start();
    expect(encoder.ended).toBe(false);
    expect(types(encoder.push({ type: 'turn-end', stopReason: 'end', usage }))).toEqual([
      'message_delta',
      'message_stop',
    ]);
    expect(encoder.ended).toBe(true);
    expect(encoder.push({ type: 'text-delta', id: 'late', delta: 'x' })).toEqual([]);
    expect(encoder.end()).toEqual([]);
    expect(encoder.end()).toEqual([]);
  });

  it('closes an open block before message_delta on turn-end', () => {
    const encoder = new AnthropicStreamEncoder(meta);
    encoder.start();
    encoder.push({ type: 'text-delta', id: 'a', delta: 'x' });
    expect(types(encoder.push({ type: 'turn-end', stopReason: 'refusal', usage }))).toEqual([
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
  });

  it.each([
    ['end', 'end_turn'],
    ['tool-use', 'tool_use'],
    ['max-tokens', 'max_tokens'],
    ['refusal', 'refusal'],
  ] as const)('maps stop reason %s to %s', (stopReason, expected) => {
    const encoder = new AnthropicStreamEncoder(meta);
    const [delta] = payloads(encoder.push({ type: 'turn-end', stopReason, usage }).slice(1));
    expect(delta).toMatchObject({ delta: { stop_reason: expected, stop_sequence: null } });
  });

  it('reports usage with cache counts and thinking tokens on message_delta', () => {
    const encoder = new AnthropicStreamEncoder(meta);
    encoder.start();
    const [delta] = payloads(
      encoder.push({ type: 'turn-end', stopReason: 'end', usage: { ...usage, reasoningTokens: 7 } }),
    );
    expect(delta?.usage).toEqual({
      output_tokens: 34,
      input_tokens: 12,
      cache_read_input_tokens: 5000,
      cache_creation_input_tokens: 200,
      output_tokens_details: { thinking_tokens: 7 },
    });
  });

  it('keepalive is a ping event', () => {
    expect(new AnthropicStreamEncoder(meta).keepalive()).toEqual({ event: 'ping', data: '{"type":"ping"}' });
  });
});

describe('AnthropicStreamEncoder errors', () => {
  it('ends with the error event and message_stop: no block stop, no message_delta', () => {
    const encoder = new AnthropicStreamEncoder(meta);
    encoder.start();
    encoder.push({ type: 'tool-input-start', id: 'toolu_1', toolName: 'Bash', kind: 'function' });
    encoder.push({ type: 'tool-input-delta', id: 'toolu_1', delta: '{"comm' });
    const frames = encoder.push({ type: 'error', error: createTurnError('rate-limit', 'slow down') });
    expect(payloads(frames)).toEqual([
      { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } },
      { type: 'message_stop' },
    ]);
    expect(encoder.ended).toBe(true);
    expect(encoder.end()).toEqual([]);
  });

  it('end() without a terminal event reports an api_error in-band', () => {
    const encoder = new AnthropicStreamEncoder(meta);
    encoder.start();
    encoder.push({ type: 'text-delta', id: 'a', delta: 'x' });
    expect(payloads(encoder.end())).toEqual([
      { type: 'error', error: { type: 'api_error', message: expect.stringContaining('without finishing') } },
      { type: 'message_stop' },
    ]);
    expect(encoder.ended).toBe(true);
  });

  it('an error before start() is an error event and message_stop', () => {
    const encoder = new AnthropicStreamEncoder(meta);
    expect(
      types(encoder.push({ type: 'error', error: createTurnError('authentication', 'bad key') })),
    ).toEqual(['error', 'message_stop']);
    expect(encoder.start()).toEqual([]);
  });
});

describe('AnthropicStreamEncoder robustness', () => {
  const run = (events: TurnEvent[]) => {
    const encoder = new AnthropicStreamEncoder(meta);
    encoder.start();
    return payloads(events.flatMap((event) => encoder.push(event)));
  };

  it('starts blocks for deltas that arrive without a start, closing the open one', () => {
    expect(
      run([
        { type: 'reasoning-delta', id: 'r', delta: 'think' },
        { type: 'text-delta', id: 't', delta: 'say' },
        { type: 'text-delta', id: 'u', delta: 'more' },
      ]),
    ).toEqual([
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'thinking', thinking: '', signature: '' },
      },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'think' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'say' } },
      { type: 'content_block_stop', index: 1 },
      { type: 'content_block_start', index: 2, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 2, delta: { type: 'text_delta', text: 'more' } },
    ]);
  });

  it('closes the open block when another starts without an end, and ignores stray ends', () => {
    expect(
      run([
        { type: 'text-start', id: 't' },
        { type: 'reasoning-end', id: 'nope', signature: 's' },
        { type: 'tool-input-start', id: 'toolu_1', toolName: 'Read', kind: 'function' },
        { type: 'text-end', id: 't' },
      ]).map((payload) => payload.type),
    ).toEqual(['content_block_start', 'content_block_stop', 'content_block_start']);
  });

  it('sends the whole input of a tool-call that had no input events', () => {
    expect(
      run([
        { type: 'tool-call', toolCallId: 'toolu_9', toolName: 'Read', kind: 'function', input: '{"a":1}' },
      ]),
    ).toEqual([
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'tool_use', id: 'toolu_9', name: 'Read', input: {} },
      },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"a":1}' } },
      { type: 'content_block_stop', index: 0 },
    ]);
  });

  it('completes the input when the deltas stopped short of the final arguments', () => {
    const frames = run(toolCallEvents('toolu_1', 'Read', '{"file_path":"/a"}', { deltas: ['{"file_'] }));
    expect(frames.slice(1)).toEqual([
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"file_' } },
      {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'input_json_delta', partial_json: 'path":"/a"}' },
      },
      { type: 'content_block_stop', index: 0 },
    ]);
  });

  it('drops input deltas for a tool that never started', () => {
    expect(run([{ type: 'tool-input-delta', id: 'ghost', delta: '{"x"' }])).toEqual([]);
  });

  it('wraps custom (free-form) tool input as {"input": …} once, at the end of the block', () => {
    const frames = run(
      toolCallEvents('call_1', 'apply_patch', '*** Begin Patch', { kind: 'custom', deltas: ['*** Begin'] }),
    );
    expect(frames.slice(1)).toEqual([
      {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'input_json_delta', partial_json: '{"input":"*** Begin Patch"}' },
      },
      { type: 'content_block_stop', index: 0 },
    ]);
  });
});

describe('createAnthropicJsonResponse', () => {
  it('builds thinking, text and tool_use blocks with parsed inputs, stop reason and usage', () => {
    const events: TurnEvent[] = [...scripts.thinking.slice(0, 7), ...scripts['two-tool-calls']];
    expect(createAnthropicJsonResponse(meta, events)).toEqual({
      id: 'msg_01fixture',
      type: 'message',
      role: 'assistant',
      model: 'claude-opus-4-8',
      content: [
        { type: 'thinking', thinking: 'The user greets me. Reply briefly.', signature: 'c2lnbmF0dXJl' },
        { type: 'text', text: 'Hi!' },
        { type: 'tool_use', id: 'toolu_fake_0001', name: 'Bash', input: { command: 'ls' } },
        { type: 'tool_use', id: 'toolu_fake_0002', name: 'Bash', input: { command: 'pwd' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: {
        input_tokens: 12,
        output_tokens: 34,
        cache_read_input_tokens: 5000,
        cache_creation_input_tokens: 200,
      },
    });
  });

  it('starts blocks for unannounced deltas and separates blocks by id', () => {
    const response = createAnthropicJsonResponse(meta, [
      { type: 'text-delta', id: 'a', delta: 'one' },
      { type: 'text-delta', id: 'a', delta: ' two' },
      { type: 'text-delta', id: 'b', delta: 'three' },
      { type: 'tool-call', toolCallId: 'c', toolName: 'apply_patch', kind: 'custom', input: 'raw' },
      { type: 'tool-call', toolCallId: 'd', toolName: 'Read', kind: 'function', input: '' },
      { type: 'turn-end', stopReason: 'end', usage },
    ]);
    expect(response.content).toEqual([
      { type: 'text', text: 'one two' },
      { type: 'text', text: 'three' },
      { type: 'tool_use', id: 'c', name: 'apply_patch', input: { input: 'raw' } },
      { type: 'tool_use', id: 'd', name: 'Read', input: {} },
    ]);
    expect(response.stop_reason).toBe('end_turn');
  });

  it('falls back to the last usage event and end_turn without a turn-end', () => {
    const response = createAnthropicJsonResponse(meta, [
      { type: 'text-delta', id: 'a', delta: 'x' },
      { type: 'usage', usage: { ...usage, outputTokens: 1 } },
    ]);
    expect(response.stop_reason).toBe('end_turn');
    expect(response.usage.output_tokens).toBe(1);
  });
});
