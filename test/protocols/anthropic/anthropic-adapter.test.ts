import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';

import { anthropicAdapter } from '../../../src/protocols/anthropic/anthropic-adapter.js';
import { serializeSseFrames } from '../../../src/protocols/sse-serialize.js';
import { createTurnError } from '../../../src/turn/turn-error.js';
import type { TurnRequest } from '../../../src/turn/turn-request.js';
import { createJsonFetch } from '../../helpers/sse-response.js';
import { runStreamEncoder } from '../../helpers/protocols/run-stream-encoder.js';
import { encodeScript, meta, scripts } from '../../helpers/protocols/turn-event-scripts.js';

const parsed = anthropicAdapter.parseRequest(
  { model: 'claude-opus-4-8', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], stream: true },
  { 'x-claude-code-session-id': 'sess-1', 'x-api-key': 'sk-test' },
);
if (!parsed.ok) throw new Error(parsed.error.message);
const turn: TurnRequest = parsed.value;

describe('anthropicAdapter', () => {
  it('identifies the protocol and its id prefix', () => {
    expect(anthropicAdapter.protocol).toBe('anthropic');
    expect(anthropicAdapter.idPrefix).toBe('msg_');
  });

  it('parses requests', () => {
    expect(turn).toMatchObject({
      protocol: 'anthropic',
      stream: true,
      identity: { nativeSessionId: { value: 'sess-1', source: 'x-claude-code-session-id' } },
      headers: { 'x-claude-code-session-id': 'sess-1' },
    });
    expect(anthropicAdapter.parseRequest({ model: 'm' }, {})).toMatchObject({
      ok: false,
      error: { kind: 'invalid-request', param: 'messages' },
    });
  });

  it('creates a fresh stream encoder per response', () => {
    const encoder = anthropicAdapter.createStreamEncoder(turn, meta);
    const frames = runStreamEncoder(encoder, scripts.text);
    expect(serializeSseFrames(frames)).toBe(serializeSseFrames(encodeScript(scripts.text)));
    expect(encoder.ended).toBe(true);
    expect(anthropicAdapter.createStreamEncoder(turn, meta).ended).toBe(false);
  });

  it('builds a non-stream body the official client accepts as a Message', async () => {
    const body = anthropicAdapter.createJsonResponse(turn, meta, scripts['tool-call']);
    const client = new Anthropic({
      apiKey: 'sk-test',
      baseURL: 'http://127.0.0.1:9',
      maxRetries: 0,
      fetch: createJsonFetch(body),
    });
    const message = await client.messages.create({
      model: 'claude-opus-4-8',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'run it' }],
    });
    expect(message).toEqual({
      id: 'msg_01fixture',
      type: 'message',
      role: 'assistant',
      model: 'claude-opus-4-8',
      content: [
        { type: 'text', text: 'Running it.' },
        {
          type: 'tool_use',
          id: 'toolu_fake_0001',
          name: 'Bash',
          input: { command: 'echo hello-from-tool', description: 'Print a greeting' },
        },
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

  it('creates error responses in the Anthropic envelope', () => {
    expect(anthropicAdapter.createErrorResponse(createTurnError('authentication', 'bad key'))).toEqual({
      status: 401,
      headers: { 'x-should-retry': 'false' },
      body: { type: 'error', error: { type: 'authentication_error', message: 'bad key' } },
    });
  });
});
