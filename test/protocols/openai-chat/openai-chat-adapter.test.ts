import { describe, expect, it } from 'vitest';
import { openaiChatAdapter } from '../../../src/protocols/openai-chat/openai-chat-adapter.js';
import { serializeSseFrames } from '../../../src/protocols/sse-serialize.js';
import { createTurnError } from '../../../src/turn/turn-error.js';
import type { TurnEvent } from '../../../src/turn/turn-event.js';
import { meta, usage } from '../../helpers/protocols/openai-chat-scripts.js';

const body = {
  model: 'composer-2',
  messages: [{ role: 'user', content: 'hi' }],
  stream: true,
  stream_options: { include_usage: true },
};

describe('openaiChatAdapter', () => {
  it('identifies the protocol and its id prefix', () => {
    expect(openaiChatAdapter.protocol).toBe('openai-chat');
    expect(openaiChatAdapter.idPrefix).toBe('chatcmpl-');
  });

  it('parses requests and reports bad ones as invalid-request errors', () => {
    const parsed = openaiChatAdapter.parseRequest(body, { 'x-session-id': 'ses_1' });
    expect(parsed).toMatchObject({
      ok: true,
      value: {
        protocol: 'openai-chat',
        includeStreamUsage: true,
        identity: { nativeSessionId: { value: 'ses_1' } },
      },
    });
    expect(openaiChatAdapter.parseRequest({ model: 'm', messages: [{ role: 'user' }] }, {})).toMatchObject({
      ok: false,
      error: { kind: 'invalid-request', param: 'messages.0.content' },
    });
  });

  it('creates an encoder honouring include_usage, a JSON response and error responses', () => {
    const parsed = openaiChatAdapter.parseRequest(body, {});
    if (!parsed.ok) throw new Error(parsed.error.message);
    const events: TurnEvent[] = [
      { type: 'text-delta', id: 't', delta: 'yo' },
      { type: 'turn-end', stopReason: 'end', usage },
    ];
    const encoder = openaiChatAdapter.createStreamEncoder(parsed.value, meta);
    const text = serializeSseFrames([...encoder.start(), ...events.flatMap((event) => encoder.push(event))]);
    expect(text).toContain('"choices":[],"usage":{"prompt_tokens":15');
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(encoder.ended).toBe(true);

    expect(openaiChatAdapter.createJsonResponse(parsed.value, meta, events)).toMatchObject({
      id: meta.id,
      object: 'chat.completion',
      choices: [{ message: { content: 'yo' }, finish_reason: 'stop' }],
    });
    expect(openaiChatAdapter.createErrorResponse(createTurnError('rate-limit', 'busy'))).toEqual({
      status: 429,
      headers: {},
      body: {
        error: { message: 'busy', type: 'rate_limit_error', param: null, code: 'rate_limit_exceeded' },
      },
    });
  });
});
