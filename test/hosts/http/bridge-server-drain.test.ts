import { afterEach, describe, expect, it } from 'vitest';
import { startScriptedBridgeServer } from '../../helpers/scripted-bridge-server.js';

let bridge: Awaited<ReturnType<typeof startScriptedBridgeServer>> | undefined;
afterEach(async () => {
  await bridge?.close();
  bridge = undefined;
});

const post = (url: string, path: string, body: unknown, session: string): Promise<Response> =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-session-id': session,
      'x-claude-code-session-id': session,
    },
    body: JSON.stringify(body),
  });

describe('bridge server while draining', () => {
  it('answers /health 503 draining and refuses a new conversation with a retryable 503 and retry-after in each protocol’s envelope', async () => {
    let draining = false;
    bridge = await startScriptedBridgeServer(
      [
        { type: 'text-delta', text: 'hi' },
        { type: 'end', status: 'finished' },
      ],
      { draining: () => draining },
    );
    const { url, engine } = bridge;
    expect((await fetch(`${url}/health`)).status).toBe(200);

    draining = true;
    void engine.drain();
    const health = await fetch(`${url}/health`);
    expect(health.status).toBe(503);
    expect(await health.json()).toEqual({ status: 'draining' });

    const messages = [{ role: 'user', content: 'hello' }];
    const anthropic = await post(url, '/v1/messages', { model: 'composer-2', max_tokens: 10, messages }, 'a');
    const chat = await post(url, '/v1/chat/completions', { model: 'composer-2', messages }, 'c');
    const responses = await post(url, '/v1/responses', { model: 'composer-2', input: 'hello' }, 'r');
    for (const response of [anthropic, chat, responses]) {
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('2');
      expect(response.headers.get('x-should-retry')).toBeNull();
    }
    expect(await anthropic.json()).toEqual({
      type: 'error',
      error: { type: 'api_error', message: expect.stringContaining('draining') },
    });
    expect(await chat.json()).toMatchObject({
      error: {
        type: 'server_error',
        code: 'service_unavailable',
        message: expect.stringContaining('draining'),
      },
    });
    expect(await responses.json()).toMatchObject({
      error: { type: 'server_error', code: 'service_unavailable' },
    });
    expect(bridge.upstream.calls).toHaveLength(0);
  });
});
