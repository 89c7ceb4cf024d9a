import { afterEach, describe, expect, it, vi } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { createCustomUserToolsServer } from '../../mcp/custom-user-tools-server.js';
import { CUSTOM_USER_TOOLS_SERVER_NAME } from '../../mcp/server-name.js';
import { ParkedCallBroker } from '../../mcp/parked-call-broker.js';
import { createTextResult } from '../../mcp/tool-call-result.js';
import type { ToolCallResult } from '../../mcp/tool-call-result.js';
import { createMcpFixture, hostTools, until } from '../helpers/mcp/mcp-fixture.js';
import type { McpFixture } from '../helpers/mcp/mcp-fixture.js';

const PNG_1X1 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

let fixture: McpFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

async function setup(options: Parameters<typeof createMcpFixture>[0] = {}): Promise<McpFixture> {
  fixture = await createMcpFixture(options);
  return fixture;
}

describe('custom-user-tools server: mirroring', () => {
  it('is named custom-user-tools and lists the host tools with names, descriptions and schemas', async () => {
    const { client } = await setup();
    expect(client.client.getServerVersion()?.name).toBe(CUSTOM_USER_TOOLS_SERVER_NAME);
    expect(client.client.getServerCapabilities()?.tools).toEqual({ listChanged: true });
    expect(await client.listTools()).toEqual([
      {
        name: 'Read',
        description: 'Read a file from the local filesystem.',
        inputSchema: {
          $schema: 'http://json-schema.org/draft-07/schema#',
          type: 'object',
          properties: { file_path: { type: 'string' }, limit: { type: 'number' } },
          required: ['file_path'],
          additionalProperties: false,
        },
        annotations: { readOnlyHint: true },
      },
      {
        name: 'Bash',
        description: 'Run a shell command.',
        inputSchema: { type: 'object', properties: { command: { type: 'string' } } },
      },
      { name: 'Screenshot', inputSchema: { type: 'object', properties: {} } },
    ]);
  });

  it('setTools replaces the set and sends tools/list_changed only when it changed', async () => {
    const { client, host } = await setup();
    let notifications = 0;
    client.onToolListChanged(() => (notifications += 1));

    expect(host.setTools([...hostTools])).toBe(false);
    expect(host.setTools([{ name: 'Grep', description: 'Search', inputSchema: { type: 'object' } }])).toBe(
      true,
    );
    await until(() => notifications === 1);
    expect((await client.listTools()).map((tool) => [tool.name, tool.description])).toEqual([
      ['Grep', 'Search'],
    ]);
    expect(host.tools().map((tool) => tool.name)).toEqual(['Grep']);

    expect(
      host.setTools([{ name: 'Grep', description: 'Search files', inputSchema: { type: 'object' } }]),
    ).toBe(true);
    await until(() => notifications === 2);
    expect(
      host.setTools([{ name: 'Grep', description: 'Search files', inputSchema: { type: 'object' } }]),
    ).toBe(false);
    await new Promise((resolve) => setImmediate(resolve));
    expect(notifications).toBe(2);
  });

  it('setTools on a server that is not connected still replaces the set', async () => {
    const host = createCustomUserToolsServer({ tools: hostTools, broker: new ParkedCallBroker() });
    expect(host.setTools([{ name: 'Only' }])).toBe(true);
    expect(host.tools()).toEqual([{ name: 'Only', inputSchema: { type: 'object', properties: {} } }]);
    await host.close();
  });
});

describe('custom-user-tools server: parked calls', () => {
  it('parks a call under the SDK toolCallId and returns the result the bridge resolves it with', async () => {
    const { client, broker, announced } = await setup();
    const pending = client.callTool('Read', { file_path: '/etc/hosts' }, 'toolu_01');
    await until(() => announced.length === 1);
    expect(announced[0]).toMatchObject({
      toolCallId: 'toolu_01',
      toolName: 'Read',
      args: { file_path: '/etc/hosts' },
    });
    expect(broker.pending()).toEqual(['toolu_01']);
    broker.resolve('toolu_01', createTextResult('127.0.0.1 localhost'));
    expect(await pending).toEqual(createTextResult('127.0.0.1 localhost'));
    expect(broker.pending()).toEqual([]);
  });

  it('passes arguments through without validating them against the schema', async () => {
    const { client, broker, announced } = await setup();
    const args = { file_path: 42, extra: { nested: [1, 'two'] } };
    const pending = client.callTool('Read', args, 'toolu_raw');
    await until(() => announced.length === 1);
    expect(announced[0]?.args).toEqual(args);
    broker.resolve('toolu_raw', createTextResult('ok'));
    expect(await pending).toEqual(createTextResult('ok'));
  });

  it('a duplicate execute with the same id attaches: one parked notification, both get the same result', async () => {
    const { client, broker, announced } = await setup();
    const first = client.callTool('Bash', { command: 'ls' }, 'toolu_dup');
    await until(() => announced.length === 1);
    const retry = client.callTool('Bash', { command: 'ls' }, 'toolu_dup');
    await new Promise((resolve) => setImmediate(resolve));
    expect(announced).toHaveLength(1);
    broker.resolve('toolu_dup', createTextResult('a\nb'));
    expect(await first).toEqual(createTextResult('a\nb'));
    expect(await retry).toEqual(createTextResult('a\nb'));
    // A retry arriving after settlement gets the settled result at once.
    expect(await client.callTool('Bash', { command: 'ls' }, 'toolu_dup')).toEqual(createTextResult('a\nb'));
    expect(announced).toHaveLength(1);
  });

  it('a retry attaches to its parked call even after the tool list changed', async () => {
    const { client, broker, host, announced } = await setup();
    const first = client.callTool('Bash', { command: 'pwd' }, 'toolu_moved');
    await until(() => announced.length === 1);
    host.setTools([{ name: 'Other' }]);
    const retry = client.callTool('Bash', { command: 'pwd' }, 'toolu_moved');
    broker.resolve('toolu_moved', createTextResult('/home'));
    expect(await retry).toEqual(createTextResult('/home'));
    expect(await first).toEqual(createTextResult('/home'));
  });

  it('settleAll on cancel settles every pending call with an isError result, through the client', async () => {
    const { client, broker, announced } = await setup();
    const calls = ['a', 'b', 'c'].map((id) => client.callTool('Bash', { command: id }, `toolu_${id}`));
    await until(() => announced.length === 3);
    expect(broker.settleAll('the client cancelled the turn')).toEqual(['toolu_a', 'toolu_b', 'toolu_c']);
    for (const result of await Promise.all(calls)) {
      expect(result).toEqual({
        content: [
          {
            type: 'text',
            text: 'Tool call "Bash" was abandoned before the tool host answered: the client cancelled the turn.',
          },
        ],
        isError: true,
      });
    }
  });

  it('broker shutdown settles pending calls and answers later calls with isError at once', async () => {
    const { client, broker, announced } = await setup();
    const pending = client.callTool('Read', { file_path: '/a' }, 'toolu_shutdown');
    await until(() => announced.length === 1);
    broker.close('the bridge is shutting down');
    expect((await pending).isError).toBe(true);
    const late = await client.callTool('Read', { file_path: '/b' }, 'toolu_late');
    expect(late.isError).toBe(true);
    expect(announced).toHaveLength(1);
  });

  it('a broker deadline reaches the client as an isError result', async () => {
    const { client } = await setup({ server: { broker: new ParkedCallBroker({ deadlineMs: 20 }) } });
    const result = await client.callTool('Bash', { command: 'sleep' }, 'toolu_deadline');
    expect(result.isError).toBe(true);
    expect(result.content[0]).toMatchObject({ text: expect.stringContaining('timed out after 20 ms') });
  });

  it('passes images, isError and structuredContent through', async () => {
    const { client, broker, announced } = await setup();
    const image: ToolCallResult = {
      content: [
        { type: 'text', text: 'screenshot:' },
        { type: 'image', data: PNG_1X1, mimeType: 'image/png' },
      ],
      structuredContent: { width: 1, height: 1 },
    };
    const failure: ToolCallResult = { content: [{ type: 'text', text: 'command not found' }], isError: true };
    const shot = client.callTool('Screenshot', {}, 'toolu_img');
    const bash = client.callTool('Bash', { command: 'nope' }, 'toolu_err');
    await until(() => announced.length === 2);
    broker.resolve('toolu_img', image);
    broker.resolve('toolu_err', failure);
    expect(await shot).toEqual(image);
    expect(await bash).toEqual(failure);
  });

  it('a result MCP cannot carry becomes an isError result instead of a protocol error', async () => {
    const { client, broker, announced } = await setup();
    const pending = client.callTool('Screenshot', {}, 'toolu_badimg');
    await until(() => announced.length === 1);
    broker.resolve('toolu_badimg', {
      content: [{ type: 'image', data: '***not base64***', mimeType: 'image/png' }],
    });
    const result = await pending;
    expect(result.isError).toBe(true);
    expect(result.content[0]).toMatchObject({ text: expect.stringContaining('Invalid Base64') });
  });

  it('an unknown tool name gets an isError result naming the available tools, and is not parked', async () => {
    const { client, broker, announced } = await setup();
    const result = await client.callTool('Write', { file_path: '/x' }, 'toolu_unknown');
    expect(result).toEqual({
      content: [{ type: 'text', text: 'Unknown tool "Write". Available tools: Read, Bash, Screenshot.' }],
      isError: true,
    });
    expect(announced).toHaveLength(0);
    expect(broker.status('toolu_unknown')).toBe('unknown');
  });

  it('20 parallel calls each resolve to their own result, whatever order they are settled in', async () => {
    const { client, broker, announced } = await setup();
    const ids = Array.from({ length: 20 }, (_, index) => `toolu_${index}`);
    const calls = ids.map((id, index) => client.callTool('Bash', { command: `echo ${index}` }, id));
    await until(() => announced.length === 20);
    expect(announced.map((call) => call.toolCallId)).toEqual(ids);
    for (const call of [...announced].reverse()) {
      broker.resolve(call.toolCallId, createTextResult(`out of ${String(call.args.command)}`));
    }
    const results = await Promise.all(calls);
    results.forEach((result, index) => expect(result).toEqual(createTextResult(`out of echo ${index}`)));
    expect(broker.pending()).toEqual([]);
  });
});

describe('custom-user-tools server: peers without a toolCallId (standalone host)', () => {
  async function connectPlainClient(host: ReturnType<typeof createCustomUserToolsServer>): Promise<Client> {
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    await host.server.connect(serverTransport);
    const client = new Client({ name: 'other-agent', version: '1.0.0' });
    await client.connect(clientTransport);
    return client;
  }

  it('generates an id for a call without one', async () => {
    const broker = new ParkedCallBroker();
    let counter = 0;
    const host = createCustomUserToolsServer({
      tools: hostTools,
      broker,
      generateToolCallId: () => `gen-${(counter += 1)}`,
    });
    const client = await connectPlainClient(host);
    const ids: string[] = [];
    broker.onParked((call) => ids.push(call.toolCallId));
    const first = client.callTool({ name: 'Bash', arguments: { command: 'a' } });
    const second = client.callTool({ name: 'Bash', arguments: { command: 'a' } });
    await until(() => ids.length === 2);
    expect(ids).toEqual(['gen-1', 'gen-2']);
    broker.resolve('gen-2', createTextResult('two'));
    broker.resolve('gen-1', createTextResult('one'));
    expect(await first).toMatchObject(createTextResult('one'));
    expect(await second).toMatchObject(createTextResult('two'));
    await client.close();
    await host.close();
  });

  it('the default generated id is unique and usable as a tool_use id', async () => {
    const broker = new ParkedCallBroker();
    const host = createCustomUserToolsServer({ tools: hostTools, broker });
    const client = await connectPlainClient(host);
    const ids: string[] = [];
    broker.onParked((call) => ids.push(call.toolCallId));
    const calls = [1, 2].map(() => client.callTool({ name: 'Bash', arguments: {} }));
    await until(() => ids.length === 2);
    expect(ids[0]).toMatch(/^mcp-call-[0-9a-f-]{36}$/);
    expect(ids[1]).not.toBe(ids[0]);
    broker.settleAll('done');
    await Promise.all(calls);
    await client.close();
    await host.close();
  });

  it('a peer cancelling its request settles the generated-id call so it cannot leak', async () => {
    const broker = new ParkedCallBroker();
    const host = createCustomUserToolsServer({ tools: hostTools, broker });
    const client = await connectPlainClient(host);
    const controller = new AbortController();
    const call = client.callTool({ name: 'Bash', arguments: {} }, CallToolResultSchema, {
      signal: controller.signal,
    });
    await until(() => broker.pending().length === 1);
    controller.abort('user pressed escape');
    await expect(call).rejects.toThrow();
    await until(() => broker.pending().length === 0);
    await client.close();
    await host.close();
  });

  it('a closing server settles generated-id calls but leaves SDK-id calls to the broker owner', async () => {
    const { broker, host, client, announced } = await setup();
    const plain = await (async () => {
      const second = createCustomUserToolsServer({ tools: hostTools, broker });
      const peer = await connectPlainClient(second);
      return { second, peer };
    })();
    const generated = plain.peer.callTool({ name: 'Bash', arguments: {} }).catch((error: unknown) => error);
    const sdk = client.callTool('Bash', {}, 'toolu_kept');
    await until(() => announced.length === 2);
    await plain.second.close();
    expect(await generated).toMatchObject({ message: expect.stringMatching(/closed/i) });
    expect(broker.pending()).toEqual(['toolu_kept']);
    broker.resolve('toolu_kept', createTextResult('still here'));
    expect(await sdk).toEqual(createTextResult('still here'));
    await host.close();
  });

  it('keeps a peer that asked for progress alive with progress notifications', async () => {
    const broker = new ParkedCallBroker();
    const host = createCustomUserToolsServer({ tools: hostTools, broker, progressIntervalMs: 10 });
    const client = await connectPlainClient(host);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    try {
      const progress: number[] = [];
      const call = client.callTool({ name: 'Bash', arguments: {} }, CallToolResultSchema, {
        onprogress: (update) => progress.push(update.progress),
        resetTimeoutOnProgress: true,
        timeout: 50,
      });
      // Without the heartbeat the 50 ms request timeout would reject the call long before 500 ms.
      await vi.advanceTimersByTimeAsync(500);
      expect(progress).toEqual(Array.from({ length: 50 }, (_, index) => index + 1));
      const [id] = broker.pending();
      broker.resolve(id ?? '', createTextResult('late but fine'));
      expect(await call).toMatchObject(createTextResult('late but fine'));
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
    await client.close();
    await host.close();
  });

  it('sends no progress when the peer did not ask for it', async () => {
    const broker = new ParkedCallBroker();
    const host = createCustomUserToolsServer({ tools: hostTools, broker, progressIntervalMs: 10 });
    const client = await connectPlainClient(host);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    try {
      const call = client.callTool({ name: 'Bash', arguments: {} }, CallToolResultSchema, { timeout: 50 });
      const outcome = call.catch((error: unknown) => error);
      await vi.advanceTimersByTimeAsync(60);
      expect(await outcome).toMatchObject({ message: expect.stringMatching(/timed out/i) });
    } finally {
      vi.useRealTimers();
    }
    await client.close();
    await host.close();
  });
});
