import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { WebSocket } from 'ws';
import {
  connectAgent,
  connectToolHost,
  PNG_1X1,
  startMcpHost,
  testToken,
  until,
} from '../helpers/mcp/tool-host-fixture.js';
import type { RunningMcpHost, TestToolHost } from '../helpers/mcp/tool-host-fixture.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

async function host(options: Parameters<typeof startMcpHost>[0] = {}): Promise<RunningMcpHost> {
  const running = await startMcpHost(options);
  cleanups.push(() => running.close());
  return running;
}

async function toolHost(
  running: RunningMcpHost,
  options: Parameters<typeof connectToolHost>[1] = {},
): Promise<TestToolHost> {
  const attached = await connectToolHost(running.url, options);
  cleanups.push(() => attached.close());
  return attached;
}

async function agent(running: RunningMcpHost): Promise<Client> {
  const client = await connectAgent(running.url);
  cleanups.push(() => client.close());
  return client;
}

const toolsOf = (running: RunningMcpHost): string[] => running.server.aggregator.toolNames();

describe('mcp-host: agents call tools of an official-SDK host over the WebSocket link', () => {
  it('lists the host tools as one custom-user-tools server, schemas and annotations intact', async () => {
    const running = await host();
    await toolHost(running);
    await until(() => toolsOf(running).length === 5);
    const client = await agent(running);

    expect(client.getServerVersion()?.name).toBe('custom-user-tools');
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['echo', 'fail', 'weather', 'snapshot', 'hold']);
    const weather = tools.find((tool) => tool.name === 'weather');
    expect(weather).toMatchObject({
      title: 'Weather',
      description: 'Structured weather.',
      inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      outputSchema: { type: 'object', properties: { city: { type: 'string' }, celsius: { type: 'number' } } },
      annotations: { readOnlyHint: true },
    });
  });

  it('passes text, isError, structuredContent and image results through unchanged', async () => {
    const running = await host();
    const tools = await toolHost(running);
    await until(() => toolsOf(running).length === 5);
    const client = await agent(running);

    expect(await client.callTool({ name: 'echo', arguments: { text: 'hi' } })).toEqual({
      content: [{ type: 'text', text: 'echo: hi' }],
    });
    expect(await client.callTool({ name: 'fail', arguments: {} })).toEqual({
      content: [{ type: 'text', text: 'the tool failed on purpose' }],
      isError: true,
    });
    expect(await client.callTool({ name: 'weather', arguments: { city: 'Oslo' } })).toEqual({
      content: [{ type: 'text', text: '{"city":"Oslo","celsius":21.5}' }],
      structuredContent: { city: 'Oslo', celsius: 21.5 },
    });
    expect(await client.callTool({ name: 'snapshot', arguments: {} })).toEqual({
      content: [
        { type: 'image', data: PNG_1X1, mimeType: 'image/png' },
        { type: 'text', text: '1x1 pixel' },
      ],
    });
    expect(Object.fromEntries(tools.executions)).toEqual({ echo: 1, fail: 1, weather: 1, snapshot: 1 });
  });

  it('answers an unknown tool with an isError result naming the available ones', async () => {
    const running = await host();
    await toolHost(running, { tools: { names: ['only'] } });
    await until(() => toolsOf(running).length === 1);
    const client = await agent(running);

    expect(await client.callTool({ name: 'nope', arguments: {} })).toEqual({
      content: [{ type: 'text', text: 'Unknown tool "nope". Available tools: only.' }],
      isError: true,
    });
  });
});

describe('mcp-host: calls', () => {
  it('reports a JSON-RPC error of a low-level host as an isError result naming the tool', async () => {
    const running = await host();
    const lowLevel = new Server({ name: 'low-level', version: '0' }, { capabilities: { tools: {} } });
    lowLevel.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [{ name: 'burn', inputSchema: { type: 'object' as const, properties: {} } }],
    }));
    lowLevel.setRequestHandler(CallToolRequestSchema, () => {
      throw new McpError(ErrorCode.InternalError, 'disk on fire');
    });
    await lowLevel.connect(
      new WebSocketClientTransport(new URL(`ws://127.0.0.1:${running.port}/host?token=${testToken}`)),
    );
    cleanups.push(() => lowLevel.close());
    await until(() => toolsOf(running).length === 1);
    const client = await agent(running);

    expect(await client.callTool({ name: 'burn', arguments: {} })).toEqual({
      content: [
        {
          type: 'text',
          text: 'Tool call "burn" failed at the tool host: disk on fire (JSON-RPC error -32603)',
        },
      ],
      isError: true,
    });
  });

  it('settles a call the host never answers at the deadline, naming the tool and the deadline', async () => {
    const running = await host({ callDeadlineMs: 300 });
    const tools = await toolHost(running);
    await until(() => toolsOf(running).length === 5);
    const client = await agent(running);

    const result = await client.callTool({ name: 'hold', arguments: {} });

    expect(result).toEqual({
      content: [
        {
          type: 'text',
          text: 'Tool call "hold" timed out after 300 ms without a result from the tool host.',
        },
      ],
      isError: true,
    });
    // The host is told to stop.
    await until(() => tools.held[0]?.signal.aborted === true);
    expect(running.server.aggregator.broker.pending()).toEqual([]);
  });

  it("sends the agent's cancellation to the host, which sees its request aborted", async () => {
    const running = await host();
    const tools = await toolHost(running);
    await until(() => toolsOf(running).length === 5);
    const client = await agent(running);
    const controller = new AbortController();

    const call = client.callTool({ name: 'hold', arguments: { tag: 'c1' } }, undefined, {
      signal: controller.signal,
    });
    await until(() => tools.held.length === 1);
    controller.abort('the user pressed Esc');

    await expect(call).rejects.toThrow();
    await until(() => tools.held[0]?.signal.aborted === true);
    await until(() => running.server.aggregator.broker.pending().length === 0);
    expect(tools.executions.get('hold')).toBe(1);
  });

  it('settles every call of a host that disconnects mid-call, and drops its tools', async () => {
    const running = await host();
    const tools = await toolHost(running);
    await until(() => toolsOf(running).length === 5);
    const client = await agent(running);

    const calls = [
      client.callTool({ name: 'hold', arguments: { tag: 'a' } }),
      client.callTool({ name: 'hold', arguments: { tag: 'b' } }),
    ];
    await until(() => tools.held.length === 2);
    await tools.close();

    for (const result of await Promise.all(calls)) {
      expect(result).toEqual({
        content: [
          { type: 'text', text: 'Tool call "hold" failed: tool host disconnected before answering.' },
        ],
        isError: true,
      });
    }
    await until(() => toolsOf(running).length === 0);
    expect((await client.listTools()).tools).toEqual([]);
  });

  it('cancels the parked calls of an agent that goes away', async () => {
    const running = await host();
    const tools = await toolHost(running);
    await until(() => toolsOf(running).length === 5);
    const client = await connectAgent(running.url);

    void client.callTool({ name: 'hold', arguments: {} }).catch(() => {});
    await until(() => tools.held.length === 1);
    // DELETE the session, as a closing agent does.
    await (client.transport as StreamableHTTPClientTransport).terminateSession();
    await client.close();

    await until(() => tools.held[0]?.signal.aborted === true);
    expect(running.server.aggregator.broker.pending()).toEqual([]);
  });

  it('cancels a call whose POST stream broke (no DELETE): its answer could never be delivered', async () => {
    const running = await host();
    const tools = await toolHost(running);
    await until(() => toolsOf(running).length === 5);
    const client = await agent(running);
    const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId ?? '';
    const controller = new AbortController();

    const post = fetch(`${running.url}/mcp`, {
      method: 'POST',
      signal: controller.signal,
      headers: {
        authorization: `Bearer ${testToken}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sessionId,
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'dropped-1',
        method: 'tools/call',
        params: { name: 'hold', arguments: {} },
      }),
    });
    await until(() => tools.held.length === 1);
    controller.abort();
    await expect(post.then((response) => response.text())).rejects.toThrow();

    await until(() => tools.held[0]?.signal.aborted === true);
    expect(running.server.aggregator.broker.pending()).toEqual([]);
    // The session itself lives on.
    expect((await client.listTools()).tools).toHaveLength(5);
  });

  it('sends notifications/progress while parked to an agent that sent a progress token', async () => {
    const running = await host({ progressIntervalMs: 50 });
    const tools = await toolHost(running);
    await until(() => toolsOf(running).length === 5);
    const client = await agent(running);
    const progress: number[] = [];

    const call = client.callTool({ name: 'hold', arguments: {} }, undefined, {
      onprogress: (event) => progress.push(event.progress),
    });
    await until(() => progress.length >= 2);
    tools.held[0]?.answer({ content: [{ type: 'text', text: 'done' }] });

    expect(await call).toEqual({ content: [{ type: 'text', text: 'done' }] });
    expect(progress.slice(0, 2)).toEqual([1, 2]);
  });

  it("relays the host's own progress reports to the agent, in one increasing sequence", async () => {
    const running = await host({ progressIntervalMs: 0 });
    const reporter = new McpServer({ name: 'reporter', version: '0' });
    reporter.registerTool('long_job', { description: 'Reports progress.' }, async (extra) => {
      const progressToken = extra._meta?.progressToken;
      if (progressToken === undefined) return { content: [{ type: 'text', text: 'no token' }] };
      for (const [progress, message] of [
        [1, 'copying'],
        [2, 'indexing'],
      ] as const) {
        await extra.sendNotification({
          method: 'notifications/progress',
          params: { progressToken, progress, total: 2, message },
        });
      }
      return { content: [{ type: 'text', text: 'job done' }] };
    });
    await reporter.connect(
      new WebSocketClientTransport(new URL(`ws://127.0.0.1:${running.port}/host?token=${testToken}`)),
    );
    cleanups.push(() => reporter.close());
    await until(() => toolsOf(running).length === 1);
    const client = await agent(running);
    const events: Array<{ progress: number; message?: string }> = [];

    const result = await client.callTool({ name: 'long_job', arguments: {} }, undefined, {
      onprogress: ({ progress, message }) =>
        events.push({ progress, ...(message === undefined ? {} : { message }) }),
    });

    expect(result).toEqual({ content: [{ type: 'text', text: 'job done' }] });
    expect(events).toEqual([
      { progress: 1, message: 'copying (1/2)' },
      { progress: 2, message: 'indexing (2/2)' },
    ]);
  });

  it('executes a call once when the agent re-sends the same request, and answers both', async () => {
    const running = await host();
    const tools = await toolHost(running);
    await until(() => toolsOf(running).length === 5);
    const client = await agent(running);
    const transport = client.transport as { sessionId?: string };
    const post = (): Promise<Response> =>
      fetch(`${running.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${testToken}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': transport.sessionId ?? '',
          'mcp-protocol-version': '2025-06-18',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 'retried-1',
          method: 'tools/call',
          params: { name: 'hold', arguments: { tag: 'retry' } },
        }),
      });

    const first = post();
    await until(() => tools.held.length === 1);
    const second = post();
    await until(() => running.server.aggregator.snapshot().hosts[0]?.calls === 1);
    tools.held[0]?.answer({ content: [{ type: 'text', text: 'ran once' }] });

    for (const response of await Promise.all([first, second])) {
      expect(response.status).toBe(200);
      expect(await response.text()).toContain('ran once');
    }
    expect(tools.executions.get('hold')).toBe(1);
    expect(tools.held).toHaveLength(1);
  });
});

describe('mcp-host: several hosts', () => {
  it('aggregates two hosts and refuses a name one already owns, telling the second host', async () => {
    const running = await host();
    const first = await toolHost(running, { name: 'first', tools: { names: ['alpha', 'shared'] } });
    await until(() => toolsOf(running).length === 2);
    const second = await toolHost(running, { name: 'second', tools: { names: ['beta', 'shared'] } });
    await until(() => toolsOf(running).length === 3);
    const client = await agent(running);

    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['alpha', 'shared', 'beta']);
    expect(await client.callTool({ name: 'shared', arguments: { text: 'x' } })).toEqual({
      content: [{ type: 'text', text: 'first:shared:x' }],
    });
    expect(await client.callTool({ name: 'beta', arguments: { text: 'y' } })).toEqual({
      content: [{ type: 'text', text: 'second:beta:y' }],
    });
    await until(() => second.refusals.length === 1);
    expect(second.refusals[0]).toEqual({
      tools: [
        {
          name: 'shared',
          owner: 'host-1',
          reason:
            'Tool name "shared" is already served by another tool host (host-1); this host\'s "shared" is not exposed.',
        },
      ],
    });
    expect(first.refusals).toEqual([]);
    expect(second.executions.get('shared')).toBeUndefined();
    expect(running.server.health()).toMatchObject({
      hosts: [
        { id: 'host-1', name: 'first', tools: ['alpha', 'shared'], refused: [] },
        { id: 'host-2', name: 'second', tools: ['beta'], refused: [{ name: 'shared', owner: 'host-1' }] },
      ],
    });

    // The owner leaves: the second host takes the name over, and is told it is no longer refused.
    await first.close();
    await until(() => toolsOf(running).join() === 'beta,shared');
    expect(await client.callTool({ name: 'shared', arguments: { text: 'z' } })).toEqual({
      content: [{ type: 'text', text: 'second:shared:z' }],
    });
    await until(() => second.refusals.length === 2);
    expect(second.refusals[1]).toEqual({ tools: [] });
  });

  it('sends tools/list_changed to every agent session on attach, change and detach', async () => {
    const running = await host();
    const agents = [await agent(running), await agent(running)];
    const changes = [0, 0];
    agents.forEach((client, index) =>
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        changes[index] = (changes[index] ?? 0) + 1;
      }),
    );

    const tools = await toolHost(running);
    await until(() => changes.every((count) => count === 1));
    expect((await agents[0]?.listTools())?.tools).toHaveLength(5);

    const extra = tools.mcp.registerTool('late', { description: 'Added later.' }, () => ({ content: [] }));
    await until(() => changes.every((count) => count === 2));
    expect((await agents[1]?.listTools())?.tools.map((tool) => tool.name)).toContain('late');
    extra.remove();
    await until(() => changes.every((count) => count === 3));

    await tools.close();
    await until(() => changes.every((count) => count === 4));
    expect((await agents[0]?.listTools())?.tools).toEqual([]);
  });
});

describe('mcp-host: HTTP rules', () => {
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
  };
  const post = (url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(`${url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${testToken}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...headers,
      },
      body: JSON.stringify(body),
    });

  it('answers 400 to a request without a session id that is not initialize, 404 to an unknown session id', async () => {
    const running = await host();
    const listTools = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} };

    const missing = await post(running.url, listTools);
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });

    const unknown = await post(running.url, listTools, { 'mcp-session-id': 'no-such-session' });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({
      jsonrpc: '2.0',
      error: { code: -32001, message: 'Session not found' },
      id: null,
    });

    const started = await post(running.url, initialize);
    expect(started.status).toBe(200);
    const sessionId = started.headers.get('mcp-session-id');
    expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
    // The session ends with DELETE; its id is unknown afterwards.
    const deleted = await fetch(`${running.url}/mcp`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${testToken}`, 'mcp-session-id': sessionId ?? '' },
    });
    expect(deleted.status).toBe(200);
    expect((await post(running.url, listTools, { 'mcp-session-id': sessionId ?? '' })).status).toBe(404);
  });

  it('answers 401 on /mcp without a token and with a wrong one', async () => {
    const running = await host();
    const without = await fetch(`${running.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(initialize),
    });
    expect(without.status).toBe(401);
    expect(without.headers.get('www-authenticate')).toBe('Bearer');
    expect((await post(running.url, initialize, { authorization: 'Bearer wrong-token' })).status).toBe(401);
    await expect(connectAgent(running.url, 'wrong-token')).rejects.toThrow();
    expect(running.server.health()).toMatchObject({ sessions: 0 });
  });

  it('answers 401 on /host without a token and with a wrong one', async () => {
    const running = await host();
    const status = (url: string, headers: Record<string, string> = {}): Promise<number> =>
      new Promise((resolve, reject) => {
        const socket = new WebSocket(url, 'mcp', { headers });
        socket.on('unexpected-response', (_request, response) => {
          resolve(response.statusCode ?? 0);
          socket.terminate();
        });
        socket.on('open', () => {
          socket.close();
          resolve(101);
        });
        socket.on('error', reject);
      });
    const wsUrl = `${running.url.replace('http', 'ws')}/host`;

    expect(await status(wsUrl)).toBe(401);
    expect(await status(`${wsUrl}?token=wrong-token`)).toBe(401);
    expect(await status(wsUrl, { authorization: 'Bearer wrong-token' })).toBe(401);
    expect(await status(wsUrl, { authorization: `Bearer ${testToken}` })).toBe(101);
    await expect(connectToolHost(running.url, { token: 'wrong-token' })).rejects.toThrow();
    expect(running.server.health()).toMatchObject({ hosts: [] });
  });

  it('refuses requests whose Host or Origin is not the bound address (DNS rebinding)', async () => {
    const running = await host();
    const rebound = await post(running.url, initialize, { origin: 'http://evil.example' });
    expect(rebound.status).toBe(403);
    const wrongHost = await new Promise<number>((resolve, reject) => {
      const socket = new WebSocket(`${running.url.replace('http', 'ws')}/host?token=${testToken}`, 'mcp', {
        headers: { host: `evil.example:${running.port}` },
      });
      socket.on('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
      socket.on('open', () => resolve(101));
      socket.on('error', reject);
    });
    expect(wrongHost).toBe(403);
    expect((await post(running.url, initialize, { origin: running.url })).status).toBe(200);
  });

  it('accepts configured allowedHosts names, with the bound port and without one (a proxy on 443)', async () => {
    const running = await host({ allowedHosts: ['tools.internal'] });
    const statusWithHost = (hostHeader: string): Promise<number> =>
      new Promise((resolve, reject) => {
        const body = JSON.stringify(initialize);
        const request = httpRequest(
          {
            host: '127.0.0.1',
            port: running.port,
            path: '/mcp',
            method: 'POST',
            headers: {
              host: hostHeader,
              authorization: `Bearer ${testToken}`,
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
              'content-length': Buffer.byteLength(body),
            },
          },
          (response) => {
            response.resume();
            resolve(response.statusCode ?? 0);
          },
        );
        request.on('error', reject);
        request.end(body);
      });

    expect(await statusWithHost('tools.internal')).toBe(200);
    expect(await statusWithHost(`tools.internal:${running.port}`)).toBe(200);
    expect(await statusWithHost(`localhost:${running.port}`)).toBe(200);
    expect(await statusWithHost('evil.example')).toBe(403);
    expect(await statusWithHost(`127.0.0.1:${running.port + 1}`)).toBe(403);
  });

  it('refuses tool hosts beyond maxHosts with 503', async () => {
    const running = await host({ maxHosts: 1 });
    await toolHost(running, { tools: { names: ['one'] } });
    await until(() => toolsOf(running).length === 1);

    await expect(connectToolHost(running.url, { tools: { names: ['two'] } })).rejects.toThrow();
    expect(toolsOf(running)).toEqual(['one']);
  });

  it('reports hosts, tools and parked calls on /health, in full only with the token', async () => {
    const running = await host();
    const tools = await toolHost(running);
    await until(() => toolsOf(running).length === 5);
    const client = await agent(running);
    void client.callTool({ name: 'hold', arguments: {} }).catch(() => {});
    await until(() => tools.held.length === 1);

    const open = await (await fetch(`${running.url}/health`)).json();
    expect(open).toEqual({ status: 'ok', hosts: 1, tools: 5, parkedCalls: 1 });
    const full = await (
      await fetch(`${running.url}/health`, { headers: { authorization: `Bearer ${testToken}` } })
    ).json();
    expect(full).toMatchObject({
      status: 'ok',
      hosts: [{ id: 'host-1', name: 'test-host', version: '1.2.3', calls: 1 }],
      tools: ['echo', 'fail', 'weather', 'snapshot', 'hold'],
      parkedCalls: 1,
      agents: 1,
      sessions: 1,
    });
  });

  it('on close, settles parked calls with an isError result before closing the sessions', async () => {
    const running = await startMcpHost();
    const tools = await connectToolHost(running.url);
    await until(() => toolsOf(running).length === 5);
    const client = await connectAgent(running.url);
    cleanups.push(() => client.close());

    const call = client.callTool({ name: 'hold', arguments: {} });
    await until(() => tools.held.length === 1);
    await running.close();

    expect(await call).toEqual({
      content: [
        {
          type: 'text',
          text: 'Tool call "hold" was abandoned before the tool host answered: mcp-host is shutting down.',
        },
      ],
      isError: true,
    });
    await tools.closed;
  });
});
