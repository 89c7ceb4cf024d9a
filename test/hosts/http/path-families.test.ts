import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { startScriptedBridgeServer } from '../../helpers/scripted-bridge-server.js';

let bridge: Awaited<ReturnType<typeof startScriptedBridgeServer>> | undefined;
const start = async (options: Parameters<typeof startScriptedBridgeServer>[1] = {}) =>
  (bridge = await startScriptedBridgeServer([{ type: 'end', status: 'finished' }], options));
afterEach(async () => {
  await bridge?.close();
  bridge = undefined;
});

const anthropicEnvelope = (type: string) => ({ type: 'error', error: { type, message: expect.any(String) } });
const openaiEnvelope = {
  error: { message: expect.any(String), type: expect.any(String), param: null, code: expect.anything() },
};

const answer = async (url: string, init: RequestInit = {}) => {
  const response = await fetch(url, init);
  return { status: response.status, body: (await response.json()) as unknown };
};

describe("an unknown path or method answers in its path's family's envelope", () => {
  it('answers HEAD /api/hello (Claude Code 2.1.332) and HEAD / (2.1.197) without the API key', async () => {
    const { url } = await start({ apiKey: 'secret-key' });
    expect((await fetch(`${url}/api/hello`, { method: 'HEAD' })).status).toBe(200);
    expect((await fetch(url, { method: 'HEAD' })).status).toBe(200);
  });

  it("uses Anthropic's envelope under /v1/messages and /api", async () => {
    const { url } = await start();
    for (const path of ['/v1/messages/batches', '/v1/messages/count_tokens/x', '/api/claude_cli/bootstrap']) {
      expect(await answer(`${url}${path}?beta=true`, { method: 'POST' }), path).toEqual({
        status: 404,
        body: anthropicEnvelope('not_found_error'),
      });
    }
    expect(await answer(`${url}/v1/messages/count_tokens`)).toEqual({
      status: 405,
      body: anthropicEnvelope('invalid_request_error'),
    });
    // The official SDK reads it as its own NotFoundError.
    const client = new Anthropic({ baseURL: url, apiKey: 'sk-test', maxRetries: 0 });
    const failure = await client.messages.batches.list().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Anthropic.NotFoundError);
  });

  it("uses OpenAI's envelope under /v1/chat, /v1/responses, /v1/models and elsewhere", async () => {
    const { url } = await start();
    for (const path of [
      '/v1/chat/nothing',
      '/v1/responses/resp_1/cancel',
      '/v1/models/gpt-5.4',
      '/v1/embeddings',
      '/nothing',
    ]) {
      const got = await answer(`${url}${path}`, { method: 'POST' });
      expect(got, path).toEqual({ status: 404, body: openaiEnvelope });
      expect(got.body, path).not.toHaveProperty('type');
    }
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const failure = await client.embeddings
      .create({ model: 'x', input: 'y' })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('names every route of the route table in a 404, the live grounding preview too', async () => {
    const { url } = await start({ groundingPreview: async () => ({}) });
    const { body } = await answer(`${url}/nothing`);
    expect((body as { error: { message: string } }).error.message).toBe(
      'No route GET /nothing. Routes: POST /v1/messages, /v1/chat/completions, /v1/responses, ' +
        '/v1/messages/count_tokens; GET /health, /v1/models, /debug/grounding, /metrics.',
    );
  });

  it("refuses a missing API key in the path's family's envelope", async () => {
    const { url } = await start({ apiKey: 'secret-key' });
    expect(await answer(`${url}/v1/messages/count_tokens`, { method: 'POST', body: '{}' })).toEqual({
      status: 401,
      body: anthropicEnvelope('authentication_error'),
    });
    expect(await answer(`${url}/v1/responses`, { method: 'POST', body: '{}' })).toEqual({
      status: 401,
      body: openaiEnvelope,
    });
  });
});
