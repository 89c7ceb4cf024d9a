import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../../src/logging/logger.js';
import type { ScriptSource } from '../../../src/upstream/scripted/scripted-upstream.js';
import { createGate, never } from '../../helpers/gate.js';
import { startScriptedBridgeServer } from '../../helpers/scripted-bridge-server.js';
import { BridgeMetrics } from '../../../src/metrics/bridge-metrics.js';
import { anthropicAdapter } from '../../../src/protocols/anthropic/anthropic-adapter.js';
import { openaiChatAdapter } from '../../../src/protocols/openai-chat/openai-chat-adapter.js';
import { openaiResponsesAdapter } from '../../../src/protocols/openai-responses/openai-responses-adapter.js';
import { createBridgeServer } from '../../../src/hosts/http/create-server.js';
import { createTestEngine } from '../../helpers/engine-helpers.js';

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

type Line = Record<string, unknown>;

const start = async (source: ScriptSource, options: Parameters<typeof startScriptedBridgeServer>[1] = {}) => {
  const lines: Line[] = [];
  const raw: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      raw.push(chunk.toString());
      lines.push(JSON.parse(chunk.toString()) as Line);
      callback();
    },
  });
  const bridge = await startScriptedBridgeServer(source, {
    logger: createLogger({ level: 'info', destination }),
    ...options,
  });
  close = bridge.close;
  const accessLines = () => lines.filter((line) => line['msg'] === 'request');
  return { ...bridge, lines, raw, accessLines };
};

const secretPrompt = 'the-secret-prompt-text-4f1c';
const sessionId = '7d0f3b1e-5b7a-4c3e-9d55-0f5e0a9c1e22';

const anthropicBody = (stream: boolean) =>
  JSON.stringify({
    model: 'claude-opus-4-8',
    max_tokens: 100,
    stream,
    system: `system ${secretPrompt}`,
    messages: [{ role: 'user', content: secretPrompt }],
  });

const textTurn: ScriptSource = [
  { type: 'text-delta', text: `answer ${secretPrompt}` },
  { type: 'end', status: 'finished' },
];

describe('the access log', () => {
  it('writes one info line per request, with its fields, and no header, secret or prompt text', async () => {
    const bridge = await start(textTurn, { apiKey: 'bridge-key-secret' });
    const body = anthropicBody(false);
    const response = await fetch(`${bridge.url}/v1/messages?beta=true&key=query-secret`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': 'bridge-key-secret',
        authorization: 'Bearer another-secret',
        'x-claude-code-session-id': sessionId,
      },
      body,
    });
    const text = await response.text();
    await vi.waitFor(() => expect(bridge.accessLines()).toHaveLength(1), { timeout: 30_000, interval: 20 });
    const [line] = bridge.accessLines();
    expect(line).toMatchObject({
      level: 30,
      method: 'POST',
      path: '/v1/messages',
      status: 200,
      protocol: 'anthropic',
      model: 'claude-opus-4-8',
      sessionHash: expect.stringMatching(/^[0-9a-f]{16}$/),
      bytesIn: Buffer.byteLength(body),
      requestId: expect.stringMatching(/^[0-9a-f]{12}$/),
    });
    expect(line?.['durationMs']).toEqual(expect.any(Number));
    // Headers and body of the answer: at least the body's bytes left the socket.
    expect(line?.['bytesOut']).toBeGreaterThan(Buffer.byteLength(text));
    expect(line?.['sessionHash']).not.toBe(sessionId);
    const all = bridge.raw.join('');
    for (const secret of [secretPrompt, 'bridge-key-secret', 'another-secret', 'query-secret', sessionId]) {
      expect(all).not.toContain(secret);
    }
  });

  it('logs a streamed turn once, after the stream ended, with every byte sent', async () => {
    const release = createGate();
    const bridge = await start([
      { type: 'text-delta', text: 'first' },
      { type: 'wait', until: release.opened },
      { type: 'text-delta', text: ' and the rest' },
      { type: 'end', status: 'finished' },
    ]);
    const response = await fetch(`${bridge.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: anthropicBody(true),
    });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let received = '';
    while (!received.includes('first')) received += decoder.decode((await reader.read()).value);
    // The response is open: no access line yet.
    expect(bridge.accessLines()).toHaveLength(0);
    release.open();
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      received += decoder.decode(chunk.value);
    }
    expect(received).toContain('message_stop');
    await vi.waitFor(() => expect(bridge.accessLines()).toHaveLength(1), { timeout: 30_000, interval: 20 });
    const [line] = bridge.accessLines();
    expect(line).toMatchObject({ status: 200, protocol: 'anthropic', model: 'claude-opus-4-8' });
    expect(line).not.toHaveProperty('aborted');
    expect(line?.['bytesOut']).toBeGreaterThan(Buffer.byteLength(received));
  });

  it('marks a response the client abandoned', async () => {
    const bridge = await start([
      { type: 'text-delta', text: 'first' },
      { type: 'wait', until: never },
    ]);
    const abort = new AbortController();
    const response = await fetch(`${bridge.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-5.4', stream: true, messages: [{ role: 'user', content: 'x' }] }),
      signal: abort.signal,
    });
    const reader = response.body!.getReader();
    await reader.read();
    abort.abort();
    await vi.waitFor(() => expect(bridge.accessLines()).toHaveLength(1), { timeout: 30_000, interval: 20 });
    expect(bridge.accessLines()[0]).toMatchObject({
      path: '/v1/chat/completions',
      protocol: 'openai-chat',
      model: 'gpt-5.4',
      status: 200,
      aborted: true,
    });
  });

  it('logs refused, unknown and probe requests too, each in its family', async () => {
    const bridge = await start(textTurn);
    await fetch(`${bridge.url}/v1/responses`, { method: 'POST', body: '{"model":' });
    await fetch(`${bridge.url}/v1/nothing`);
    await fetch(`${bridge.url}/api/hello`, { method: 'HEAD' });
    await fetch(`${bridge.url}/health`);
    await vi.waitFor(() => expect(bridge.accessLines()).toHaveLength(3), { timeout: 30_000, interval: 20 });
    expect(
      bridge.accessLines().map(({ method, path, status, protocol }) => ({ method, path, status, protocol })),
    ).toEqual([
      { method: 'POST', path: '/v1/responses', status: 400, protocol: 'openai-responses' },
      { method: 'GET', path: '/v1/nothing', status: 404, protocol: 'other' },
      { method: 'HEAD', path: '/api/hello', status: 200, protocol: 'other' },
    ]);
  });

  it('logs a healthy /health at debug, below the default level (a load balancer polls it every second)', async () => {
    const lines: Line[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(JSON.parse(chunk.toString()) as Line);
        callback();
      },
    });
    let draining = false;
    const bridge = await startScriptedBridgeServer(textTurn, {
      logger: createLogger({ level: 'debug', destination }),
      draining: () => draining,
    });
    close = bridge.close;
    await fetch(`${bridge.url}/health`);
    draining = true;
    await fetch(`${bridge.url}/health`);
    await vi.waitFor(() => expect(lines.filter((line) => line['msg'] === 'request')).toHaveLength(2), {
      timeout: 30_000,
      interval: 20,
    });
    expect(
      lines.filter((line) => line['msg'] === 'request').map(({ level, status }) => ({ level, status })),
    ).toEqual([
      { level: 20, status: 200 },
      { level: 30, status: 503 },
    ]);
  });

  it("carries the Cursor model and the route of the turn's modelRoute", async () => {
    const lines: Line[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(JSON.parse(chunk.toString()) as Line);
        callback();
      },
    });
    const metrics = new BridgeMetrics();
    const { engine } = createTestEngine(textTurn, { metrics });
    const server = createBridgeServer({
      adapters: {
        anthropic: anthropicAdapter,
        openaiChat: openaiChatAdapter,
        openaiResponses: openaiResponsesAdapter,
      },
      handleTurn: async (request, signal) => {
        const events = await engine.handleTurn(request, signal);
        return Object.assign(events, {
          modelRoute: { requested: request.model, model: 'claude-4.5-sonnet', route: 'think' as const },
        });
      },
      logger: createLogger({ level: 'info', destination }),
      listModels: () => [],
      metrics,
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    close = async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await engine.close();
    };
    const { port } = server.address() as AddressInfo;
    await fetch(`http://127.0.0.1:${port}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: anthropicBody(true),
    }).then((response) => response.text());
    await vi.waitFor(() => expect(lines.filter((line) => line['msg'] === 'request')).toHaveLength(1), {
      timeout: 30_000,
      interval: 20,
    });
    expect(lines.find((line) => line['msg'] === 'request')).toMatchObject({
      model: 'claude-opus-4-8',
      cursorModel: 'claude-4.5-sonnet',
      route: 'think',
    });
  });
});
