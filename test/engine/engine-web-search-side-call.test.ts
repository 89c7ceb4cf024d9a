/**
 * The engine's search side call (Claude Code's WebSearch request: Anthropic, the hosted search and no
 * tool of its own): its one-off web-only agent and scratch directory, the order of what the client gets,
 * the answer that never searched, failures, retries, and its place outside the session registry and the
 * drain.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { WorkspacePort } from '../../src/engine/engine-deps.js';
import { isWebSearchCall, requestedQuery } from '../../src/engine/web-search-call.js';
import { BridgeError } from '../../src/turn/turn-error.js';
import type { TurnEvent, TurnWebSearchCall } from '../../src/turn/turn-event.js';
import type { TurnRequest, TurnWebSearch } from '../../src/turn/turn-request.js';
import type { ScriptStep } from '../../src/upstream/scripted/scripted-upstream.js';
import type { UpstreamWebCall } from '../../src/upstream/upstream-port.js';
import { captureLog } from '../helpers/capture-log.js';
import {
  assistant,
  collect,
  createTestEngine,
  never,
  request,
  textOf,
  user,
} from '../helpers/engine-helpers.js';
import { createGate, never as forever } from '../helpers/gate.js';

afterEach(() => {
  vi.useRealTimers();
});

const sessionHeader = (value: string) => ({
  identity: { nativeSessionId: { value, source: 'x-claude-code-session-id' } },
});

/** Claude Code's WebSearch side request, as the Anthropic adapter reads it. */
const sideCall = (
  query = 'node 22 release date',
  webSearch: Partial<TurnWebSearch> = {},
  extra: Partial<TurnRequest> = {},
): TurnRequest =>
  request([user(`Perform a web search for the query: ${query}`)], {
    system: [{ type: 'text', text: 'You are an assistant for performing a web search tool use' }],
    tools: [],
    webSearch: { name: 'web_search', maxUses: 8, ...webSearch },
    toolChoice: { type: 'tool', name: 'web_search' },
    ...sessionHeader('conversation-1'),
    ...extra,
  });

const found = (id: string, urls: string[], query = `query ${id}`): ScriptStep => ({
  type: 'web-call',
  call: {
    id,
    kind: 'search',
    query,
    result: { status: 'success', references: urls.map((url) => ({ title: url, url, chunk: '' })) },
  },
});

const failed = (id: string, result: Extract<UpstreamWebCall['result'], { status: 'error' | 'rejected' }>) =>
  ({ type: 'web-call', call: { id, kind: 'search', query: `query ${id}`, result } }) as const;

const types = (events: TurnEvent[]) => events.map((event) => event.type);
const searches = (events: TurnEvent[]) =>
  events.filter((event): event is TurnWebSearchCall => event.type === 'web-search');

/** A workspace port that records what the engine asks of it. */
const recordingWorkspace = () => {
  const log: string[] = [];
  let scratches = 0;
  const workspace: WorkspacePort = {
    prepare: async (key) => {
      log.push(`prepare ${key}`);
      return { workspaceDir: `/sessions/${key}`, grounding: { head: 'HEAD', tail: 'TAIL' } };
    },
    remove: async (key) => {
      log.push(`remove ${key}`);
    },
    scratch: async () => {
      scratches += 1;
      const workspaceDir = `/scratch/side-${scratches}`;
      log.push(`scratch ${workspaceDir}`);
      return {
        workspaceDir,
        release: async () => {
          log.push(`release ${workspaceDir}`);
        },
      };
    },
  };
  return { workspace, log };
};

describe('which requests are search side calls', () => {
  it.each<[string, Partial<TurnRequest>, boolean]>([
    ['Anthropic, web search, no tools', { webSearch: { name: 'web_search' }, tools: [] }, true],
    [
      'Anthropic, web search beside a tool',
      {
        webSearch: { name: 'web_search' },
        tools: [{ kind: 'function', name: 'Bash', inputSchema: { type: 'object' } }],
      },
      false,
    ],
    ['Anthropic, no web search, no tools', { tools: [] }, false],
    [
      'Responses, web search, no tools',
      { protocol: 'openai-responses', webSearch: { name: 'web_search' }, tools: [] },
      false,
    ],
    [
      'Chat, web search, no tools',
      { protocol: 'openai-chat', webSearch: { name: 'web_search' }, tools: [] },
      false,
    ],
  ])('%s', (_name, extra, expected) => {
    expect(isWebSearchCall(request([user('hi')], extra))).toBe(expected);
  });
});

describe('the query of a search the model never made', () => {
  it.each<[string, string[], string]>([
    ['Claude Code’s phrase', ['Perform a web search for the query: node 22'], 'node 22'],
    ['blanks around the query', ['Perform a web search for the query:   node 22  \n'], 'node 22'],
    ['a query over lines', ['Perform a web search for the query: a\nb'], 'a\nb'],
    ['a query with a colon', ['Perform a web search for the query: node: 22'], 'node: 22'],
    ['any other text, whole', ['what is new in node 22?'], 'what is new in node 22?'],
    ['the last user message', ['first', 'Perform a web search for the query: second'], 'second'],
  ])('%s', (_name, texts, query) => {
    expect(requestedQuery(request(texts.map(user), { tools: [] }))).toBe(query);
  });

  it('is cut to 500 characters', () => {
    const long = 'q'.repeat(2_000);
    expect(requestedQuery(request([user(`Perform a web search for the query: ${long}`)]))).toBe(
      'q'.repeat(500),
    );
  });
});

describe('a search side call', () => {
  it('creates a one-off web-only agent in a scratch directory of its own, with no tools, and releases both', async () => {
    const { workspace, log } = recordingWorkspace();
    const { engine, upstream } = createTestEngine(
      [found('s1', ['https://nodejs.org/']), { type: 'end', status: 'finished' }],
      { workspace, resolveModel: () => ({ model: 'search-model', route: 'web-search' }) },
    );
    const events = await collect(
      await engine.handleTurn(
        // A request that asks for page opens too: the side call's agent searches only.
        sideCall('node 22', { openPages: true }, { reasoning: { requested: true, effort: 'low' } }),
        never,
      ),
    );
    expect(events.at(-1)).toMatchObject({ type: 'turn-end', stopReason: 'end' });
    expect(upstream.sessions).toHaveLength(1);
    expect(upstream.calls).toHaveLength(1);
    const [call] = upstream.calls;
    expect(call?.sessionOptions).toEqual({
      workspaceDir: '/scratch/side-1',
      webTools: { fetch: false, only: true },
    });
    expect(call?.input.tools).toEqual([]);
    expect(call?.input.model).toBe('search-model');
    expect(call?.input.reasoning).toEqual({ requested: true, effort: 'low' });
    // No host tool can be called, so nothing is checked.
    expect(call?.input.checkToolCall).toBeUndefined();
    await vi.waitFor(() => expect(log).toContain('release /scratch/side-1'), { timeout: 30_000 });
    expect(log).toEqual(['scratch /scratch/side-1', 'release /scratch/side-1']);
    expect(upstream.sessions[0]?.disposed).toBe(true);
    await engine.close();
  });

  it("the prompt holds the query and the request's rules, not the conversation's grounding", async () => {
    const { engine, upstream } = createTestEngine([
      found('s1', ['https://nodejs.org/']),
      { type: 'end', status: 'finished' },
    ]);
    await collect(
      await engine.handleTurn(
        sideCall('node 22 release date', {
          allowedDomains: ['nodejs.org', 'github.com'],
          blockedDomains: ['gist.github.com'],
          maxUses: 3,
          userLocation: { city: 'Lyon', country: 'FR', timezone: 'Europe/Paris' },
        }),
        never,
      ),
    );
    await engine.close();
    const prompt = upstream.calls[0]?.input.prompt.text ?? '';
    expect(prompt).toContain('Perform a web search for the query: node 22 release date');
    expect(prompt).toContain('`nodejs.org`, `github.com`');
    expect(prompt).toContain('`gist.github.com`');
    expect(prompt).toContain('At most 3 web searches');
    expect(prompt).toContain('Lyon, FR, time zone Europe/Paris');
    expect(prompt).toContain('do not answer from memory');
    // The client's system prompt travels as context, as for any fresh agent.
    expect(prompt).toContain('You are an assistant for performing a web search tool use');
    // The conversation's grounding (the workspace's head and tail) is not the side call's.
    expect(prompt).not.toContain('HEAD');
    expect(prompt).not.toContain('TAIL');
    // The rules come after the request, the task before it.
    expect(prompt.indexOf('<web_search_task>')).toBeLessThan(prompt.indexOf('node 22 release date'));
    expect(prompt.indexOf('<web_search_rules>')).toBeGreaterThan(prompt.indexOf('node 22 release date'));
  });

  it('emits every search as it comes and the held text after the last of them; reasoning is not held', async () => {
    const gate = createGate();
    const { engine } = createTestEngine([
      { type: 'reasoning-delta', text: 'I will search.' },
      { type: 'reasoning-end' },
      { type: 'text-delta', text: 'Searching... ' },
      found('s1', ['https://a.example/']),
      { type: 'text-delta', text: 'A says yes. ' },
      { type: 'wait', until: gate.opened },
      found('s2', ['https://b.example/']),
      { type: 'text-delta', text: 'B agrees.' },
      { type: 'end', status: 'finished' },
    ]);
    const iterator = (await engine.handleTurn(sideCall(), never))[Symbol.asyncIterator]();
    const early: TurnEvent[] = [];
    // Everything up to the first search arrives before the run goes on; no text among it.
    while (!early.some((event) => event.type === 'web-search')) {
      const next = await iterator.next();
      if (next.done === true) break;
      early.push(next.value);
    }
    expect(types(early)).toEqual(['reasoning-start', 'reasoning-delta', 'reasoning-end', 'web-search']);
    gate.open();
    const rest: TurnEvent[] = [];
    for (let next = await iterator.next(); next.done !== true; next = await iterator.next())
      rest.push(next.value);
    await engine.close();
    // Each stretch of text between searches was a block of its own; all of them come after the searches.
    expect(types(rest)).toEqual([
      'web-search',
      ...['text-start', 'text-delta', 'text-end'],
      ...['text-start', 'text-delta', 'text-end'],
      ...['text-start', 'text-delta', 'text-end'],
      'turn-end',
    ]);
    expect(searches([...early, ...rest]).map((search) => search.id)).toEqual(['s1', 's2']);
    expect(textOf(rest)).toBe('Searching... A says yes. B agrees.');
  });

  it('an answer without a search is dropped: one failed not-performed search with the query asked for', async () => {
    const { engine } = createTestEngine([
      { type: 'text-delta', text: 'From memory: April 2024.' },
      { type: 'usage', usage: { inputTokens: 5, outputTokens: 6, cacheReadTokens: 0, cacheWriteTokens: 0 } },
      { type: 'end', status: 'finished' },
    ]);
    const events = await collect(await engine.handleTurn(sideCall('when did node 22 ship'), never));
    await engine.close();
    expect(types(events)).toEqual(['usage', 'web-search', 'turn-end']);
    expect(events[1]).toEqual({
      type: 'web-search',
      id: expect.stringMatching(/^search-[0-9a-f]{16}$/),
      action: { kind: 'search', query: 'when did node 22 ship' },
      outcome: {
        status: 'failed',
        code: 'not-performed',
        message: expect.stringContaining('without searching'),
      },
    });
    expect(textOf(events)).toBe('');
    expect(JSON.stringify(events)).not.toContain('April 2024');
    expect(events.at(-1)).toMatchObject({ type: 'turn-end', stopReason: 'end' });
  });

  it('each answer without a search gets its own id for the failed search', async () => {
    const { engine } = createTestEngine([
      { type: 'text-delta', text: 'no' },
      { type: 'end', status: 'finished' },
    ]);
    const first = searches(await collect(await engine.handleTurn(sideCall('one'), never)));
    const second = searches(await collect(await engine.handleTurn(sideCall('two'), never)));
    await engine.close();
    expect(first).toHaveLength(1);
    expect(second).toHaveLength(1);
    expect(first[0]?.id).not.toBe(second[0]?.id);
  });

  it('a search past max_uses is refused but the answer stands when another search found something', async () => {
    const { engine } = createTestEngine([
      found('s1', ['https://a.example/']),
      found('s2', ['https://b.example/']),
      { type: 'text-delta', text: 'answer' },
      { type: 'end', status: 'finished' },
    ]);
    const events = await collect(await engine.handleTurn(sideCall('q', { maxUses: 1 }), never));
    await engine.close();
    expect(searches(events).map((search) => search.outcome.status)).toEqual(['completed', 'failed']);
    expect(textOf(events)).toBe('answer');
  });

  it('every search filtered to nothing still counts as found: the answer is passed on', async () => {
    // The search ran and completed; the domain rules left no source. The text is the model's reading of it.
    const { engine } = createTestEngine([
      found('s1', ['https://elsewhere.example/']),
      { type: 'text-delta', text: 'nothing on the allowed sites' },
      { type: 'end', status: 'finished' },
    ]);
    const events = await collect(
      await engine.handleTurn(sideCall('q', { allowedDomains: ['nodejs.org'] }), never),
    );
    await engine.close();
    expect(searches(events)[0]?.outcome).toEqual({ status: 'completed', sources: [] });
    expect(textOf(events)).toBe('nothing on the allowed sites');
  });

  it('every search refused upstream: the failures, no text', async () => {
    const { engine } = createTestEngine([
      failed('s1', { status: 'rejected', reason: 'web search is off for this team' }),
      { type: 'text-delta', text: 'I think it is 2024.' },
      { type: 'end', status: 'finished' },
    ]);
    const events = await collect(await engine.handleTurn(sideCall(), never));
    await engine.close();
    expect(types(events)).toEqual(['web-search', 'turn-end']);
    expect(searches(events)[0]?.outcome).toEqual({
      status: 'failed',
      code: 'unavailable',
      message: 'Cursor refused the web search: web search is off for this team',
    });
  });

  it('an upstream error after a search: the search, then the error; the held text is never sent', async () => {
    const { workspace, log } = recordingWorkspace();
    const { engine, upstream } = createTestEngine(
      [
        found('s1', ['https://a.example/']),
        { type: 'text-delta', text: 'partial answer' },
        { type: 'error', error: { kind: 'api', message: 'Cursor run failed', retryable: true } },
      ],
      { workspace },
    );
    const events = await collect(await engine.handleTurn(sideCall(), never));
    expect(types(events)).toEqual(['web-search', 'error']);
    expect(events.at(-1)).toEqual({
      type: 'error',
      error: { kind: 'api', message: 'Cursor run failed', retryable: true },
    });
    await vi.waitFor(() => expect(log).toContain('release /scratch/side-1'), { timeout: 30_000 });
    expect(upstream.sessions[0]?.disposed).toBe(true);
    expect((await engine.metrics()).failedTurns).toBe(1);
    await engine.close();
  });

  it('a run that fails to start is an error event; the agent and the scratch directory are released', async () => {
    const { workspace, log } = recordingWorkspace();
    const { engine, upstream } = createTestEngine(
      { startError: { kind: 'authentication', message: 'bad key', retryable: false } },
      { workspace },
    );
    const events = await collect(await engine.handleTurn(sideCall(), never));
    expect(types(events)).toEqual(['error']);
    expect(events[0]).toMatchObject({ type: 'error', error: { kind: 'authentication', message: 'bad key' } });
    await vi.waitFor(() => expect(log).toContain('release /scratch/side-1'), { timeout: 30_000 });
    expect(upstream.sessions[0]?.disposed).toBe(true);
    expect(engine.turnsInProgress()).toBe(0);
    await engine.close();
  });

  it('a preflight failure is a plain error before the stream: no agent, no scratch directory, nothing in progress', async () => {
    const { workspace, log } = recordingWorkspace();
    const { engine, upstream } = createTestEngine([{ type: 'end', status: 'finished' }], { workspace });
    upstream.preflightError = { kind: 'authentication', message: 'no key', retryable: false };
    await expect(engine.handleTurn(sideCall(), never)).rejects.toBeInstanceOf(BridgeError);
    expect(upstream.sessions).toHaveLength(0);
    expect(log).toEqual([]);
    expect(engine.turnsInProgress()).toBe(0);
    await engine.close();
  });

  it('a client that leaves cancels the run and releases the agent and the scratch directory', async () => {
    const { workspace, log } = recordingWorkspace();
    const { engine, upstream } = createTestEngine(
      [
        found('s1', ['https://a.example/']),
        { type: 'wait', until: forever },
        { type: 'end', status: 'finished' },
      ],
      { workspace },
    );
    const abort = new AbortController();
    const seen: TurnEvent[] = [];
    for await (const event of await engine.handleTurn(sideCall(), abort.signal)) {
      seen.push(event);
      if (event.type === 'web-search') abort.abort();
    }
    expect(types(seen)).toEqual(['web-search']);
    await vi.waitFor(() => expect(upstream.calls[0]?.cancelled).toBe(true), { timeout: 30_000 });
    await vi.waitFor(() => expect(log).toContain('release /scratch/side-1'), { timeout: 30_000 });
    expect(upstream.sessions[0]?.disposed).toBe(true);
    await vi.waitFor(() => expect(engine.turnsInProgress()).toBe(0), { timeout: 30_000 });
    await engine.close();
  });

  it('is counted in progress while it runs, and not after', async () => {
    const gate = createGate();
    const { engine } = createTestEngine([
      { type: 'wait', until: gate.opened },
      found('s1', ['https://a.example/']),
      { type: 'end', status: 'finished' },
    ]);
    const events = await engine.handleTurn(sideCall(), never);
    expect(engine.turnsInProgress()).toBe(1);
    const done = collect(events);
    gate.open();
    await done;
    expect(engine.turnsInProgress()).toBe(0);
    await engine.close();
  });
});

describe('a search side call and the session registry', () => {
  const conversation = (messages: Parameters<typeof request>[0]) =>
    request(messages, sessionHeader('conversation-1'));

  it("never takes, joins or evicts a conversation's session: the conversation's next turn is slim on its agent", async () => {
    const { lines, logger } = captureLog('debug');
    const { engine, upstream } = createTestEngine(
      (input) =>
        input.tools.length === 0
          ? [
              found('s', ['https://a.example/']),
              { type: 'text-delta', text: 'found' },
              { type: 'end', status: 'finished' },
            ]
          : [
              { type: 'text-delta', text: 'main' },
              { type: 'end', status: 'finished' },
            ],
      { maxSessions: 1, logger },
    );
    await collect(await engine.handleTurn(conversation([user('hello')]), never));
    const side = await collect(await engine.handleTurn(sideCall(), never));
    expect(searches(side)).toHaveLength(1);
    await collect(
      await engine.handleTurn(conversation([user('hello'), assistant('main'), user('again')]), never),
    );
    const metrics = await engine.metrics();
    await engine.close();

    expect(upstream.calls.map((call) => call.sessionId)).toEqual(['scripted-1', 'scripted-2', 'scripted-1']);
    expect(metrics).toMatchObject({ replayed: 1, slim: 1, evicted: 0, sessions: 1 });
    // The side call planned nothing: the two plans are the conversation's.
    expect(lines.filter((line) => line['msg'] === 'planned turn').map((line) => line['plan'])).toEqual([
      'replay',
      'slim',
    ]);
  });

  it('never uses the workspace of a session (no prepare, no remove)', async () => {
    const { workspace, log } = recordingWorkspace();
    const { engine } = createTestEngine(
      [found('s', ['https://a.example/']), { type: 'end', status: 'finished' }],
      {
        workspace,
      },
    );
    await collect(await engine.handleTurn(sideCall(), never));
    await engine.close();
    expect(log.filter((line) => line.startsWith('prepare') || line.startsWith('remove'))).toEqual([]);
  });

  it('a Responses request with web search and no tools is a conversation, not a side call', async () => {
    const { workspace, log } = recordingWorkspace();
    const { engine, upstream } = createTestEngine(
      [
        found('s', ['https://a.example/']),
        { type: 'text-delta', text: 'hi' },
        { type: 'end', status: 'finished' },
      ],
      { workspace },
    );
    const events = await collect(
      await engine.handleTurn(
        request([user('search for node 22')], {
          protocol: 'openai-responses',
          tools: [],
          webSearch: { name: 'web_search' },
        }),
        never,
      ),
    );
    expect((await engine.metrics()).sessions).toBe(1);
    await engine.close();
    // Not held: the text and the search in the run's order.
    expect(types(events)).toEqual(['web-search', 'text-start', 'text-delta', 'text-end', 'turn-end']);
    expect(upstream.calls[0]?.sessionOptions).toEqual({
      workspaceDir: expect.stringMatching(/^\/sessions\/[0-9a-f]{32}$/),
      webTools: { fetch: false, only: false },
    });
    expect(log.some((line) => line.startsWith('scratch'))).toBe(false);
    expect(log[0]).toMatch(/^prepare [0-9a-f]{32}$/);
  });
});

describe('identical search side calls', () => {
  it('concurrent identical requests share one run and get the same events', async () => {
    const gate = createGate();
    const { engine, upstream } = createTestEngine([
      { type: 'wait', until: gate.opened },
      { type: 'text-delta', text: 'memory' },
      { type: 'end', status: 'finished' },
    ]);
    const first = engine.handleTurn(sideCall(), never).then(collect);
    const second = engine.handleTurn(sideCall(), never).then(collect);
    gate.open();
    const [a, b] = await Promise.all([first, second]);
    await engine.close();
    expect(upstream.calls).toHaveLength(1);
    // The same failed search, id included: one answer, not two.
    expect(a).toEqual(b);
    expect(searches(a)).toHaveLength(1);
  });

  it('a retry after the answer is replayed without a second run; another query runs its own', async () => {
    const { engine, upstream } = createTestEngine([
      found('s', ['https://a.example/']),
      { type: 'text-delta', text: 'answer' },
      { type: 'end', status: 'finished' },
    ]);
    const first = await collect(await engine.handleTurn(sideCall('one'), never));
    const retry = await collect(await engine.handleTurn(sideCall('one'), never));
    expect(retry).toEqual(first);
    expect(upstream.calls).toHaveLength(1);
    await collect(await engine.handleTurn(sideCall('two'), never));
    expect(upstream.calls).toHaveLength(2);
    await engine.close();
  });

  it('the same query under other domain rules is a search of its own, not a replay', async () => {
    // Claude Code's model retries a search with allowed_domains narrowed: the message is the same.
    const { engine, upstream } = createTestEngine([
      found('s', ['https://a.example/', 'https://b.example/']),
      { type: 'end', status: 'finished' },
    ]);
    const wide = await collect(await engine.handleTurn(sideCall('one'), never));
    const narrow = await collect(
      await engine.handleTurn(sideCall('one', { allowedDomains: ['b.example'] }), never),
    );
    await engine.close();
    expect(upstream.calls).toHaveLength(2);
    const urls = (events: TurnEvent[]) =>
      searches(events).flatMap((search) =>
        search.outcome.status === 'completed' ? search.outcome.sources.map((source) => source.url) : [],
      );
    expect(urls(wide)).toEqual(['https://a.example/', 'https://b.example/']);
    expect(urls(narrow)).toEqual(['https://b.example/']);
  });
});

describe('search side calls and the drain', () => {
  /** Whether `promise` settles while the fake clock moves by `ms`. */
  const settlesWithin = async (promise: Promise<unknown>, ms: number): Promise<boolean> => {
    let settled = false;
    void promise.then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(ms);
    return settled;
  };
  const fakeClock = () =>
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });

  const parkedConversation: ScriptStep[] = [
    { type: 'tool-call', toolCallId: 'call-1', toolName: 'WebSearch', input: { query: 'node 22' } },
    { type: 'tool-batch-end' },
    { type: 'await-tool-results' },
    { type: 'end', status: 'finished' },
  ];
  const sideScript: ScriptStep[] = [found('s', ['https://a.example/']), { type: 'end', status: 'finished' }];

  it('refuses a side call while draining with a retryable unavailable error, before any agent or directory', async () => {
    fakeClock();
    const { workspace, log } = recordingWorkspace();
    const { engine, upstream } = createTestEngine(sideScript, { workspace });
    void engine.drain();
    const refusal = await engine.handleTurn(sideCall(), never).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(BridgeError);
    expect((refusal as BridgeError).turnError).toMatchObject({
      kind: 'unavailable',
      retryable: true,
      retryAfterSeconds: 2,
    });
    expect(upstream.sessions).toHaveLength(0);
    expect(log).toEqual([]);
    await engine.close();
  });

  it('refuses a side call without a session id while draining', async () => {
    fakeClock();
    const { engine } = createTestEngine(sideScript);
    void engine.drain();
    await expect(engine.handleTurn(sideCall('q', {}, { identity: {} }), never)).rejects.toThrow('draining');
    await engine.close();
  });

  it('serves a side call made for a conversation in flight here (its WebSearch call is parked)', async () => {
    fakeClock();
    const { engine, upstream } = createTestEngine((input) =>
      input.tools.length === 0 ? sideScript : parkedConversation,
    );
    const first = await collect(
      await engine.handleTurn(request([user('search node 22')], sessionHeader('conversation-1')), never),
    );
    expect(first.at(-1)).toMatchObject({ type: 'turn-end', stopReason: 'tool-use' });
    void engine.drain();
    const side = await collect(await engine.handleTurn(sideCall(), never));
    expect(side.at(-1)).toMatchObject({ type: 'turn-end', stopReason: 'end' });
    expect(upstream.calls.map((call) => call.sessionOptions.webTools)).toEqual([
      undefined,
      { fetch: false, only: true },
    ]);
    // Another conversation's side call is still refused.
    await expect(
      engine.handleTurn(sideCall('q', {}, sessionHeader('conversation-2')), never),
    ).rejects.toThrow('draining');
    await engine.close();
  });

  it('refuses a side call whose conversation is here but idle', async () => {
    fakeClock();
    const { engine } = createTestEngine((input) =>
      input.tools.length === 0 ? sideScript : [{ type: 'end', status: 'finished' }],
    );
    await collect(await engine.handleTurn(request([user('hello')], sessionHeader('conversation-1')), never));
    void engine.drain();
    await expect(engine.handleTurn(sideCall(), never)).rejects.toThrow('draining');
    await engine.close();
  });

  it('the drain waits for a side call in flight', async () => {
    fakeClock();
    const gate = createGate();
    const { engine } = createTestEngine([
      { type: 'wait', until: gate.opened },
      found('s', ['https://a.example/']),
      { type: 'end', status: 'finished' },
    ]);
    const events = await engine.handleTurn(sideCall(), never);
    const done = collect(events);
    const drained = engine.drain();
    expect(await settlesWithin(drained, 60_000)).toBe(false);
    gate.open();
    expect(searches(await done)).toHaveLength(1);
    expect(await settlesWithin(drained, 100)).toBe(true);
    await engine.close();
  });
});
