import Anthropic from '@anthropic-ai/sdk';
import { countTokens as countO200k } from 'gpt-tokenizer/encoding/o200k_base';
import { afterEach, describe, expect, it } from 'vitest';
import {
  countTurnTokens,
  IMAGE_TOKEN_ESTIMATE,
  MESSAGE_OVERHEAD_TOKENS,
} from '../../../src/hosts/http/count-turn-tokens.js';
import { startScriptedBridgeServer } from '../../helpers/scripted-bridge-server.js';

let bridge: Awaited<ReturnType<typeof startScriptedBridgeServer>> | undefined;
afterEach(async () => {
  await bridge?.close();
  bridge = undefined;
});

const start = async (options: Parameters<typeof startScriptedBridgeServer>[1] = {}) =>
  (bridge = await startScriptedBridgeServer([{ type: 'end', status: 'finished' }], options));

/** o200k_base counts checked against js-tiktoken's o200k_base, a second implementation of the vocabulary. */
const fox = 'The quick brown fox jumps over the lazy dog.'; // 10 tokens
const foxTokens = 10;

const count = async (url: string, body: unknown, headers: Record<string, string> = {}) => {
  const response = await fetch(`${url}/v1/messages/count_tokens?beta=true`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

const tokensOf = async (url: string, body: Record<string, unknown>): Promise<number> => {
  const answer = await count(url, { model: 'claude-sonnet-4-5', ...body });
  expect(answer.status).toBe(200);
  return answer.body['input_tokens'] as number;
};

const bash = {
  name: 'Bash',
  description: 'Run a shell command',
  input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
};

describe('POST /v1/messages/count_tokens', () => {
  it("answers {input_tokens} through the official SDK's beta countTokens (query string ignored)", async () => {
    const { url } = await start();
    const client = new Anthropic({ baseURL: url, apiKey: 'sk-test', maxRetries: 0 });
    const answer = await client.beta.messages.countTokens({
      model: 'claude-sonnet-4-5',
      system: fox,
      messages: [],
    });
    expect(answer).toEqual({ input_tokens: foxTokens });
  });

  it('counts a known string exactly as o200k_base does', async () => {
    expect(await countTurnTokens({ system: [{ type: 'text', text: fox }], messages: [], tools: [] })).toBe(
      foxTokens,
    );
    const special = 'tokenization 東京 🙂 <|endoftext|>'; // 11 tokens, the marker as plain text
    expect(
      await countTurnTokens({ system: [{ type: 'text', text: special }], messages: [], tools: [] }),
    ).toBe(11);
  });

  it('grows by exactly what each part of the request adds: system, messages, tool calls and results, images, tools', async () => {
    const { url } = await start();
    const empty = await tokensOf(url, { messages: [] });
    expect(empty).toBe(0);

    const withSystem = await tokensOf(url, { system: [{ type: 'text', text: fox }], messages: [] });
    expect(withSystem).toBe(foxTokens);

    const oneMessage = [{ role: 'user', content: fox }];
    const withMessage = await tokensOf(url, { system: fox, messages: oneMessage });
    expect(withMessage).toBe(2 * foxTokens + MESSAGE_OVERHEAD_TOKENS);

    const input = { command: 'ls -la /tmp' };
    const toolRound = [
      ...oneMessage,
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'Bash', input }] },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'total 0\nfile-a\nfile-b' }],
      },
    ];
    const withToolRound = await tokensOf(url, { system: fox, messages: toolRound });
    expect(withToolRound - withMessage).toBe(
      countO200k(`Bash ${JSON.stringify(input)}`) +
        countO200k('total 0\nfile-a\nfile-b') +
        2 * MESSAGE_OVERHEAD_TOKENS,
    );

    const image = {
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' },
    };
    const withImage = await tokensOf(url, {
      system: fox,
      messages: [{ role: 'user', content: [{ type: 'text', text: fox }, image] }],
    });
    expect(withImage - withMessage).toBe(IMAGE_TOKEN_ESTIMATE);

    const withTool = await tokensOf(url, { system: fox, messages: oneMessage, tools: [bash] });
    expect(withTool - withMessage).toBe(countO200k(JSON.stringify(bash)) + MESSAGE_OVERHEAD_TOKENS);
    const withTwoTools = await tokensOf(url, {
      system: fox,
      messages: oneMessage,
      tools: [bash, { ...bash, name: 'Bash2' }],
    });
    expect(withTwoTools).toBeGreaterThan(withTool);
  });

  it('counts a long text in slices exactly as it counts it whole', async () => {
    const line = 'const internationalization = configureLocalization(options); // a line\n';
    const text = line.repeat(4_000); // ≈ 260 kB: four slices
    const whole = countO200k(text);
    expect(await countTurnTokens({ system: [{ type: 'text', text }], messages: [], tools: [] })).toBe(whole);
    // Remembered by digest: the same count again.
    expect(await countTurnTokens({ system: [{ type: 'text', text }], messages: [], tools: [] })).toBe(whole);
  });

  it("refuses a malformed request in Anthropic's envelope, naming what is wrong", async () => {
    const { url } = await start();
    const notJson = await count(url, '{"model":');
    expect(notJson.status).toBe(400);
    expect(notJson.body).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringContaining('not valid JSON') },
    });

    const noMessages = await count(url, { model: 'composer-2' });
    expect(noMessages.status).toBe(400);
    expect(noMessages.body).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringContaining('messages') },
    });

    const badContent = await count(url, { model: 'composer-2', messages: [{ role: 'user', content: 7 }] });
    expect(badContent.status).toBe(400);
    expect(badContent.body).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringContaining('messages.0.content') },
    });

    const badRole = await count(url, { model: 'composer-2', messages: [{ role: 'robot', content: 'x' }] });
    expect(badRole.status).toBe(400);
    expect(badRole.body).toMatchObject({ error: { message: expect.stringContaining('messages.0.role') } });
  });

  it("requires the bridge's API key like every other API route", async () => {
    const { url } = await start({ apiKey: 'secret-key' });
    const denied = await count(url, { model: 'composer-2', messages: [] });
    expect(denied.status).toBe(401);
    expect(denied.body).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    const allowed = await count(url, { model: 'composer-2', messages: [] }, { 'x-api-key': 'secret-key' });
    expect(allowed).toEqual({ status: 200, body: { input_tokens: 0 } });
  });
});
