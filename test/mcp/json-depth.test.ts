import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { findJsonTextDepthExcess, findValueDepthExcess, MAX_JSON_DEPTH } from '../../lib/json-depth.js';
import { readJsonBody } from '../../mcp/read-json-body.js';
import { WebSocketServerTransport } from '../../mcp/websocket-server-transport.js';

const nested = (levels: number): string => `${'['.repeat(levels)}${']'.repeat(levels)}`;

describe('findJsonTextDepthExcess', () => {
  it('accepts the limit and reports one level more, at the path of the container crossing it', () => {
    expect(findJsonTextDepthExcess(nested(MAX_JSON_DEPTH))).toBeUndefined();
    expect(findJsonTextDepthExcess(nested(MAX_JSON_DEPTH + 1))?.limit).toBe(MAX_JSON_DEPTH);
    expect(findJsonTextDepthExcess('{"a":[1,{"b c":{"d":[]}}]}', 4)).toEqual({ path: 'a.1.b c.d', limit: 4 });
    expect(findJsonTextDepthExcess('{"a":[1,{"b c":{"d":[]}}]}', 5)).toBeUndefined();
  });

  it('ignores brackets and escaped quotes inside strings, and decodes escaped keys', () => {
    expect(findJsonTextDepthExcess('{"a":"[[[[{{{\\"[[","b":["\\\\",["]"]]}', 2)).toEqual({
      path: 'b.1',
      limit: 2,
    });
    expect(findJsonTextDepthExcess('{"k\\u00e9\\"y":[[]]}', 2)).toEqual({ path: 'k\u00e9"y.0', limit: 2 });
  });

  it('elides long paths and long keys', () => {
    const key = 'k'.repeat(100);
    const text = `{"${key}":${nested(200)}}`;
    const { path } = findJsonTextDepthExcess(text) ?? { path: '' };
    expect(path).toBe(`${'k'.repeat(40)}….0.0.0.0.0.0.0.….0.0`);
  });

  it('gives no verdict on unterminated strings (JSON.parse reports them)', () => {
    expect(findJsonTextDepthExcess('{"a":"[[[[[[', 2)).toBeUndefined();
  });
});

describe('findValueDepthExcess', () => {
  it('agrees with the text scanner on parsed values, without recursing', () => {
    for (const text of ['{"a":[1,{"b c":{"d":[]}}]}', '[[],[[]],{"x":{"y":[[]]}}]', '{"a":"[["}']) {
      for (const limit of [1, 2, 3, 4, 5]) {
        expect(findValueDepthExcess(JSON.parse(text), limit)).toEqual(findJsonTextDepthExcess(text, limit));
      }
    }
    let deep: unknown = {};
    for (let level = 0; level < 100_000; level++) deep = [deep];
    expect(findValueDepthExcess(deep)?.path).toMatch(/^0\.0\.0/);
  });

  it('reports a cycle as too deep instead of looping', () => {
    const cycle: Record<string, unknown> = {};
    cycle['self'] = cycle;
    expect(findValueDepthExcess(cycle)?.limit).toBe(MAX_JSON_DEPTH);
  });
});

describe('readJsonBody', () => {
  it('refuses a body nested deeper than the limit as invalid JSON naming the path', async () => {
    const server = createServer((request, response) => {
      void readJsonBody(request, 1 << 20).then((result) => response.end(JSON.stringify(result)));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":${nested(5000)}}}`;
      const answer = (await (await fetch(`http://127.0.0.1:${port}`, { method: 'POST', body })).json()) as {
        ok: boolean;
        error: { reason: string; message: string };
      };
      expect(answer).toMatchObject({ ok: false, error: { reason: 'invalid-json' } });
      expect(answer.error.message).toMatch(/nested deeper than 64 levels.* at params\.arguments\.0\.0/);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('WebSocketServerTransport', () => {
  it('drops a frame nested deeper than the limit (onerror naming the path) and keeps the link', async () => {
    const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise((resolve) => server.once('listening', resolve));
    const errors: string[] = [];
    const messages: unknown[] = [];
    server.on('connection', (socket) => {
      const transport = new WebSocketServerTransport(socket);
      transport.onerror = (error) => errors.push(error.message);
      transport.onmessage = (message) => messages.push(message);
      void transport.start();
    });
    const { port } = server.address() as AddressInfo;
    const client = new WebSocket(`ws://127.0.0.1:${port}`, 'mcp');
    try {
      await new Promise((resolve) => client.once('open', resolve));
      client.send(`{"jsonrpc":"2.0","id":1,"result":{"content":${nested(5000)}}}`);
      client.send('{"jsonrpc":"2.0","id":2,"result":{}}');
      await expect.poll(() => messages.length, { timeout: 30_000 }).toBe(1);
      expect(messages[0]).toMatchObject({ id: 2 });
      expect(errors).toEqual([
        expect.stringMatching(/nested deeper than 64 levels.* at result\.content\.0\.0/),
      ]);
    } finally {
      client.terminate();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
