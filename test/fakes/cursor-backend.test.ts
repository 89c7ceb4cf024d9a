import { existsSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { InteractionUpdate, SDKCustomTool, SDKMessage } from '@cursor/sdk';

import type { FakeToolResult, JsonObject } from './cursor-backend/index.js';
import { DEFAULT_FAKE_MODELS, fakeShellArgs, startSdkTestEnv } from './cursor-backend/index.js';
import type { SdkTestEnv } from './cursor-backend/index.js';

/** One line per onDelta update, compact enough to compare whole sequences. */
const describeUpdate = (update: InteractionUpdate): string => {
  switch (update.type) {
    case 'text-delta':
    case 'thinking-delta':
      return `${update.type}:${update.text}`;
    case 'tool-call-started':
    case 'tool-call-completed':
      return `${update.type}:${update.callId}`;
    case 'tool-requests-listed':
      return `${update.type}:${update.callCount}`;
    case 'step-started':
    case 'step-completed':
      return `${update.type}:${update.stepId}`;
    default:
      return update.type;
  }
};

/**
 * One line per tool-batch message the fake sent (proto3 JSON), in wire order: the calls' starts, execs and
 * the batch listing; everything else is left out.
 */
const describeSent = (message: JsonObject): string[] => {
  const update = message.interactionUpdate as Record<string, JsonObject> | undefined;
  if (update?.toolCallStarted !== undefined) return [`started:${String(update.toolCallStarted.callId)}`];
  if (update?.toolRequestsListed !== undefined)
    return [`listed:${String(update.toolRequestsListed.callCount)}`];
  const exec = message.execServerMessage as { mcpArgs?: JsonObject } | undefined;
  if (exec?.mcpArgs !== undefined) return [`exec:${String(exec.mcpArgs.toolCallId)}`];
  return [];
};

describe('fake Cursor backend driven by the real @cursor/sdk', () => {
  let env: SdkTestEnv;
  /** Every message the fake sent on an agent stream, in order. */
  const sent: JsonObject[] = [];

  beforeAll(async () => {
    env = await startSdkTestEnv({
      heartbeatMs: 1000,
      trace: (direction, message) => {
        if (direction === 'send') sent.push(message as JsonObject);
      },
    });
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  const createAgent = (options: { tools?: string[]; disallowedTools?: string[] } = {}) =>
    env.sdk.Agent.create({ model: { id: 'composer-2' }, local: { cwd: env.workspace }, ...options });

  it('streams text: onDelta order, stream messages, wait() result and the decoded run request', async () => {
    env.backend.setScenario((run) => {
      run.text('Hello');
      run.text(', world');
      run.turnEnded({ inputTokens: 12, outputTokens: 3, cacheReadTokens: 4, cacheWriteTokens: 1 });
    });
    const agent = await createAgent();
    const updates: string[] = [];
    const run = await agent.send('Say hello', {
      onDelta: ({ update }) => void updates.push(describeUpdate(update)),
    });
    const messages: SDKMessage[] = [];
    for await (const message of run.stream()) messages.push(message);
    const result = await run.wait();
    await agent[Symbol.asyncDispose]();

    expect(updates).toEqual([
      'step-started:1',
      'text-delta:Hello',
      'text-delta:, world',
      'step-completed:1',
      'turn-ended',
    ]);
    expect(
      messages.map((message) => (message.type === 'status' ? `status:${message.status}` : message.type)),
    ).toEqual(['status:RUNNING', 'assistant', 'assistant', 'usage', 'status:FINISHED']);
    expect(result).toMatchObject({
      status: 'finished',
      result: 'Hello, world',
      usage: { inputTokens: 12, outputTokens: 3, cacheReadTokens: 4, cacheWriteTokens: 1, totalTokens: 20 },
    });
    const request = env.backend.runRequests.at(-1);
    expect(request).toMatchObject({
      actionKind: 'userMessageAction',
      text: 'Say hello',
      requestedModel: { modelId: 'composer-2', parameters: [] },
      mcpTools: [],
      conversationState: {},
    });
    const paths = env.backend.requests.map((entry) => entry.path);
    expect(paths).toContain('/auth/exchange_user_api_key');
    expect(paths).toContain('/v1/models');
    expect(paths).toContain('/agent.v1.AgentService/RunSSE');
    expect(env.backend.requests.find((entry) => entry.path === '/v1/models')?.headers.authorization).toBe(
      'Bearer crsr_test',
    );
  });

  it('ends a scenario that returns without turnEnded cleanly (the fake adds turnEnded)', async () => {
    const before = env.backend.runRequests.length;
    env.backend.setScenario((run) => run.text('ok'));
    const agent = await createAgent();
    const updates: string[] = [];
    const run = await agent.send('x', { onDelta: ({ update }) => void updates.push(describeUpdate(update)) });
    const result = await run.wait();
    await agent[Symbol.asyncDispose]();
    expect(result).toMatchObject({ status: 'finished', result: 'ok' });
    expect(updates).toEqual(['step-started:1', 'text-delta:ok', 'step-completed:1', 'turn-ended']);
    expect(env.backend.runRequests.length - before).toBe(1);
  });

  it('streams thinking before text; thinking-completed becomes an empty thinking message', async () => {
    env.backend.setScenario((run) => {
      run.thinking('Let me ');
      run.thinking('think.');
      run.thinkingCompleted(42);
      run.text('Done.');
      run.turnEnded({ inputTokens: 1, outputTokens: 1, reasoningTokens: 5 });
    });
    const agent = await createAgent();
    const updates: InteractionUpdate[] = [];
    const run = await agent.send('Think', { onDelta: ({ update }) => void updates.push(update) });
    const thinking: unknown[] = [];
    for await (const message of run.stream()) {
      if (message.type === 'thinking')
        thinking.push({ text: message.text, ms: message.thinking_duration_ms });
    }
    const result = await run.wait();
    await agent[Symbol.asyncDispose]();

    expect(updates.map(describeUpdate)).toEqual([
      'step-started:1',
      'thinking-delta:Let me ',
      'thinking-delta:think.',
      'thinking-completed',
      'text-delta:Done.',
      'step-completed:1',
      'turn-ended',
    ]);
    expect(updates.find((update) => update.type === 'thinking-completed')).toEqual({
      type: 'thinking-completed',
      thinkingDurationMs: 42,
    });
    expect(thinking).toEqual([
      { text: 'Let me ', ms: undefined },
      { text: 'think.', ms: undefined },
      { text: '', ms: 42 },
    ]);
    expect(result.usage).toMatchObject({ reasoningTokens: 5, totalTokens: 2 });
  });

  it('round-trips one custom tool call through execute()', async () => {
    const results: FakeToolResult[] = [];
    env.backend.setScenario(async (run) => {
      run.text('Checking. ');
      results.push(
        await run.toolCall({ toolName: 'get_weather', args: { city: 'Paris' }, callId: 'toolu_1' }),
      );
      results.push(
        await run.toolCall({ toolName: 'get_weather', args: { city: 'Nowhere' }, callId: 'toolu_2' }),
      );
      run.text('It is sunny.');
      run.turnEnded({ inputTokens: 5, outputTokens: 5 });
    });
    const events: string[] = [];
    const getWeather: SDKCustomTool = {
      description: 'Weather for a city',
      inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      execute: (args, context) => {
        events.push(`execute:${context.toolCallId}:${JSON.stringify(args)}`);
        if (args.city === 'Nowhere') throw new Error('unknown city');
        return { content: [{ type: 'text', text: 'sunny, 21C' }], structuredContent: { temp: 21 } };
      },
    };
    const agent = await createAgent();
    const run = await agent.send('Weather in Paris?', {
      local: { customTools: { get_weather: getWeather } },
      onDelta: ({ update }) => void events.push(describeUpdate(update)),
    });
    const result = await run.wait();
    await agent[Symbol.asyncDispose]();

    // The SDK executes a call independently of delivering updates: `execute` runs after the call's start
    // and before its completion, but may come before or after the listing.
    const executes = events.filter((event) => event.startsWith('execute:'));
    expect(events.filter((event) => !event.startsWith('execute:'))).toEqual([
      'step-started:1',
      'text-delta:Checking. ',
      'tool-call-started:toolu_1',
      'tool-requests-listed:1',
      'tool-call-completed:toolu_1',
      'step-completed:1',
      'step-started:2',
      'tool-call-started:toolu_2',
      'tool-requests-listed:1',
      'tool-call-completed:toolu_2',
      'step-completed:2',
      'step-started:3',
      'text-delta:It is sunny.',
      'step-completed:3',
      'turn-ended',
    ]);
    expect(executes).toEqual(['execute:toolu_1:{"city":"Paris"}', 'execute:toolu_2:{"city":"Nowhere"}']);
    for (const [index, id] of ['toolu_1', 'toolu_2'].entries()) {
      const at = events.indexOf(executes[index]!);
      expect(at).toBeGreaterThan(events.indexOf(`tool-call-started:${id}`));
      expect(at).toBeLessThan(events.indexOf(`tool-call-completed:${id}`));
    }
    expect(results).toEqual([
      {
        callId: 'toolu_1',
        toolCallId: 'toolu_1',
        status: 'success',
        content: [{ type: 'text', text: 'sunny, 21C' }],
        isError: false,
        structuredContent: { temp: 21 },
      },
      { callId: 'toolu_2', toolCallId: 'toolu_2', status: 'error', error: 'unknown city' },
    ]);
    expect(result).toMatchObject({ status: 'finished', result: 'It is sunny.' });
    expect(env.backend.runRequests.at(-1)?.mcpTools).toEqual([
      {
        name: 'custom-user-tools-get_weather',
        toolName: 'get_weather',
        providerIdentifier: 'custom-user-tools',
        description: 'Weather for a city',
        inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    ]);
  });

  it('runs two tool calls of one step in parallel; by default each start is followed by its exec and the listing comes last', async () => {
    env.backend.setScenario(async (run) => {
      const results = await run.toolCalls([
        { toolName: 'lookup', args: { key: 'a' }, callId: 'call_a' },
        { toolName: 'lookup', args: { key: 'b' }, callId: 'call_b', toolCallId: 'mcp_b' },
      ]);
      const texts = results.map((result) =>
        result.status === 'success'
          ? result.content.map((item) => (item.type === 'text' ? item.text : '')).join('')
          : '',
      );
      run.text(texts.join(','));
      run.turnEnded();
    });
    const events: string[] = [];
    const release: Array<() => void> = [];
    const lookup: SDKCustomTool = {
      execute: async (args, context) => {
        events.push(`execute:${context.toolCallId}`);
        // Both executes must be pending at once: each waits until the second one has started.
        await new Promise<void>((resolve) => {
          release.push(resolve);
          if (release.length === 2) for (const resolveOne of release) resolveOne();
        });
        return `value-${String(args.key)}`;
      },
    };
    const agent = await createAgent();
    const firstSent = sent.length;
    const run = await agent.send('Look up a and b', {
      local: { customTools: { lookup } },
      onDelta: ({ update }) => void events.push(describeUpdate(update)),
    });
    const result = await run.wait();
    await agent[Symbol.asyncDispose]();

    expect(sent.slice(firstSent).flatMap(describeSent)).toEqual([
      'started:call_a',
      'exec:call_a',
      'started:call_b',
      'exec:mcp_b',
      'listed:2',
    ]);
    // Both executes were pending at once (each waited for the other), whenever the updates reached onDelta.
    expect(events.filter((event) => event.startsWith('execute:'))).toEqual([
      'execute:call_a',
      'execute:mcp_b',
    ]);
    expect(events.filter((event) => !event.startsWith('execute:'))).toEqual([
      'step-started:1',
      'tool-call-started:call_a',
      'tool-call-started:call_b',
      'tool-requests-listed:2',
      'tool-call-completed:call_a',
      'tool-call-completed:call_b',
      'step-completed:1',
      'step-started:2',
      'text-delta:value-a,value-b',
      'step-completed:2',
      'turn-ended',
    ]);
    expect(result.status).toBe('finished');
  });

  it.each([
    ['before-started', ['listed:2', 'started:call_x', 'started:call_y', 'exec:call_x', 'exec:call_y']],
    ['after-started', ['started:call_x', 'started:call_y', 'listed:2', 'exec:call_x', 'exec:call_y']],
    ['none', ['started:call_x', 'exec:call_x', 'started:call_y', 'exec:call_y']],
  ] as const)('keeps the other listing orders for fallback tests: %s', async (listed, wireOrder) => {
    env.backend.setScenario(async (run) => {
      await run.toolCalls(
        [
          { toolName: 'lookup', callId: 'call_x' },
          { toolName: 'lookup', callId: 'call_y' },
        ],
        { listed },
      );
      run.turnEnded();
    });
    const agent = await createAgent();
    const firstSent = sent.length;
    const run = await agent.send('go', { local: { customTools: { lookup: { execute: () => 'ok' } } } });
    await run.wait();
    await agent[Symbol.asyncDispose]();
    expect(sent.slice(firstSent).flatMap(describeSent)).toEqual(wireOrder);
  });

  it('holds the listing until `listedAfter` settles, after the call was executed', async () => {
    let release!: () => void;
    const listedAfter = new Promise<void>((resolve) => (release = resolve));
    env.backend.setScenario(async (run) => {
      await run.toolCall({ toolName: 'lookup', callId: 'call_z' }, { listedAfter });
      run.turnEnded();
    });
    const events: string[] = [];
    const agent = await createAgent();
    const run = await agent.send('go', {
      local: {
        customTools: {
          lookup: {
            execute: () => {
              events.push('execute');
              release();
              return 'ok';
            },
          },
        },
      },
      onDelta: ({ update }) => void events.push(describeUpdate(update)),
    });
    await run.wait();
    await agent[Symbol.asyncDispose]();
    expect(events.indexOf('tool-requests-listed:1')).toBeGreaterThan(events.indexOf('execute'));
  });

  it('keeps history across sends through checkpoints the fake writes into the store', async () => {
    const seen: unknown[] = [];
    env.backend.setScenario(async (run) => {
      seen.push(await run.history());
      if (run.toolNames.includes('lookup')) await run.toolCall({ toolName: 'lookup', args: { key: 'k' } });
      run.text(`answer to ${run.prompt}`);
      run.turnEnded();
    });
    const agent = await createAgent();
    const first = await agent.send('first question', {
      local: { customTools: { lookup: { execute: () => 'v' } } },
    });
    await first.wait();
    const second = await agent.send('second question');
    await second.wait();
    const conversation = await second.conversation();
    await agent[Symbol.asyncDispose]();

    expect(seen[0]).toEqual([]);
    expect(seen[1]).toEqual([
      {
        user: 'first question',
        steps: [
          {
            type: 'tool-call',
            toolName: 'lookup',
            args: { key: 'k' },
            result: { success: { content: [{ text: { text: 'v' } }] } },
          },
          { type: 'text', text: 'answer to first question' },
        ],
      },
    ]);
    expect(env.backend.runRequests.at(-1)?.conversationState.turns).toHaveLength(1);
    // run.conversation() covers this run's turn only.
    expect(conversation).toHaveLength(1);
    expect(JSON.stringify(conversation)).toContain('answer to second question');
    expect(JSON.stringify(conversation)).not.toContain('first question');
  });

  it('passes tool allow/deny lists as headers, model params in the run request, and serves the catalog', async () => {
    env.backend.setScenario((run) => run.turnEnded());
    const agent = await createAgent({ tools: ['mcp'] });
    await (await agent.send('x')).wait();
    await agent[Symbol.asyncDispose]();
    const stream = env.backend.requests
      .filter((entry) => entry.path === '/agent.v1.AgentService/RunSSE')
      .at(-1);
    expect(stream?.headers['x-cursor-agent-allowed-tools']).toBe(
      'mcp_tool_call,get_mcp_tools_tool_call,list_mcp_resources_tool_call,read_mcp_resource_tool_call,mcp_auth_tool_call',
    );
    const denying = await createAgent({ disallowedTools: ['shell', 'webSearch'] });
    await (await denying.send('z')).wait();
    await denying[Symbol.asyncDispose]();
    const denied = env.backend.requests
      .filter((entry) => entry.path === '/agent.v1.AgentService/RunSSE')
      .at(-1);
    expect(denied?.headers['x-cursor-agent-exclude-tools']).toBe(
      'shell_tool_call,write_shell_stdin_tool_call,web_search_tool_call',
    );
    const tuned = await env.sdk.Agent.create({
      model: { id: 'gpt-5.4', params: [{ id: 'reasoning', value: 'high' }] },
      local: { cwd: env.workspace },
    });
    await (await tuned.send('y')).wait();
    await tuned[Symbol.asyncDispose]();
    expect(env.backend.runRequests.at(-1)?.requestedModel).toEqual({
      modelId: 'gpt-5.4',
      parameters: [{ id: 'reasoning', value: 'high' }],
    });
    const models = await env.sdk.Cursor.models.list();
    expect(models.map((model) => model.id)).toEqual(DEFAULT_FAKE_MODELS.map((model) => model.id));
    expect(
      models.find((model) => model.id === 'gpt-5.4')?.parameters?.[0]?.values.map((value) => value.value),
    ).toEqual(['none', 'low', 'medium', 'high', 'extra-high']);
  });
  it('sends server-initiated execs and resolves with the SDK answer; without settingSources the SDK runs built-ins', async () => {
    const file = path.join(env.workspace, 'notes.txt');
    const marker = path.join(env.workspace, 'shell-marker');
    await writeFile(file, 'line one\nline two\n');
    const answers: Record<string, JsonObject | string> = {};
    env.backend.setScenario(async (run) => {
      answers.context = await run.exec('requestContextArgs', {});
      answers.read = await run.exec('readArgs', { path: file, toolCallId: 'read-1' });
      answers.shell = await run.exec(
        'shellArgs',
        fakeShellArgs(`touch ${marker}`, { toolCallId: 'shell-1' }),
      );
      answers.badKind = await run.exec('noSuchArgs', {}).catch((error: unknown) => String(error));
      run.text('done');
    });
    const agent = await createAgent();
    const result = await (await agent.send('x')).wait();
    await agent[Symbol.asyncDispose]();
    expect(result.status).toBe('finished');

    // The whole execClientMessage comes back: id, the result case and the local timing (the SDK does
    // not echo execId).
    expect(answers.context).toMatchObject({
      id: 1,
      requestContextResult: { success: { requestContext: { env: { workspacePaths: [env.workspace] } } } },
      localExecutionTimeMs: expect.any(Number),
    });
    // No settingSources: no AGENTS.md / rules and no hooks are loaded.
    const context = JSON.stringify(answers.context);
    expect(context).not.toContain('"rules"');
    expect(context).not.toContain('hooksConfig');
    expect(answers.read).toMatchObject({
      id: 2,
      readResult: { success: { path: file, content: 'line one\nline two\n' } },
    });
    // exitCode 0 is a proto3 default, so it is absent. An empty workingDirectory runs the command in
    // the PROCESS's cwd, not in local.cwd (SDK 1.0.32).
    expect(answers.shell).toMatchObject({
      id: 3,
      shellResult: { success: { command: `touch ${marker}`, workingDirectory: process.cwd() } },
    });
    expect(JSON.stringify(answers.shell)).not.toContain('exitCode');
    expect(existsSync(marker)).toBe(true);
    // An unknown oneof case fails in the scenario, before anything is sent.
    expect(answers.badKind).toMatch(/noSuchArgs/);
    await rm(marker, { force: true });
    await rm(file, { force: true });
  });
});
