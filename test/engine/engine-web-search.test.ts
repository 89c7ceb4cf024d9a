/**
 * Hosted web search in the engine: the request's rules applied to Cursor's web calls (a table), the
 * search side call on its one-off web-only agent, and conversations whose agent may search.
 */
import { describe, expect, it } from 'vitest';
import { maxHeldTextChars } from '../../src/engine/web-search-call.js';
import { passesDomainRules, WebSearchPolicy } from '../../src/engine/web-search-policy.js';
import type { TurnEvent, TurnWebSearchCall } from '../../src/turn/turn-event.js';
import type { TurnWebSearch } from '../../src/turn/turn-request.js';
import type { UpstreamWebCall } from '../../src/upstream/upstream-port.js';
import { collect, createTestEngine, never, request, user } from '../helpers/engine-helpers.js';

const reference = (url: string) => ({ title: `T ${url}`, url, chunk: `About ${url}` });
const searchCall = (id: string, urls: string[]): UpstreamWebCall => ({
  id,
  kind: 'search',
  query: `q ${id}`,
  result: { status: 'success', references: urls.map(reference) },
});

describe('domain rules', () => {
  it.each([
    ['https://nodejs.org/a', { allowedDomains: ['nodejs.org'] }, true],
    ['https://docs.nodejs.org/a', { allowedDomains: ['nodejs.org'] }, true],
    ['https://www.nodejs.org/a', { allowedDomains: ['nodejs.org'] }, true],
    ['https://nodejs.org.evil.example/a', { allowedDomains: ['nodejs.org'] }, false],
    ['https://notnodejs.org/a', { allowedDomains: ['nodejs.org'] }, false],
    ['https://nodejs.org/a', { allowedDomains: ['https://nodejs.org/en/blog'] }, false],
    ['https://nodejs.org/en/blog/22', { allowedDomains: ['https://nodejs.org/en/blog'] }, true],
    ['https://nodejs.org/a', { blockedDomains: ['nodejs.org'] }, false],
    ['https://api.github.com/x', { blockedDomains: ['github.com'] }, false],
    ['https://example.com/x', { blockedDomains: ['github.com'] }, true],
    [
      'https://docs.github.com/x',
      { allowedDomains: ['github.com'], blockedDomains: ['docs.github.com'] },
      false,
    ],
    ['not a url', {}, false],
    ['https://anything.example/', {}, true],
  ] as const)('%s under %j: %s', (url, rules, passes) => {
    expect(passesDomainRules(url, rules as Partial<TurnWebSearch>)).toBe(passes);
  });
});

describe('WebSearchPolicy', () => {
  it('filters sources, counts searches against max_uses, and says why a search gave nothing', () => {
    const policy = new WebSearchPolicy({
      name: 'web_search',
      blockedDomains: ['blocked.example'],
      maxUses: 2,
    });
    const events = [
      policy.apply(searchCall('a', ['https://ok.example/1', 'https://blocked.example/2'])),
      policy.apply({
        id: 'b',
        kind: 'search',
        query: 'refused',
        result: { status: 'rejected', reason: 'team admin' },
      }),
      policy.apply(searchCall('c', ['https://ok.example/3'])),
      policy.apply({
        id: 'd',
        kind: 'fetch',
        url: 'https://ok.example/page',
        result: { status: 'success', url: 'https://ok.example/page', markdown: '# Page' },
      }),
    ];
    expect(events).toEqual([
      {
        type: 'web-search',
        id: 'a',
        action: { kind: 'search', query: 'q a' },
        outcome: {
          status: 'completed',
          sources: [
            {
              url: 'https://ok.example/1',
              title: 'T https://ok.example/1',
              snippet: 'About https://ok.example/1',
            },
          ],
        },
      },
      {
        type: 'web-search',
        id: 'b',
        action: { kind: 'search', query: 'refused' },
        outcome: {
          status: 'failed',
          code: 'unavailable',
          message: 'Cursor refused the web search: team admin',
        },
      },
      {
        type: 'web-search',
        id: 'c',
        action: { kind: 'search', query: 'q c' },
        outcome: {
          status: 'failed',
          code: 'max-uses-exceeded',
          message: expect.stringContaining('allows 2 web searches'),
        },
      },
      // A page open the request did not ask for is not reported.
      undefined,
    ]);
  });

  it('reports page opens when the request asks for them, and failed ones', () => {
    const policy = new WebSearchPolicy({ name: 'web_search', openPages: true });
    expect(
      policy.apply({
        id: 'f',
        kind: 'fetch',
        url: 'https://x.example/p',
        result: { status: 'success', url: 'https://x.example/p', markdown: '# P' },
      }),
    ).toEqual({
      type: 'web-search',
      id: 'f',
      action: { kind: 'open-page', url: 'https://x.example/p' },
      outcome: {
        status: 'completed',
        sources: [{ url: 'https://x.example/p', title: 'https://x.example/p', snippet: '# P' }],
      },
    });
    expect(
      policy.apply({
        id: 'g',
        kind: 'fetch',
        url: 'https://x.example/q',
        result: { status: 'error', message: '404' },
      })?.outcome,
    ).toEqual({
      status: 'failed',
      code: 'unavailable',
      message: "Cursor's page fetch failed: 404",
    });
  });
});

/** Claude Code's WebSearch side request, as the Anthropic adapter reads it. */
const sideRequest = (extra: Partial<TurnWebSearch> = {}) =>
  request([user('Perform a web search for the query: node 22 release date')], {
    tools: [],
    webSearch: { name: 'web_search', maxUses: 8, ...extra },
    toolChoice: { type: 'tool', name: 'web_search' },
  });

const types = (events: TurnEvent[]) => events.map((event) => event.type);

describe('a search side call', () => {
  it('runs on a one-off web-only agent: searches first, the held text after them', async () => {
    const { engine, upstream } = createTestEngine([
      { type: 'text-delta', text: 'Let me look. ' },
      { type: 'web-call', call: searchCall('s1', ['https://nodejs.org/22']) },
      { type: 'text-delta', text: 'It shipped in April.' },
      { type: 'end', status: 'finished' },
    ]);
    const events = await collect(
      await engine.handleTurn(sideRequest({ allowedDomains: ['nodejs.org'] }), never),
    );
    await engine.close();

    expect(types(events)).toEqual([
      'web-search',
      // The text before the search and the text after it: two blocks, both after the search.
      ...['text-start', 'text-delta', 'text-end'],
      ...['text-start', 'text-delta', 'text-end'],
      'turn-end',
    ]);
    expect(upstream.calls.map((call) => call.sessionOptions)).toEqual([
      { workspaceDir: '/tmp/scratch', webTools: { fetch: false, only: true } },
    ]);
    const [call] = upstream.calls;
    expect(call?.input.tools).toEqual([]);
    expect(call?.input.prompt.text).toContain('Perform a web search for the query: node 22 release date');
    expect(call?.input.prompt.text).toContain('`nodejs.org`');
    expect(call?.input.prompt.text).toContain('do not answer from memory');
  });

  it('an answer without a search is dropped: the client gets one failed search with the query asked for', async () => {
    const { engine } = createTestEngine([
      { type: 'text-delta', text: 'From memory: 2023.' },
      { type: 'end', status: 'finished' },
    ]);
    const events = await collect(await engine.handleTurn(sideRequest(), never));
    await engine.close();

    expect(types(events)).toEqual(['web-search', 'turn-end']);
    expect(events[0]).toEqual({
      type: 'web-search',
      id: expect.any(String),
      action: { kind: 'search', query: 'node 22 release date' },
      outcome: { status: 'failed', code: 'not-performed', message: expect.any(String) },
    });
  });

  it('when every search failed, the failures are all the client gets', async () => {
    const { engine } = createTestEngine([
      {
        type: 'web-call',
        call: { id: 'x', kind: 'search', query: 'q', result: { status: 'error', message: 'down' } },
      },
      { type: 'text-delta', text: 'I could not search, but I think 2023.' },
      { type: 'end', status: 'finished' },
    ]);
    const events = await collect(await engine.handleTurn(sideRequest(), never));
    await engine.close();
    expect(types(events)).toEqual(['web-search', 'turn-end']);
    expect((events[0] as TurnWebSearchCall).outcome).toMatchObject({ status: 'failed', code: 'unavailable' });
  });

  it('never joins the conversation of its session id: the conversation keeps its agent and goes on slim', async () => {
    const { engine, upstream } = createTestEngine((input) =>
      input.tools.length === 0
        ? [
            { type: 'web-call', call: searchCall('s', ['https://a.example/']) },
            { type: 'text-delta', text: 'found' },
            { type: 'end', status: 'finished' },
          ]
        : [
            { type: 'text-delta', text: 'main' },
            { type: 'end', status: 'finished' },
          ],
    );
    const history = [user('hello')];
    await collect(await engine.handleTurn(request(history), never));
    await collect(await engine.handleTurn(sideRequest(), never));
    await collect(
      await engine.handleTurn(
        request([
          ...history,
          { role: 'assistant', content: [{ type: 'text', text: 'main' }] },
          user('again'),
        ]),
        never,
      ),
    );
    await engine.close();

    // Main conversation: one agent for both of its turns (the second is slim); the search: its own.
    expect(upstream.calls.map((call) => call.sessionId)).toEqual(['scripted-1', 'scripted-2', 'scripted-1']);
    expect(upstream.calls[2]?.input.prompt.text).not.toContain('hello');
    expect(upstream.calls[0]?.sessionOptions.webTools).toBeUndefined();
  });

  it('holds a bounded amount of answer text', async () => {
    const chunk = 'x'.repeat(300_000);
    const { engine } = createTestEngine([
      { type: 'web-call', call: searchCall('s', ['https://a.example/']) },
      ...Array.from({ length: 5 }, () => ({ type: 'text-delta' as const, text: chunk })),
      { type: 'end', status: 'finished' },
    ]);
    const events = await collect(await engine.handleTurn(sideRequest(), never));
    await engine.close();
    const text = events.flatMap((event) => (event.type === 'text-delta' ? [event.delta] : [])).join('');
    expect(text.length).toBe(maxHeldTextChars);
  });

  it('identical concurrent requests share one run', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { engine, upstream } = createTestEngine([
      { type: 'wait', until: gate },
      { type: 'web-call', call: searchCall('s', ['https://a.example/']) },
      { type: 'end', status: 'finished' },
    ]);
    const first = engine.handleTurn(sideRequest(), never).then(collect);
    const second = engine.handleTurn(sideRequest(), never).then(collect);
    release();
    const [a, b] = await Promise.all([first, second]);
    await engine.close();
    expect(types(a)).toEqual(types(b));
    expect(upstream.calls).toHaveLength(1);
  });
});

describe('a conversation that may search', () => {
  const codexTurn = (messages: Parameters<typeof request>[0], webSearch?: TurnWebSearch) =>
    request(messages, {
      protocol: 'openai-responses',
      ...(webSearch === undefined ? {} : { webSearch }),
    });

  it('gets an agent with the web tools, the search note in its prompt, and the searches reported', async () => {
    const { engine, upstream } = createTestEngine([
      [
        { type: 'web-call', call: searchCall('s', ['https://a.example/']) },
        { type: 'text-delta', text: 'one' },
        { type: 'end', status: 'finished' },
      ],
      [
        { type: 'text-delta', text: 'two' },
        { type: 'end', status: 'finished' },
      ],
    ]);
    const live: TurnWebSearch = { name: 'web_search', openPages: true };
    const first = await collect(await engine.handleTurn(codexTurn([user('search')], live), never));
    expect(types(first)).toContain('web-search');
    expect(upstream.calls[0]?.sessionOptions.webTools).toEqual({ fetch: true, only: false });
    expect(upstream.calls[0]?.input.prompt.text).toContain('<web_search>');

    // Web search turned off: only a new agent can drop the tools, so the transcript is replayed to one.
    await collect(
      await engine.handleTurn(
        codexTurn([
          user('search'),
          { role: 'assistant', content: [{ type: 'text', text: 'one' }] },
          user('no search now'),
        ]),
        never,
      ),
    );
    await engine.close();
    expect(upstream.sessions).toHaveLength(2);
    expect(upstream.calls[1]?.sessionOptions.webTools).toBeUndefined();
    expect(upstream.calls[1]?.input.prompt.text).toContain('search');
    expect(upstream.calls[1]?.input.prompt.text).not.toContain('<web_search>');
  });
});
