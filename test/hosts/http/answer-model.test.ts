/**
 * The answer's `model` names the Cursor model that ran, in every protocol, streamed or not — the engine
 * resolves the request's name with the bridge's own resolver over a catalog, and the official SDKs read the
 * answers.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { engineModelResolver } from '../../../src/bridge/create-bridge.js';
import { resolveConfig } from '../../../src/config/load-config.js';
import type { ScriptSource } from '../../../src/upstream/scripted/scripted-upstream.js';
import { startScriptedBridgeServer } from '../../helpers/scripted-bridge-server.js';

const textTurn: ScriptSource = [
  { type: 'text-delta', text: 'Hello' },
  { type: 'usage', usage: { inputTokens: 3, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 } },
  { type: 'end', status: 'finished' },
];

const catalog = [
  { id: 'composer-2' },
  { id: 'gpt-5.4', aliases: ['gpt-5.4-latest'] },
  { id: 'claude-opus-4-8' },
];

let bridge: Awaited<ReturnType<typeof startScriptedBridgeServer>> | undefined;
afterEach(async () => {
  await bridge?.close();
  bridge = undefined;
});

const start = async () => {
  const config = resolveConfig(
    { Providers: [{ name: 'cursor', models: ['composer-2'] }], Router: { default: 'cursor,composer-2' } },
    { path: '/nonexistent/config.json', env: {}, homedir: '/nonexistent' },
  );
  bridge = await startScriptedBridgeServer(
    () => textTurn,
    {},
    { resolveModel: engineModelResolver(config, { catalog: async () => catalog }) },
  );
  return bridge;
};

// [asked for, the Cursor model that runs]
const cases = [
  ['sonnet', 'composer-2'],
  ['claude-opus-4-8[1m]', 'composer-2'],
  ['gpt-5.4-latest', 'gpt-5.4'],
  ['gpt-6.2-sol', 'composer-2'],
] as const;

describe("the answer's model field", () => {
  it.each(cases)('Anthropic Messages, %s → %s', async (asked, ran) => {
    const { url, upstream } = await start();
    const client = new Anthropic({ baseURL: url, apiKey: 'x', maxRetries: 0 });
    const request = { model: asked, max_tokens: 100, messages: [{ role: 'user' as const, content: 'hi' }] };
    const streamed = await client.messages.stream(request).finalMessage();
    const json = await client.messages.create({ ...request, messages: [{ role: 'user', content: 'again' }] });

    expect([streamed.model, json.model]).toEqual([ran, ran]);
    expect(upstream.calls.map((call) => call.input.model)).toEqual([ran, ran]);
  });

  it.each(cases)('OpenAI Chat Completions, %s → %s', async (asked, ran) => {
    const { url } = await start();
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'x', maxRetries: 0 });
    const chunks = await client.chat.completions.create({
      model: asked,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const models: string[] = [];
    for await (const chunk of chunks) models.push(chunk.model);
    const json = await client.chat.completions.create({
      model: asked,
      messages: [{ role: 'user', content: 'again' }],
    });

    expect(new Set(models)).toEqual(new Set([ran]));
    expect(json.model).toBe(ran);
  });

  it.each(cases)('OpenAI Responses, %s → %s', async (asked, ran) => {
    const { url } = await start();
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'x', maxRetries: 0 });
    const streamed = await client.responses.stream({ model: asked, input: 'hi' }).finalResponse();
    const json = await client.responses.create({ model: asked, input: 'again' });

    expect([streamed.model, json.model]).toEqual([ran, ran]);
  });
});
