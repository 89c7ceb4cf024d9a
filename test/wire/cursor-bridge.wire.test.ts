import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { ParkedCallBroker } from '../../mcp/index.js';
import type { FakeToolResult, Scenario } from '../fakes/cursor-backend/run-context.js';
import { createGate } from '../helpers/gate.js';
import {
  closeWireBackend,
  startWireBridge,
  type WireBridge,
  anthropicBashTool,
} from '../helpers/wire-bridge.js';

let wire: WireBridge | undefined;
const start = async (...args: Parameters<typeof startWireBridge>) => (wire = await startWireBridge(...args));
afterEach(async () => {
  vi.restoreAllMocks();
  await wire?.close();
  wire = undefined;
});
afterAll(closeWireBackend);

const bash = anthropicBashTool;
const environment =
  '# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /home/dev/project\n - Platform: linux\n';

const resultText = (result: FakeToolResult): string =>
  result.status === 'success'
    ? result.content.map((item) => (item.type === 'text' ? item.text : '')).join('')
    : result.status;

/** The bytes of `path`, or nothing when it is gone or large. */
const readSmallFile = async (path: string): Promise<Buffer | undefined> => {
  try {
    return (await stat(path)).size < 50_000_000 ? await readFile(path) : undefined;
  } catch (error) {
    // The bridge keeps working meanwhile (the warm pool renders workspaces): a temporary file listed a
    // moment ago may have been renamed over its target since.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
};

/** Every file under `dir` whose bytes contain `needle`. */
const filesContaining = async (dir: string, needle: string): Promise<string[]> => {
  const found: string[] = [];
  const walk = async (current: string): Promise<void> => {
    for (const entry of await readdir(current, { withFileTypes: true }).catch(() => [])) {
      const path = join(current, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile() && (await readSmallFile(path))?.includes(needle) === true) found.push(path);
    }
  };
  await walk(dir);
  return found;
};

describe('bridge with the real @cursor/sdk against the fake Cursor backend', () => {
  it('streams thinking and text with usage to an Anthropic client', async () => {
    const { url, backend, runRequests } = await start({
      scenario: (run) => {
        run.thinking('Considering the greeting.');
        run.thinkingCompleted(12);
        run.text('Hello from ');
        run.text('Cursor.');
        run.turnEnded({ inputTokens: 100, outputTokens: 7, cacheReadTokens: 40 });
      },
    });
    const client = new Anthropic({ baseURL: url, apiKey: 'sk-test', maxRetries: 0 });
    const message = await client.messages
      .stream({
        model: 'composer-2',
        max_tokens: 100,
        system: environment,
        messages: [{ role: 'user', content: 'Say hello' }],
      })
      .finalMessage();
    expect(message.content).toEqual([
      expect.objectContaining({
        type: 'thinking',
        thinking: 'Considering the greeting.',
        signature: expect.any(String),
      }),
      expect.objectContaining({ type: 'text', text: 'Hello from Cursor.' }),
    ]);
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage).toMatchObject({ input_tokens: 60, cache_read_input_tokens: 40, output_tokens: 7 });
    const prompt = runRequests()[0]?.text ?? '';
    expect(prompt).toContain('Say hello');
    expect(prompt).toContain('/home/dev/project');
    expect(backend.requests.find((request) => request.path.includes('RunSSE'))?.headers).toMatchObject({
      'x-cursor-agent-allowed-tools': expect.stringContaining('mcp_tool_call'),
    });
  });

  it('runs a tool round trip: the same run continues and the final text quotes the result', async () => {
    const scenario: Scenario = async (run) => {
      run.text('Let me check. ');
      const [result] = await run.toolCalls([{ toolName: 'Bash', args: { command: 'echo hello-from-tool' } }]);
      run.text(`Tool said: ${result === undefined ? 'nothing' : resultText(result)}`);
      run.turnEnded({ inputTokens: 10, outputTokens: 5 });
    };
    const { url, runRequests, runs, home, workspacesDir } = await start({ scenario });
    const client = new Anthropic({ baseURL: url, apiKey: 'sk-test', maxRetries: 0 });
    const messages: Anthropic.MessageParam[] = [
      { role: 'user', content: 'Run the secret-phrase-xyzzy command' },
    ];
    const first = await client.messages
      .stream({ model: 'composer-2', max_tokens: 100, system: environment, tools: [bash], messages })
      .finalMessage();
    expect(first.stop_reason).toBe('tool_use');
    const toolUse = first.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use');
    expect(toolUse).toMatchObject({ name: 'Bash', input: { command: 'echo hello-from-tool' } });
    expect(runRequests()[0]?.mcpTools.map((tool) => tool.toolName)).toEqual(['Bash']);

    const second = await client.messages
      .stream({
        model: 'composer-2',
        max_tokens: 100,
        system: environment,
        tools: [bash],
        messages: [
          ...messages,
          { role: 'assistant', content: first.content },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: toolUse!.id, content: 'hello-from-tool' }],
          },
        ],
      })
      .finalMessage();
    expect(second.content).toEqual([
      expect.objectContaining({ type: 'text', text: 'Tool said: hello-from-tool' }),
    ]);
    expect(runs()).toHaveLength(1);

    // No conversation text on disk: not under HOME (the SDK's default store), not in the workspace.
    expect(await filesContaining(home, 'secret-phrase-xyzzy')).toEqual([]);
    expect(await filesContaining(workspacesDir, 'secret-phrase-xyzzy')).toEqual([]);
  });

  it('emits two parallel tool calls in one response and feeds both results back', async () => {
    const scenario: Scenario = async (run) => {
      const results = await run.toolCalls([
        { toolName: 'Bash', args: { command: 'echo one' } },
        { toolName: 'Bash', args: { command: 'echo two' } },
      ]);
      run.text(results.map(resultText).join(' + '));
      run.turnEnded();
    };
    const { url, runs } = await start({ scenario });
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const tools: OpenAI.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'Bash', parameters: bash.input_schema } },
    ];
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'run both' }];
    const first = await client.chat.completions
      .stream({ model: 'composer-2', tools, messages })
      .finalChatCompletion();
    const calls = first.choices[0]?.message.tool_calls ?? [];
    expect(first.choices[0]?.finish_reason).toBe('tool_calls');
    expect(calls.map((call) => call.type === 'function' && JSON.parse(call.function.arguments))).toEqual([
      { command: 'echo one' },
      { command: 'echo two' },
    ]);
    const second = await client.chat.completions
      .stream({
        model: 'composer-2',
        tools,
        messages: [
          ...messages,
          { role: 'assistant', content: '', tool_calls: calls },
          ...calls.map((call, index) => ({
            role: 'tool' as const,
            tool_call_id: call.id,
            content: index === 0 ? 'one' : 'two',
          })),
        ],
      })
      .finalChatCompletion();
    expect(second.choices[0]?.message.content).toBe('one + two');
    expect(runs()).toHaveLength(1);
  });

  it('pairs each execute with its started call when McpArgs.toolCallId differs or is empty', async () => {
    const scenario: Scenario = async (run) => {
      const results = await run.toolCalls([
        // An empty McpArgs.toolCallId reaches `execute` as no id at all.
        { callId: 'start-a', toolCallId: '', toolName: 'Bash', args: { command: 'echo a' } },
        { callId: 'start-b', toolCallId: 'exec-b', toolName: 'Bash', args: { command: 'echo b' } },
        { callId: 'start-c', toolName: 'Bash', args: { command: 'echo c' } },
      ]);
      run.text(results.map((result) => `${result.callId}=${resultText(result)}`).join(' '));
      run.turnEnded();
    };
    const { url, runs } = await start({ scenario });
    const client = new Anthropic({ baseURL: url, apiKey: 'sk-test', maxRetries: 0 });
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'run all three' }];
    const first = await client.messages.create({
      model: 'composer-2',
      max_tokens: 100,
      tools: [bash],
      messages,
    });
    expect(first.stop_reason).toBe('tool_use');
    const calls = first.content.flatMap((block) => (block.type === 'tool_use' ? [block] : []));
    // Calls are announced as they park, and the SDK executes a step's calls concurrently: compare by id.
    const byId = calls
      .map((call) => [call.id, call.input])
      .sort(([a], [b]) => String(a).localeCompare(String(b)));
    expect(byId).toEqual([
      ['exec-b', { command: 'echo b' }],
      ['start-a', { command: 'echo a' }],
      ['start-c', { command: 'echo c' }],
    ]);
    const second = await client.messages.create({
      model: 'composer-2',
      max_tokens: 100,
      tools: [bash],
      messages: [
        ...messages,
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: calls.map((call) => ({
            type: 'tool_result' as const,
            tool_use_id: call.id,
            content: `out-${(call.input as { command: string }).command.slice(-1)}`,
          })),
        },
      ],
    });
    expect(second.content).toEqual([
      expect.objectContaining({ type: 'text', text: 'start-a=out-a start-b=out-b start-c=out-c' }),
    ]);
    expect(runs()).toHaveLength(1);
  });

  it("attaches a retried SDK stream's duplicate execute to the parked call: the client sees one tool call", async () => {
    const call = { toolName: 'Bash', args: { command: 'echo once' }, callId: 'toolu_dup_1' };
    let attempt = 0;
    // The first attempt's stream dies once the client has the tool call (so the call is parked).
    const clientHasToolCall = createGate();
    const park = vi.spyOn(ParkedCallBroker.prototype, 'park');
    const parks = () => park.mock.calls.filter(([request]) => request.toolCallId === call.callId).length;
    const scenario: Scenario = async (run) => {
      attempt += 1;
      if (attempt === 1) {
        // The stream dies while the call is parked: the SDK reconnects, re-sends the run request and calls
        // execute again with the same toolCallId (what its 30 s stall detector does, made fast).
        const pending = run.toolCalls([call]).catch(() => undefined);
        await clientHasToolCall.opened;
        run.disconnect();
        await pending;
        return;
      }
      const [result] = await run.toolCalls([call]);
      run.text(`got ${result === undefined ? 'nothing' : resultText(result)}`);
      run.turnEnded();
    };
    const { url, runRequests } = await start({ scenario });
    const client = new Anthropic({ baseURL: url, apiKey: 'sk-test', maxRetries: 0 });
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'run it once' }];
    const first = await client.messages
      .stream({ model: 'composer-2', max_tokens: 50, tools: [bash], messages })
      .finalMessage();
    expect(first.content.filter((block) => block.type === 'tool_use')).toHaveLength(1);
    expect(parks()).toBe(1);
    clientHasToolCall.open();
    // The retry's execute reaches the broker while the call is still parked (a safety net, not a speed
    // claim: the SDK reconnects with its own back-off).
    await vi.waitFor(() => expect(parks()).toBe(2), { timeout: 45_000, interval: 20 });

    const second = await client.messages
      .stream({
        model: 'composer-2',
        max_tokens: 50,
        tools: [bash],
        messages: [
          ...messages,
          { role: 'assistant', content: first.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_dup_1', content: 'once' }] },
        ],
      })
      .finalMessage();
    expect(second.content).toEqual([expect.objectContaining({ type: 'text', text: 'got once' })]);
    expect(second.content.filter((block) => block.type === 'tool_use')).toHaveLength(0);
    expect(runRequests().length).toBeGreaterThanOrEqual(2);
    expect(new Set(runRequests().map((request) => request.text)).size).toBe(1);
  }, 60_000);

  it('reuses the agent with a slim prompt for the next turn, and replays a diverged transcript in full', async () => {
    const scenario: Scenario = async (run) => {
      const history = await run.history();
      run.text(`turn ${history.length + 1}`);
      run.turnEnded();
    };
    const { url, runRequests } = await start({ scenario });
    const client = new Anthropic({ baseURL: url, apiKey: 'sk-test', maxRetries: 0 });
    const ask = (messages: Anthropic.MessageParam[]) =>
      client.messages.create({ model: 'composer-2', max_tokens: 50, system: environment, messages });
    const first = await ask([{ role: 'user', content: 'opening-question-alpha' }]);
    expect(first.content).toEqual([expect.objectContaining({ text: 'turn 1' })]);
    const second = await ask([
      { role: 'user', content: 'opening-question-alpha' },
      { role: 'assistant', content: 'turn 1' },
      { role: 'user', content: 'follow-up-beta' },
    ]);
    // The same agent (its checkpointed history has one turn) got only the new message.
    expect(second.content).toEqual([expect.objectContaining({ text: 'turn 2' })]);
    expect(runRequests()[1]?.text).toContain('follow-up-beta');
    expect(runRequests()[1]?.text).not.toContain('opening-question-alpha');

    const diverged = await ask([
      { role: 'user', content: 'opening-question-alpha' },
      { role: 'assistant', content: 'an answer the agent never gave' },
      { role: 'user', content: 'follow-up-gamma' },
    ]);
    // A fresh agent (no history) received the whole transcript.
    expect(diverged.content).toEqual([expect.objectContaining({ text: 'turn 1' })]);
    const replay = runRequests()[2]?.text ?? '';
    expect(replay).toContain('opening-question-alpha');
    expect(replay).toContain('an answer the agent never gave');
    expect(replay).toContain('follow-up-gamma');
    expect(runRequests()[2]?.conversationId).not.toBe(runRequests()[0]?.conversationId);
  });

  it('refuses with 401, x-should-retry false and "Cursor API key not found" when the key is missing', async () => {
    const { url } = await start({ apiKey: null });
    const response = await fetch(`${url}/v1/messages?beta=true`, {
      method: 'POST',
      body: JSON.stringify({
        model: 'composer-2',
        max_tokens: 5,
        stream: true,
        messages: [{ role: 'user', content: 'x' }],
      }),
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('x-should-retry')).toBe('false');
    const body = (await response.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe('authentication_error');
    expect(body.error.message).toContain('Cursor API key not found');
  });

  it('refuses with 401 when Cursor rejects the key', async () => {
    const { url } = await start({ auth: 'reject' });
    const client = new Anthropic({ baseURL: url, apiKey: 'sk-test', maxRetries: 0 });
    const failure = client.messages.create({
      model: 'composer-2',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'x' }],
    });
    await expect(failure).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
    await expect(failure).rejects.toThrow(/crsr_/);
  });

  it('reports a run error mid-stream in-band and still ends the stream', async () => {
    const { url } = await start({
      scenario: (run) => {
        run.text('partial ');
        run.fail('model exploded', 'permission_denied');
      },
    });
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'composer-2', stream: true, messages: [{ role: 'user', content: 'x' }] }),
    });
    const text = await response.text();
    expect(response.status).toBe(200);
    expect(text).toContain('partial ');
    expect(text).toMatch(/"error":\{"message":"[^"]*model exploded/);
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });
});
