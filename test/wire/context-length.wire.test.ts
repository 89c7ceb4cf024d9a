import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { closeWireBackend, startWireBridge, type WireBridge } from '../helpers/wire-bridge.js';

/**
 * The real @cursor/sdk meets Cursor's context-window refusal (the fake's `failConversationTooLong`:
 * ErrorDetails CONVERSATION_TOO_LONG, not retryable) and each protocol answers with its own
 * context-length error, once: neither the SDK nor the bridge retries it.
 */

let wire: WireBridge | undefined;
const start = async () =>
  (wire = await startWireBridge({ scenario: (run) => run.failConversationTooLong() }));
afterEach(async () => {
  await wire?.close();
  wire = undefined;
});
afterAll(closeWireBackend);

const messages = [{ role: 'user' as const, content: 'a conversation that outgrew the window' }];

describe('a conversation over the Cursor model context window', () => {
  it('Anthropic, not streaming: 400 invalid_request_error "prompt is too long", x-should-retry false, one run', async () => {
    const { url, runs } = await start();
    const response = await fetch(`${url}/v1/messages?beta=true`, {
      method: 'POST',
      body: JSON.stringify({ model: 'composer-2', max_tokens: 5, messages }),
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('x-should-retry')).toBe('false');
    const body = (await response.json()) as { type: string; error: { type: string; message: string } };
    expect(body.type).toBe('error');
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toMatch(/^prompt is too long: .*Your conversation is too long/);
    expect(runs()).toHaveLength(1);
  });

  it('Anthropic, streaming: an in-band invalid_request_error the official client throws', async () => {
    const { url, runs } = await start();
    const client = new Anthropic({ baseURL: url, apiKey: 'sk-test', maxRetries: 0 });
    const stream = await client.messages.create({
      model: 'composer-2',
      max_tokens: 5,
      stream: true,
      messages,
    });
    const error = await (async () => {
      for await (const _event of stream) {
        // message_start and pings may come first
      }
    })().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect(error).toMatchObject({ type: 'invalid_request_error' });
    expect((error as Error).message.toLowerCase()).toContain('prompt is too long');
    expect(runs()).toHaveLength(1);
  });

  it('Responses, streaming: response.failed with code context_length_exceeded', async () => {
    const { url, runs } = await start();
    const response = await fetch(`${url}/v1/responses`, {
      method: 'POST',
      body: JSON.stringify({ model: 'composer-2', stream: true, input: messages[0]?.content }),
    });
    const text = await response.text();
    const failed = text
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as { type: string; response?: { error?: { code?: string } } })
      .find((event) => event.type === 'response.failed');
    expect(failed?.response?.error?.code).toBe('context_length_exceeded');
    expect(runs()).toHaveLength(1);
  });

  it('Chat Completions, not streaming: 400 code context_length_exceeded through the official client', async () => {
    const { url, runs } = await start();
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-test', maxRetries: 2 });
    const error = await client.chat.completions
      .create({ model: 'composer-2', messages })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({
      status: 400,
      type: 'invalid_request_error',
      code: 'context_length_exceeded',
    });
    // x-should-retry: false keeps the client's two retries unused.
    expect(runs()).toHaveLength(1);
  });
});
