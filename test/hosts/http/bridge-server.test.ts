import Anthropic from '@anthropic-ai/sdk';
import { Agent, request as httpRequest } from 'node:http';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import type { ScriptSource } from '../../../src/upstream/scripted/scripted-upstream.js';
import { createGate, never } from '../../helpers/gate.js';
import { startScriptedBridgeServer } from '../../helpers/scripted-bridge-server.js';

let bridge: Awaited<ReturnType<typeof startScriptedBridgeServer>> | undefined;
const start = async (...args: Parameters<typeof startScriptedBridgeServer>) =>
  (bridge = await startScriptedBridgeServer(...args));
afterEach(async () => {
  await bridge?.close();
  bridge = undefined;
});

const textTurn: ScriptSource = [
  { type: 'reasoning-delta', text: 'Let me think.' },
  { type: 'reasoning-end' },
  { type: 'text-delta', text: 'Hello ' },
  { type: 'text-delta', text: 'world' },
  { type: 'usage', usage: { inputTokens: 20, outputTokens: 5, cacheReadTokens: 10, cacheWriteTokens: 0 } },
  { type: 'end', status: 'finished' },
];

const toolTurn: ScriptSource = [
  { type: 'text-delta', text: 'Running it.' },
  { type: 'tool-call', toolCallId: 'toolu_1', toolName: 'Bash', input: { command: 'echo hi' } },
  { type: 'tool-batch-end' },
  { type: 'await-tool-results' },
  {
    type: 'emit',
    events: ({ toolResults }) => [
      { type: 'text-delta', text: `Tool said: ${JSON.stringify(toolResults[0]?.content)}` },
      { type: 'end', status: 'finished' },
    ],
  },
];

const bashTool = {
  name: 'Bash',
  description: 'Run a shell command',
  input_schema: {
    type: 'object' as const,
    properties: { command: { type: 'string' } },
    required: ['command'],
  },
};

describe('bridge server over HTTP', () => {
  it('answers HEAD /, /health and /v1/models', async () => {
    const { url } = await start(textTurn);
    expect((await fetch(url, { method: 'HEAD' })).status).toBe(200);
    expect(await (await fetch(`${url}/health`)).json()).toEqual({ status: 'ok' });
    const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: Array<{ id: string }> };
    expect(models.data.map((model) => model.id)).toEqual(['composer-2', 'gpt-5.4']);
    const missing = await fetch(`${url}/v2/nothing`);
    expect(missing.status).toBe(404);
  });

  it('streams an Anthropic turn with thinking and usage, decoded by the official SDK (query string ignored)', async () => {
    const { url } = await start(textTurn);
    const client = new Anthropic({
      baseURL: url,
      apiKey: 'sk-test',
      defaultQuery: { beta: 'true' },
      maxRetries: 0,
    });
    const message = await client.messages
      .stream({ model: 'claude-opus-4-8', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage();
    expect(message.content.map((block) => block.type)).toEqual(['thinking', 'text']);
    expect(message.content[1]).toMatchObject({ type: 'text', text: 'Hello world' });
    expect(message.content[0]).toMatchObject({ type: 'thinking', thinking: 'Let me think.' });
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage).toMatchObject({ input_tokens: 20, output_tokens: 5, cache_read_input_tokens: 10 });
  });

  it('runs a tool round trip over two Anthropic requests on one upstream run', async () => {
    const { url, upstream } = await start(toolTurn);
    const client = new Anthropic({ baseURL: url, apiKey: 'sk-test', maxRetries: 0 });
    const first = await client.messages
      .stream({
        model: 'composer-2',
        max_tokens: 100,
        tools: [bashTool],
        messages: [{ role: 'user', content: 'run echo' }],
      })
      .finalMessage();
    expect(first.stop_reason).toBe('tool_use');
    const toolUse = first.content.find((block) => block.type === 'tool_use');
    expect(toolUse).toMatchObject({ id: 'toolu_1', name: 'Bash', input: { command: 'echo hi' } });
    const second = await client.messages
      .stream({
        model: 'composer-2',
        max_tokens: 100,
        tools: [bashTool],
        messages: [
          { role: 'user', content: 'run echo' },
          { role: 'assistant', content: first.content },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'hi-from-host' }],
          },
        ],
      })
      .finalMessage();
    expect(second.content).toEqual([
      expect.objectContaining({ type: 'text', text: expect.stringContaining('hi-from-host') }),
    ]);
    expect(upstream.calls).toHaveLength(1);
  });

  it('streams OpenAI Chat and Responses turns decoded by the official openai client', async () => {
    const { url } = await start([textTurn, textTurn] as unknown as ScriptSource);
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const chat = await client.chat.completions
      .stream({
        model: 'composer-2',
        messages: [{ role: 'user', content: 'hi' }],
        stream_options: { include_usage: true },
      })
      .finalChatCompletion();
    expect(chat.choices[0]?.message.content).toBe('Hello world');
    expect(chat.usage).toMatchObject({ prompt_tokens: 30, completion_tokens: 5 });
    const response = await client.responses
      .stream({ model: 'composer-2', input: 'hello again' })
      .finalResponse();
    expect(response.output_text).toBe('Hello world');
    expect(response.usage).toMatchObject({ input_tokens: 30, output_tokens: 5 });
  });

  it('reports an upstream failure mid-stream in-band: the SDK throws the API error', async () => {
    const { url } = await start([
      { type: 'text-delta', text: 'partial' },
      { type: 'error', error: { kind: 'overloaded', message: 'Cursor is overloaded', retryable: true } },
    ]);
    const client = new Anthropic({ baseURL: url, apiKey: 'sk-test', maxRetries: 0 });
    const stream = client.messages.stream({
      model: 'composer-2',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'x' }],
    });
    await expect(stream.finalMessage()).rejects.toThrow(/Cursor is overloaded/);
    const raw = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'composer-2',
        stream: true,
        messages: [{ role: 'user', content: 'other' }],
      }),
    });
    const text = await raw.text();
    expect(text).toContain('"error"');
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  it('answers a turn refused in preflight with a 401 that stops the client retrying', async () => {
    const { url, upstream } = await start(textTurn);
    upstream.preflightError = {
      kind: 'authentication',
      message: 'Cursor API key not found: set it',
      retryable: false,
    };
    const response = await fetch(`${url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'composer-2',
        max_tokens: 5,
        stream: true,
        messages: [{ role: 'user', content: 'x' }],
      }),
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('x-should-retry')).toBe('false');
    expect(await response.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
  });

  it('rejects bad JSON and a body over the limit in the protocol envelope', async () => {
    const { url } = await start(textTurn, { bodyLimit: 1000 });
    const bad = await fetch(`${url}/v1/chat/completions`, { method: 'POST', body: '{"model":' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { message: expect.stringContaining('not valid JSON') } });
    const big = await fetch(`${url}/v1/messages`, {
      method: 'POST',
      body: JSON.stringify({ padding: 'x'.repeat(5000) }),
    });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ type: 'error', error: { type: 'request_too_large' } });
  });

  it('answers a failing route with a 500 in the OpenAI envelope the openai SDK reads', async () => {
    const { url } = await start(textTurn, {
      listModels: () => {
        throw new Error('catalog exploded');
      },
    });
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const failure = await client.models.list().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OpenAI.InternalServerError);
    expect(failure).toMatchObject({
      status: 500,
      error: { message: 'internal error', type: 'server_error' },
    });
  });

  it('answers 405 for a known path with another method, 404 for an unknown one, and HEAD on unknown paths', async () => {
    const { url } = await start(textTurn);
    const wrongMethod = await fetch(`${url}/v1/messages`);
    expect(wrongMethod.status).toBe(405);
    expect(await wrongMethod.json()).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error' },
    });
    const unknown = await fetch(`${url}/v1/nothing`, { method: 'POST' });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { message: expect.stringContaining('Routes:') } });
    expect((await fetch(`${url}/v1/nothing`, { method: 'HEAD' })).status).toBe(404);
  });

  it('answers a request target that is not a URL path with a 404 and keeps serving', async () => {
    const { url } = await start(textTurn);
    const { port } = new URL(url);
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const request = httpRequest({ host: '127.0.0.1', port, path: '//', method: 'GET' }, (response) => {
        response.resume();
        resolve(response.statusCode);
      });
      request.on('error', reject);
      request.end();
    });
    expect(status).toBe(404);
    expect((await fetch(`${url}/health`)).status).toBe(200);
  });

  it("keeps an idle client connection open for minutes, not Node's 5 s, and says so", async () => {
    const { url } = await start(textTurn);
    const agent = new Agent({ keepAlive: true });
    try {
      const exchange = () =>
        new Promise<{ keepAlive: string; localPort: number | undefined }>((resolve, reject) => {
          const request = httpRequest(`${url}/health`, { agent }, (response) => {
            response.resume();
            response.on('end', () =>
              resolve({
                keepAlive: String(response.headers['keep-alive']),
                localPort: request.socket?.localPort,
              }),
            );
          });
          request.on('error', reject);
          request.end();
        });
      const first = await exchange();
      // Node closes an idle connection after exactly the timeout it announces here: a client whose next
      // request (a tool's result) leaves at that moment gets the connection reset.
      expect(Number(/timeout=(\d+)/.exec(first.keepAlive)?.[1])).toBeGreaterThanOrEqual(120);
      const second = await exchange();
      expect(second.localPort).toBe(first.localPort);
    } finally {
      agent.destroy();
    }
  });

  it('requires the configured APIKEY (x-api-key or Bearer), compared in constant time', async () => {
    const { url } = await start(textTurn, { apiKey: 'secret-key' });
    const denied = new Anthropic({ baseURL: url, apiKey: 'wrong', maxRetries: 0 });
    await expect(
      denied.messages.create({
        model: 'composer-2',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'x' }],
      }),
    ).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
    const allowed = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'secret-key', maxRetries: 0 });
    const completion = await allowed.chat.completions.create({
      model: 'composer-2',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(completion.choices[0]?.message.content).toBe('Hello world');
    expect((await fetch(`${url}/health`)).status).toBe(200);
  });

  it('sends keepalive frames while the upstream is silent', async () => {
    const silence = createGate();
    const { url } = await start(
      [
        { type: 'wait', until: silence.opened },
        { type: 'text-delta', text: 'late' },
        { type: 'end', status: 'finished' },
      ],
      { keepaliveMs: 50 },
    );
    const response = await fetch(`${url}/v1/messages`, {
      method: 'POST',
      body: JSON.stringify({
        model: 'composer-2',
        max_tokens: 5,
        stream: true,
        messages: [{ role: 'user', content: 'x' }],
      }),
    });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    // The upstream stays silent until two keepalives arrived, however long they take.
    while ((text.match(/event: ping/g)?.length ?? 0) < 2) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    expect(text.match(/event: ping/g)?.length).toBeGreaterThanOrEqual(2);
    expect(text).not.toContain('late');
    silence.open();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      text += decoder.decode(chunk.value, { stream: true });
    }
    expect(text).toContain('late');
    expect(text).toContain('event: message_stop');
  });

  it('cancels the upstream run when the official Anthropic client aborts its stream', async () => {
    const { url, upstream } = await start([
      { type: 'text-delta', text: 'first' },
      // Only the cancel ends this wait.
      { type: 'wait', until: never },
      { type: 'text-delta', text: 'never' },
      { type: 'end', status: 'finished' },
    ]);
    const client = new Anthropic({ baseURL: url, apiKey: 'sk-test', maxRetries: 0 });
    const stream = client.messages.stream({
      model: 'composer-2',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'x' }],
    });
    const texts: string[] = [];
    stream.on('text', (text) => {
      texts.push(text);
      stream.abort();
    });
    await expect(stream.finalMessage()).rejects.toThrow();
    expect(texts).toEqual(['first']);
    await expect.poll(() => upstream.calls[0]?.cancelled, { timeout: 30_000 }).toBe(true);
  });

  it('aborts the upstream run when the client disconnects mid-stream', async () => {
    const { url, upstream } = await start([
      { type: 'text-delta', text: 'first' },
      // Only the cancel ends this wait.
      { type: 'wait', until: never },
      { type: 'text-delta', text: 'never' },
      { type: 'end', status: 'finished' },
    ]);
    const abort = new AbortController();
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      signal: abort.signal,
      body: JSON.stringify({ model: 'composer-2', stream: true, messages: [{ role: 'user', content: 'x' }] }),
    });
    const reader = response.body!.getReader();
    let seen = '';
    while (!seen.includes('first')) seen += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    abort.abort();
    await expect.poll(() => upstream.calls[0]?.cancelled, { timeout: 30_000 }).toBe(true);
  });
});
