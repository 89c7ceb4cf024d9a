/**
 * Hosted web search through the whole bridge and the real `@cursor/sdk`: the fake backend plays Cursor's
 * search (approval query, the SDK's answer, the `web_search_tool_call` with its references, written into
 * the conversation checkpoint), and the client gets Anthropic's own search blocks. The requests the fake
 * received say which runs were allowed to search.
 */

import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { readdir } from 'node:fs/promises';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { FakeHostedOutcome, FakeWebReference, Scenario } from '../fakes/cursor-backend/index.js';
import {
  anthropicBashTool,
  closeWireBackend,
  startWireBridge,
  type WireBridge,
} from '../helpers/wire-bridge.js';

let wire: WireBridge | undefined;
/** Where this test's requests start in the file's shared fake backend log. */
let firstRequest = 0;
const start = async (options: Parameters<typeof startWireBridge>[0]): Promise<WireBridge> => {
  const started = await startWireBridge(options);
  firstRequest = started.backend.requests.length;
  return started;
};
afterEach(async () => {
  await wire?.close();
  wire = undefined;
});
afterAll(closeWireBackend);

const nodeRelease: FakeWebReference = {
  title: 'Node.js 22 is now available!',
  url: 'https://nodejs.org/en/blog/announcements/v22-release-announce',
  chunk: 'Node.js 22 was released on April 24, 2024.',
};
const otherSource: FakeWebReference = {
  title: 'Node 22 on a blocked site',
  url: 'https://blocked.example/node-22',
  chunk: 'Mirror of the announcement.',
};

/** Claude Code 2.1.332's WebSearch side request (its tool entry, `tool_choice` and prompt). */
const sideRequest = (
  tool: Record<string, unknown> = {},
): Anthropic.MessageCreateParamsNonStreaming & { tools: unknown[] } => ({
  model: 'claude-opus-5-5',
  max_tokens: 4096,
  messages: [{ role: 'user', content: 'Perform a web search for the query: node 22 release date' }],
  tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 8, ...tool }],
  tool_choice: { type: 'tool', name: 'web_search' },
});

const createMessage = async (
  request: ReturnType<typeof sideRequest>,
  stream: boolean,
  headers: Record<string, string> = {},
): Promise<Anthropic.Message> => {
  const client = new Anthropic({
    baseURL: wire?.url,
    apiKey: 'sk-test',
    maxRetries: 0,
    defaultHeaders: headers,
  });
  const body = request as unknown as Anthropic.MessageCreateParamsNonStreaming;
  return stream ? client.messages.stream(body).finalMessage() : client.messages.create(body);
};

/** The allowed-tools header of every run the fake received. */
const allowedTools = (): string[] =>
  (wire?.backend.requests ?? [])
    .slice(firstRequest)
    .filter((entry) => entry.path.endsWith('/RunSSE'))
    .map((entry) => entry.headers['x-cursor-agent-allowed-tools'] ?? '');

const searching =
  (outcomes: FakeHostedOutcome[], references: FakeWebReference[] = [nodeRelease]): Scenario =>
  async (run) => {
    run.text('Let me search. ');
    outcomes.push(await run.webSearch({ query: 'node 22 release date', outcome: { references } }));
    run.text(`Node 22 was released on April 24, 2024 ([source](${nodeRelease.url})).`);
    run.turnEnded({ inputTokens: 120, outputTokens: 30 });
  };

describe("Claude Code's WebSearch side request", () => {
  it.each([
    ['streaming', true],
    ['non-streaming', false],
  ])('%s: the search, its sources, then the cited text, in Anthropic shapes', async (_label, stream) => {
    const outcomes: FakeHostedOutcome[] = [];
    wire = await start({ scenario: searching(outcomes) });
    const message = await createMessage(sideRequest(), stream);

    expect(message.content.map((block) => block.type)).toEqual([
      'server_tool_use',
      'web_search_tool_result',
      'text',
    ]);
    const [use, result, text] = message.content;
    expect(use).toMatchObject({
      type: 'server_tool_use',
      name: 'web_search',
      input: { query: 'node 22 release date' },
    });
    expect(use?.type === 'server_tool_use' && use.id).toMatch(/^srvtoolu_/);
    expect(result).toEqual({
      type: 'web_search_tool_result',
      tool_use_id: use?.type === 'server_tool_use' ? use.id : '',
      content: [
        {
          type: 'web_search_result',
          url: nodeRelease.url,
          title: nodeRelease.title,
          encrypted_content: expect.stringMatching(/^cbx1\./),
          page_age: null,
        },
      ],
    });
    // The text held until the search was reported; it cites the source it links.
    expect(text).toMatchObject({
      type: 'text',
      text: `Let me search. Node 22 was released on April 24, 2024 ([source](${nodeRelease.url})).`,
      citations: [{ type: 'web_search_result_location', url: nodeRelease.url, title: nodeRelease.title }],
    });
    expect(message.usage.server_tool_use).toEqual({ web_search_requests: 1 });
    expect(message.stop_reason).toBe('end_turn');

    // The SDK approved the search; the run was allowed Cursor's web search and nothing else.
    expect(outcomes).toEqual([
      { approval: { status: 'approved' }, result: 'success', callId: expect.any(String) },
    ]);
    expect(allowedTools()).toEqual(['web_search_tool_call']);
    const [run] = wire.runRequests();
    expect(run?.mcpTools).toEqual([]);
    expect(run?.text).toContain('node 22 release date');
  });

  it('never joins or supersedes the conversation it was made for, and leaves no workspace behind', async () => {
    wire = await start({
      // No pre-warmed workspaces: the only directories are the conversations'.
      config: { cursorWarmWorkspaces: 0 },
      scenario: async (run) => {
        if (run.prompt.includes('Perform a web search')) {
          await run.webSearch({ query: 'q', outcome: { references: [nodeRelease] } });
          run.text('found it');
        } else run.text(`main turn ${run.request.actionKind}`);
        run.turnEnded();
      },
    });
    const session = { 'x-claude-code-session-id': '0b7c5d8e-4b9f-4f3e-9d51-2f0a1c3b4d5e' };
    const client = new Anthropic({
      baseURL: wire.url,
      apiKey: 'sk-test',
      maxRetries: 0,
      defaultHeaders: session,
    });
    const history: Anthropic.MessageParam[] = [{ role: 'user', content: 'hello' }];
    const first = await client.messages.create({
      model: 'composer-2',
      max_tokens: 100,
      tools: [anthropicBashTool],
      messages: history,
    });
    const search = await createMessage(sideRequest(), false, session);
    expect(search.content.map((block) => block.type)).toEqual([
      'server_tool_use',
      'web_search_tool_result',
      'text',
    ]);
    const second = await client.messages.create({
      model: 'composer-2',
      max_tokens: 100,
      tools: [anthropicBashTool],
      messages: [
        ...history,
        { role: 'assistant', content: first.content },
        { role: 'user', content: 'again' },
      ],
    });
    expect(second.content).toEqual([expect.objectContaining({ text: expect.stringContaining('main turn') })]);
    // Three runs: the main turn, the search on its own agent, and the main conversation's slim follow-up
    // on the agent it already had (the first run's conversation id again).
    const runs = wire.runRequests();
    expect(runs).toHaveLength(3);
    expect(runs[2]?.conversationId).toBe(runs[0]?.conversationId);
    expect(runs[1]?.conversationId).not.toBe(runs[0]?.conversationId);
    // The search's run is billed apart from the conversation's: as the side calls' (they have none).
    const debug = async () =>
      (await (await fetch(`${wire?.url}/debug/conversations`)).json()) as {
        conversations: Array<{ runs: number }>;
        sideCalls: { runs: number; unpricedRuns: number };
      };
    await vi.waitFor(async () => {
      const { conversations, sideCalls } = await debug();
      expect(sideCalls).toMatchObject({ runs: 1, unpricedRuns: 0 });
      expect(conversations).toMatchObject([{ runs: 2 }]);
    });
    // Claude Code's main conversation runs are never allowed Cursor's web search: its WebSearch tool,
    // behind its own permission check, is the gate.
    const [main, side, followUp] = allowedTools();
    expect(main).not.toContain('web_search_tool_call');
    expect(followUp).not.toContain('web_search_tool_call');
    expect(main).toContain('mcp_tool_call');
    expect(side).toBe('web_search_tool_call');
    // Only the main conversation's workspace is left (the search's goes once its agent is released,
    // right after its answer).
    const dir = wire.workspacesDir;
    await vi.waitFor(
      async () => expect((await readdir(dir)).filter((name) => /^[0-9a-f]{32}$/.test(name))).toHaveLength(1),
      { timeout: 30_000, interval: 20 },
    );
  });

  it('applies allowed/blocked domains and max_uses to what it reports, and tells the model', async () => {
    wire = await start({
      scenario: async (run) => {
        await run.webSearch({ query: 'first', outcome: { references: [nodeRelease, otherSource] } });
        await run.webSearch({ query: 'second', outcome: { references: [nodeRelease] } });
        run.text('done');
        run.turnEnded();
      },
    });
    const message = await createMessage(
      sideRequest({ blocked_domains: ['blocked.example'], max_uses: 1 }),
      true,
    );
    const results = message.content.filter((block) => block.type === 'web_search_tool_result');
    expect(results.map((block) => block.content)).toEqual([
      [expect.objectContaining({ url: nodeRelease.url })],
      { type: 'web_search_tool_result_error', error_code: 'max_uses_exceeded' },
    ]);
    expect(message.usage.server_tool_use).toEqual({ web_search_requests: 1 });
    const prompt = wire.runRequests()[0]?.text ?? '';
    expect(prompt).toContain('`blocked.example`');
    expect(prompt).toContain('At most 1 web search');
  });
});

describe('a search that fails says so', () => {
  it.each([
    ['Cursor rejects it', { rejected: 'Web search is disabled by your team admin' }],
    ['the search errors', { error: 'search backend unavailable' }],
  ])('%s: web_search_tool_result_error, never results nor the text after it', async (_label, outcome) => {
    wire = await start({
      scenario: async (run) => {
        await run.webSearch({ query: 'node 22', outcome });
        run.text('I could not search the web.');
        run.turnEnded();
      },
    });
    for (const stream of [true, false]) {
      const message = await createMessage(sideRequest(), stream);
      // The failed search, and nothing of what the model wrote after it (it had no results to go on).
      expect(message.content).toEqual([
        expect.objectContaining({ type: 'server_tool_use', input: { query: 'node 22' } }),
        expect.objectContaining({
          type: 'web_search_tool_result',
          content: { type: 'web_search_tool_result_error', error_code: 'unavailable' },
        }),
      ]);
      expect(message.usage.server_tool_use).toEqual({ web_search_requests: 1 });
    }
    expect(wire.logs.join('\n')).not.toContain('could not be read');
  });

  it('an answer from memory (no search) is dropped: the client gets a failed search and no text', async () => {
    wire = await start({
      scenario: (run) => {
        run.text('Node 22 was released in 2023.');
        run.turnEnded();
      },
    });
    const message = await createMessage(sideRequest(), true);
    expect(message.content).toEqual([
      expect.objectContaining({ type: 'server_tool_use', input: { query: 'node 22 release date' } }),
      expect.objectContaining({
        type: 'web_search_tool_result',
        content: { type: 'web_search_tool_result_error', error_code: 'unavailable' },
      }),
    ]);
    expect(message.usage.server_tool_use).toBeUndefined();
  });
});

describe('conversations that may search (Codex, Chat Completions)', () => {
  const execCommand = {
    type: 'function' as const,
    name: 'exec_command',
    description: 'Run a command',
    parameters: { type: 'object', properties: { cmd: { type: 'string' } } },
    strict: false,
  };

  it.each([
    ['live', true],
    ['cached', false],
  ])("Codex's %s web_search: the agent may search only when it is live", async (_label, live) => {
    wire = await start({
      scenario: async (run) => {
        if (live) await run.webSearch({ query: 'node 22', outcome: { references: [nodeRelease] } });
        run.text('Node 22 shipped in April.');
        run.turnEnded();
      },
    });
    const client = new OpenAI({ baseURL: `${wire.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const response = await client.responses.create({
      model: 'composer-2',
      input: [{ role: 'user', content: 'When did Node 22 ship?' }],
      tools: [execCommand, { type: 'web_search', external_web_access: live } as never],
    });
    const [header] = allowedTools();
    if (live) {
      expect(header).toContain('web_search_tool_call');
      expect(header).toContain('web_fetch_tool_call');
      expect(header).toContain('mcp_tool_call');
      // The search is reported once Cursor's record of it arrives: here at the end, after the text.
      expect(response.output.map((item) => item.type)).toEqual(['message', 'web_search_call']);
      expect(response.output[1]).toMatchObject({
        type: 'web_search_call',
        status: 'completed',
        action: { type: 'search', query: 'node 22', sources: [{ type: 'url', url: nodeRelease.url }] },
      });
    } else {
      expect(header).not.toContain('web_search_tool_call');
      expect(response.output.at(-1)).toMatchObject({ type: 'message' });
    }
  });

  it("a later turn reports only its own searches, not the ones its agent's earlier turns ran", async () => {
    wire = await start({
      scenario: async (run) => {
        const query = run.prompt.includes('second') ? 'second query' : 'first query';
        await run.webSearch({ query, outcome: { references: [nodeRelease] } });
        run.text(`Answered ${query}.`);
        run.turnEnded();
      },
    });
    const client = new OpenAI({ baseURL: `${wire.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const tools = [execCommand, { type: 'web_search', external_web_access: true } as never];
    const first = await client.responses.create({
      model: 'composer-2',
      input: [{ role: 'user', content: 'first question' }],
      tools,
      prompt_cache_key: 'conversation-1',
    });
    const second = await client.responses.create({
      model: 'composer-2',
      input: [
        { role: 'user', content: 'first question' },
        ...(first.output as never[]),
        { role: 'user', content: 'second question' },
      ],
      tools,
      prompt_cache_key: 'conversation-1',
    });
    // The same agent (a slim follow-up), whose checkpoint holds both turns' searches.
    const [firstRun, secondRun] = wire.runRequests();
    expect(secondRun?.conversationId).toBe(firstRun?.conversationId);
    const queries = (output: typeof first.output) =>
      output.flatMap((item) =>
        item.type === 'web_search_call' && item.action.type === 'search' ? [item.action.query] : [],
      );
    expect(queries(first.output)).toEqual(['first query']);
    expect(queries(second.output)).toEqual(['second query']);
  });

  it('a search Cursor records only at the end of the turn is reported then, after the text', async () => {
    wire = await start({
      scenario: async (run) => {
        await run.webSearch({ query: 'first', outcome: { references: [nodeRelease] } });
        run.text('Between. ');
        await run.webSearch({ query: 'second', outcome: { error: 'down' } });
        run.text('Done.');
        run.turnEnded();
      },
    });
    const client = new OpenAI({ baseURL: `${wire.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const response = await client.responses.create({
      model: 'composer-2',
      input: [{ role: 'user', content: 'Search twice.' }],
      tools: [execCommand, { type: 'web_search', external_web_access: true } as never],
      stream: false,
    });
    // The text streamed as it came; the searches, in the order they ran, once the checkpoint told of them.
    expect(response.output.map((item) => item.type)).toEqual([
      'message',
      'web_search_call',
      'web_search_call',
    ]);
    expect(response.output.slice(1)).toEqual([
      expect.objectContaining({ status: 'completed', action: expect.objectContaining({ query: 'first' }) }),
      expect.objectContaining({ status: 'failed', action: expect.objectContaining({ query: 'second' }) }),
    ]);
  });

  it('Chat web_search_options: the agent may search, the sources come back as url_citation annotations', async () => {
    wire = await start({
      scenario: async (run) => {
        await run.webSearch({ query: 'node 22', outcome: { references: [nodeRelease] } });
        run.text(`Node 22 shipped in April (${nodeRelease.url}).`);
        run.turnEnded();
      },
    });
    const client = new OpenAI({ baseURL: `${wire.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: 'composer-2',
      messages: [{ role: 'user', content: 'When did Node 22 ship?' }],
      web_search_options: {},
    });
    expect(completion.choices[0]?.message.annotations).toEqual([
      {
        type: 'url_citation',
        url_citation: expect.objectContaining({ url: nodeRelease.url, title: nodeRelease.title }),
      },
    ]);
    expect(allowedTools()).toEqual([expect.stringContaining('web_search_tool_call')]);
  });
});
