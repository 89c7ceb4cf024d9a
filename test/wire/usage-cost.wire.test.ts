/**
 * What a response reports as usage, and what a finished run costs, through the whole bridge and the REAL
 * `@cursor/sdk` against the fake backend: a tool-use response (its run still live, Cursor has reported
 * nothing) reports the bridge's count, the same as `count_tokens`; the response that finishes the run
 * reports Cursor's usage, in each protocol's spelling; Cursor's billing (`agent.getUsage()`, the fake's
 * `GET /v1/agents/{id}/usage`) gives the run's cost to the access log, the metrics and the conversation's
 * totals at `GET /debug/conversations`.
 */

import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { fakePrice, type FakeBilling } from '../fakes/cursor-backend/fake-cursor-backend.js';
import type { FakeUsage, Scenario } from '../fakes/cursor-backend/run-context.js';
import {
  anthropicBashTool,
  closeWireBackend,
  startWireBridge,
  type WireBridge,
} from '../helpers/wire-bridge.js';

let wire: WireBridge | undefined;
afterEach(async () => {
  await wire?.close();
  wire = undefined;
});
afterAll(closeWireBackend);

const start = async (scenario: Scenario, billing?: FakeBilling): Promise<WireBridge> => {
  wire = await startWireBridge({ scenario, ...(billing === undefined ? {} : { billing }) });
  return wire;
};

/** The run's usage as Cursor reports it at its end (input includes the cache reads). */
const runUsage: FakeUsage = {
  inputTokens: 5_000,
  cacheReadTokens: 3_000,
  cacheWriteTokens: 200,
  outputTokens: 80,
  reasoningTokens: 10,
};

/** One host tool call, then the answer and the run's usage. */
const toolThenAnswer: Scenario = async (run) => {
  run.text('Looking.');
  await run.toolCall({ toolName: 'Bash', args: { command: 'ls' } });
  run.text('Done.');
  run.turnEnded(runUsage);
};

const environment =
  '# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /home/dev/project\n';

type AccessLine = {
  msg: string;
  path: string;
  status: number;
  tokens?: { input: number; output: number; cacheRead: number; cacheWrite: number; reasoning?: number };
  usageSource?: string;
  costCents?: { raw: number; charged: number };
};

const accessLines = (bridge: WireBridge, path: string): AccessLine[] =>
  bridge.logs
    .map((line) => JSON.parse(line) as AccessLine)
    .filter((line) => line.msg === 'request' && line.path === path);

/** Waits (bounded by the test's timeout) until `read` returns a value. */
const eventually = async <T>(read: () => T | undefined | Promise<T | undefined>): Promise<T> => {
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

type ConversationsBody = {
  conversations: Array<{
    session: string;
    state: string;
    runs: number;
    usage: { inputTokens: number; outputTokens: number; cacheReadTokens: number; cacheWriteTokens: number };
    cost: { rawCents: number; chargedCents: number };
    unpricedRuns: number;
  }>;
};

const conversations = async (bridge: WireBridge): Promise<ConversationsBody['conversations']> =>
  ((await (await fetch(`${bridge.url}/debug/conversations`)).json()) as ConversationsBody).conversations;

const metricValue = async (bridge: WireBridge, series: string): Promise<number | undefined> => {
  const text = await (await fetch(`${bridge.url}/metrics`)).text();
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

const anthropicRequest = (messages: Anthropic.MessageParam[]) => ({
  model: 'composer-2',
  max_tokens: 100,
  system: environment,
  tools: [anthropicBashTool],
  messages,
});

describe('usage on every response', () => {
  it("Anthropic: the tool-use response counts the request as count_tokens does; the final one reports Cursor's", async () => {
    const bridge = await start(toolThenAnswer);
    const client = new Anthropic({ baseURL: bridge.url, apiKey: 'sk-test', maxRetries: 0 });
    const opening: Anthropic.MessageParam[] = [{ role: 'user', content: 'List the project, please.' }];
    const toolUse = await client.messages.stream(anthropicRequest(opening)).finalMessage();
    expect(toolUse.stop_reason).toBe('tool_use');
    const counted = await client.messages.countTokens({
      model: 'composer-2',
      system: environment,
      tools: [anthropicBashTool],
      messages: opening,
    });
    expect(counted.input_tokens).toBeGreaterThan(50);
    // The client's context meter reads input + cache + output of the last response: never zero.
    expect(toolUse.usage).toMatchObject({
      input_tokens: counted.input_tokens,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    });
    expect(toolUse.usage.output_tokens).toBeGreaterThan(0);

    const call = toolUse.content.find((block) => block.type === 'tool_use');
    const final = await client.messages
      .stream(
        anthropicRequest([
          ...opening,
          { role: 'assistant', content: toolUse.content },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: call?.id ?? '', content: 'README.md' }],
          },
        ]),
      )
      .finalMessage();
    expect(final.stop_reason).toBe('end_turn');
    // Cursor's input includes its cache reads; Anthropic's input_tokens does not.
    expect(final.usage).toMatchObject({
      input_tokens: 2_000,
      cache_read_input_tokens: 3_000,
      cache_creation_input_tokens: 200,
      output_tokens: 80,
    });
  });

  it("Chat Completions: a tool-call chunk's usage is counted, the final one is Cursor's with its cache and reasoning split", async () => {
    const bridge = await start(toolThenAnswer);
    const client = new OpenAI({ baseURL: `${bridge.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const tools: OpenAI.ChatCompletionTool[] = [
      {
        type: 'function',
        function: {
          name: 'Bash',
          parameters: { type: 'object', properties: { command: { type: 'string' } } },
        },
      },
    ];
    const opening: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'List the project, please.' },
    ];
    const usageOf = async (messages: OpenAI.ChatCompletionMessageParam[]) => {
      const stream = await client.chat.completions.create({
        model: 'composer-2',
        messages,
        tools,
        stream: true,
        stream_options: { include_usage: true },
      });
      let usage: OpenAI.CompletionUsage | undefined | null;
      const calls: OpenAI.ChatCompletionMessageFunctionToolCall[] = [];
      for await (const chunk of stream) {
        if (chunk.usage) usage = chunk.usage;
        for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
          if (delta.id !== undefined)
            calls.push({ id: delta.id, type: 'function', function: { name: 'Bash', arguments: '' } });
          const last = calls.at(-1);
          if (last !== undefined && delta.function?.arguments)
            last.function.arguments += delta.function.arguments;
        }
      }
      return { usage, calls };
    };
    const toolUse = await usageOf(opening);
    expect(toolUse.calls).toHaveLength(1);
    expect(toolUse.usage?.prompt_tokens).toBeGreaterThan(10);
    expect(toolUse.usage?.completion_tokens).toBeGreaterThan(0);
    const final = await usageOf([
      ...opening,
      { role: 'assistant', content: 'Looking.', tool_calls: toolUse.calls },
      { role: 'tool', tool_call_id: toolUse.calls[0]?.id ?? '', content: 'README.md' },
    ]);
    expect(final.usage).toMatchObject({
      prompt_tokens: 5_200,
      completion_tokens: 80,
      prompt_tokens_details: { cached_tokens: 3_000 },
      completion_tokens_details: { reasoning_tokens: 10 },
    });
  });

  it("Responses: the function-call response's usage is counted, the final one is Cursor's", async () => {
    const bridge = await start(toolThenAnswer);
    const client = new OpenAI({ baseURL: `${bridge.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const tools: OpenAI.Responses.Tool[] = [
      {
        type: 'function',
        name: 'Bash',
        strict: false,
        parameters: { type: 'object', properties: { command: { type: 'string' } } },
      },
    ];
    const input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: 'List the project, please.' }];
    const toolUse = await client.responses.create({ model: 'composer-2', input, tools });
    const call = toolUse.output.find((item) => item.type === 'function_call');
    expect(call).toBeDefined();
    expect(toolUse.usage?.input_tokens).toBeGreaterThan(10);
    expect(toolUse.usage?.output_tokens).toBeGreaterThan(0);
    const final = await client.responses.create({
      model: 'composer-2',
      input: [
        ...input,
        ...(toolUse.output as OpenAI.Responses.ResponseInputItem[]),
        {
          type: 'function_call_output',
          call_id: call?.type === 'function_call' ? call.call_id : '',
          output: 'README.md',
        },
      ],
      tools,
    });
    expect(final.usage).toMatchObject({
      input_tokens: 5_200,
      output_tokens: 80,
      input_tokens_details: { cached_tokens: 3_000 },
      output_tokens_details: { reasoning_tokens: 10 },
    });
  });
});

describe("a finished run's cost", () => {
  const finishedTurn = async (bridge: WireBridge): Promise<void> => {
    const client = new Anthropic({ baseURL: bridge.url, apiKey: 'sk-test', maxRetries: 0 });
    await client.messages.create(anthropicRequest([{ role: 'user', content: 'Say hello.' }]));
  };
  const answer: Scenario = (run) => {
    run.text('Hello.');
    run.turnEnded(runUsage);
  };
  const price = fakePrice(runUsage);

  it("goes to the turn's access line, the metrics and the conversation's totals", async () => {
    const bridge = await start(toolThenAnswer);
    const client = new Anthropic({ baseURL: bridge.url, apiKey: 'sk-test', maxRetries: 0 });
    const opening: Anthropic.MessageParam[] = [{ role: 'user', content: 'List the project, please.' }];
    const toolUse = await client.messages.create(anthropicRequest(opening));
    const call = toolUse.content.find((block) => block.type === 'tool_use');
    await client.messages.create(
      anthropicRequest([
        ...opening,
        { role: 'assistant', content: toolUse.content },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: call?.id ?? '', content: 'README.md' }],
        },
      ]),
    );
    const lines = await eventually(() => {
      const found = accessLines(bridge, '/v1/messages');
      return found.length === 2 ? found : undefined;
    });
    // The tool-use response: what it told the client, no cost (its run went on).
    expect(lines[0]).toMatchObject({ status: 200, usageSource: 'estimate' });
    expect(lines[0]?.tokens?.input).toBe(toolUse.usage.input_tokens);
    expect(lines[0]?.costCents).toBeUndefined();
    // The response that finished the run: the whole run as Cursor billed it.
    expect(lines[1]).toMatchObject({
      usageSource: 'billing',
      tokens: { input: 2_000, output: 80, cacheRead: 3_000, cacheWrite: 200 },
      costCents: { raw: price.rawCostCents, charged: price.chargedCents },
    });

    const [conversation] = await conversations(bridge);
    expect(conversation).toMatchObject({
      state: 'idle',
      runs: 1,
      usage: { inputTokens: 2_000, outputTokens: 80, cacheReadTokens: 3_000, cacheWriteTokens: 200 },
      cost: { rawCents: price.rawCostCents, chargedCents: price.chargedCents },
      unpricedRuns: 0,
    });
    expect(
      await metricValue(bridge, 'cursor_bridge_cost_cents_total{model="composer-2",kind="raw"}'),
    ).toBeCloseTo(price.rawCostCents, 9);
    expect(
      await metricValue(bridge, 'cursor_bridge_tokens_total{model="composer-2",kind="cache_read"}'),
    ).toBe(3_000);
  });

  it('a cost billing reports late is waited for, within the bound', async () => {
    // Billing lists the turn without its cost twice, then with it: late in reads, not in time, so that
    // how fast the machine runs changes nothing.
    const bridge = await start(answer, { price: fakePrice, costAfterReads: 2 });
    const before = bridge.backend.requests.length;
    await finishedTurn(bridge);
    const [line] = await eventually(() => {
      const found = accessLines(bridge, '/v1/messages');
      return found.length === 1 ? found : undefined;
    });
    expect(line?.costCents).toEqual({ raw: price.rawCostCents, charged: price.chargedCents });
    const usagePath = (path: string): boolean => /^\/v1\/agents\/[^/]+\/usage$/.test(path);
    // Asked again until the cost was there, and no more.
    const reads = bridge.backend.requests.slice(before).filter((request) => usagePath(request.path)).length;
    expect(reads).toBe(3);
  });

  it('a run billing never prices is counted without a cost, and said so', async () => {
    const bridge = await start(answer, {});
    await finishedTurn(bridge);
    const [line] = await eventually(() => {
      const found = accessLines(bridge, '/v1/messages');
      return found.length === 1 ? found : undefined;
    });
    expect(line).toMatchObject({ usageSource: 'billing', tokens: { input: 2_000, output: 80 } });
    expect(line?.costCents).toBeUndefined();
    expect(await conversations(bridge)).toMatchObject([
      { runs: 1, unpricedRuns: 0 + 1, cost: { rawCents: 0 } },
    ]);
    expect(await metricValue(bridge, 'cursor_bridge_unpriced_runs_total{model="composer-2"}')).toBe(1);
  });
});
