import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import type { SseFrame } from '../../../src/protocols/sse-frame.js';
import { convertOpenaiResponsesRequestToTurn } from '../../../src/protocols/openai-responses/openai-responses-to-turn.js';
import { createOpenaiResponsesJsonResponse } from '../../../src/protocols/openai-responses/turn-to-openai-responses-events.js';
import type { TurnEvent, TurnWebSearchCall } from '../../../src/turn/turn-event.js';
import type { TurnRequest } from '../../../src/turn/turn-request.js';
import { createSseFetch } from '../../helpers/sse-response.js';
import { createTestTurnRequest } from '../../helpers/protocols/create-test-turn-request.js';
import { textEvents, toolCallEvents } from '../../helpers/protocols/turn-event-builders.js';
import {
  encodeTurnEvents,
  frameData,
  testMeta,
  testUsage,
} from '../../helpers/protocols/encode-turn-events.js';

const convert = (body: Record<string, unknown>): TurnRequest => {
  const result = convertOpenaiResponsesRequestToTurn({ model: 'gpt-5.5', input: 'hi', ...body }, {});
  if (!result.ok) throw new Error(`unexpected failure: ${result.error.message}`);
  return result.value;
};

const exec = { type: 'function', name: 'exec_command', parameters: { type: 'object', properties: {} } };

/** The `web_search` tool exactly as Codex 0.171 sends it in each mode. */
const codexCached = {
  type: 'web_search',
  external_web_access: false,
  search_content_types: ['text', 'image'],
};
const codexLive = { type: 'web_search', external_web_access: true, search_content_types: ['text', 'image'] };
const codexConfigured = {
  type: 'web_search',
  external_web_access: true,
  filters: { allowed_domains: ['example.com'] },
  user_location: {
    type: 'approximate',
    country: 'US',
    region: 'CA',
    city: 'SF',
    timezone: 'America/Los_Angeles',
  },
  search_context_size: 'high',
  search_content_types: ['text', 'image'],
};

describe('convertOpenaiResponsesRequestToTurn — hosted web search tool', () => {
  it('offers Codex live web search as the hosted web search, never as a client tool', () => {
    const turn = convert({ tools: [exec, codexLive] });
    expect(turn.webSearch).toEqual({ name: 'web_search', openPages: true });
    expect(turn.tools.map((tool) => tool.name)).toEqual(['exec_command']);
    expect(turn.warnings).toEqual([]);
    expect(turn.system).toEqual([]);
  });

  it('reads the domain filter and user location of a configured live search, ignoring the rest', () => {
    const turn = convert({ tools: [codexConfigured] });
    expect(turn.webSearch).toEqual({
      name: 'web_search',
      openPages: true,
      allowedDomains: ['example.com'],
      userLocation: { city: 'SF', region: 'CA', country: 'US', timezone: 'America/Los_Angeles' },
    });
    expect(turn.tools).toEqual([]);
    expect(turn.warnings).toEqual([]);
  });

  it.each([
    [{ type: 'web_search' }],
    [{ type: 'web_search_preview' }],
    [{ type: 'web_search_preview_2025_03_11', search_context_size: 'low' }],
    [{ type: 'web_search_2025_08_26', external_web_access: null, filters: { allowed_domains: [] } }],
  ])('treats %j (no external_web_access: false) as a live search', (tool) => {
    const turn = convert({ tools: [tool] });
    expect(turn.webSearch).toEqual({ name: 'web_search', openPages: true });
    expect(turn.warnings).toEqual([]);
  });

  it('drops Codex cached web search, warning and telling the model how the user turns on live search', () => {
    const turn = convert({ tools: [exec, codexCached] });
    expect(turn.webSearch).toBeUndefined();
    expect(turn.tools.map((tool) => tool.name)).toEqual(['exec_command']);
    expect(turn.warnings).toEqual([
      {
        code: 'unsupported-tool',
        message: expect.stringMatching(
          /^tools\.1: web_search tool in cached mode .*not available; dropped\. Set web_search = "live" in the Codex config/,
        ),
      },
    ]);
    const note = turn.system.at(-1)?.text ?? '';
    expect(note).toMatch(/^Note from cursor-bridge/);
    expect(note).toContain(`- ${turn.warnings[0]?.message ?? '?'}`);
  });

  it('has no web search when Codex disables it (no entry)', () => {
    const turn = convert({ tools: [exec] });
    expect(turn).not.toHaveProperty('webSearch');
    expect(turn.warnings).toEqual([]);
  });

  it('keeps the first live search when the tool is also offered inside input', () => {
    const turn = convert({
      input: [
        { type: 'additional_tools', role: 'developer', tools: [codexConfigured] },
        { role: 'user', content: 'hi' },
      ],
      tools: [codexLive],
    });
    expect(turn.webSearch?.allowedDomains).toEqual(['example.com']);
    expect(turn.warnings).toEqual([]);
  });

  it('does not take a web search tool inside a namespace', () => {
    const turn = convert({ tools: [{ type: 'namespace', name: 'ns', tools: [codexLive] }] });
    expect(turn.webSearch).toBeUndefined();
    expect(turn.warnings.map((warning) => warning.code)).toEqual(['unsupported-tool']);
  });
});

describe('convertOpenaiResponsesRequestToTurn — web_search_call history items', () => {
  it('turns earlier searches into web-search parts of the assistant turn, in their place', () => {
    const done = { type: 'web_search_call', status: 'completed' };
    const turn = convert({
      tools: [codexLive],
      input: [
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'news?' }] },
        { ...done, id: 'ws_a', action: { type: 'search', query: 'q', queries: ['q1', 'q2'] } },
        { ...done, id: 'ws_b', action: { type: 'search', queries: ['q1', 'q2'] } },
        { ...done, id: 'ws_c', action: { type: 'open_page', url: 'https://example.com/a' } },
        {
          ...done,
          id: 'ws_d',
          action: { type: 'find_in_page', url: 'https://example.com/b', pattern: 'foo' },
        },
        { ...done, id: 'ws_e' },
        { ...done, id: 'ws_f', action: { type: 'other' } },
        { type: 'web_search_call', id: 'ws_g', status: 'failed', action: { type: 'search', query: 'x' } },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Found it.' }] },
        { type: 'function_call', call_id: 'call_1', name: 'exec_command', arguments: '{}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'ok' },
      ],
    });
    expect(turn.messages.slice(0, 2)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'news?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'web-search', id: 'ws_a', query: 'q' },
          { type: 'web-search', id: 'ws_b', query: 'q1; q2' },
          { type: 'web-search', id: 'ws_c', url: 'https://example.com/a' },
          { type: 'web-search', id: 'ws_d', url: 'https://example.com/b' },
          { type: 'web-search', id: 'ws_e' },
          { type: 'web-search', id: 'ws_f' },
          { type: 'web-search', id: 'ws_g', query: 'x', error: 'failed' },
          { type: 'text', text: 'Found it.' },
          { type: 'tool-call', toolCallId: 'call_1', toolName: 'exec_command', input: {} },
        ],
      },
    ]);
    expect(turn.messages[2]).toMatchObject({ role: 'tool', toolCallId: 'call_1' });
    expect(turn.warnings).toEqual([]);
  });

  it('keeps the sources of an item that still has them', () => {
    const turn = convert({
      input: [
        { role: 'user', content: 'q' },
        {
          type: 'web_search_call',
          id: 'ws_1',
          status: 'completed',
          action: { type: 'search', query: 'q', sources: [{ type: 'url', url: 'https://a.example/' }] },
        },
      ],
    });
    expect(turn.messages[1]).toEqual({
      role: 'assistant',
      content: [{ type: 'web-search', id: 'ws_1', query: 'q', sources: [{ url: 'https://a.example/' }] }],
    });
  });

  it('never rejects an odd web_search_call item and never warns about it', () => {
    const result = convertOpenaiResponsesRequestToTurn(
      {
        model: 'gpt-5.5',
        input: [
          { role: 'user', content: 'q' },
          { type: 'web_search_call', status: 7, action: 'search' },
          { type: 'web_search_call', id: 5, action: { type: 9, query: ['x'], url: 3 } },
          { type: 'web_search_call', id: 'ws_3', action: { type: 'search', sources: [{ url: 1 }] } },
        ],
      },
      {},
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value.messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'web-search', id: 'ws_input_1' },
        { type: 'web-search', id: 'ws_input_2' },
        { type: 'web-search', id: 'ws_3' },
      ],
    });
    expect(result.value.warnings).toEqual([]);
  });
});

const turnEnd = (stopReason: 'end' | 'tool-use' = 'end'): TurnEvent => ({
  type: 'turn-end',
  stopReason,
  usage: testUsage,
});

const search = (id: string, query: string, urls: string[]): TurnWebSearchCall => ({
  type: 'web-search',
  id,
  action: { kind: 'search', query },
  outcome: {
    status: 'completed',
    sources: urls.map((url) => ({ url, title: `Title of ${url}`, snippet: 'excerpt' })),
  },
});

const openPage = (id: string, url: string): TurnWebSearchCall => ({
  type: 'web-search',
  id,
  action: { kind: 'open-page', url },
  outcome: { status: 'completed', sources: [{ url, title: url, snippet: '# Page' }] },
});

const failedSearch = (id: string, query: string): TurnWebSearchCall => ({
  type: 'web-search',
  id,
  action: { kind: 'search', query },
  outcome: { status: 'failed', code: 'unavailable', message: 'Web search is off for this team.' },
});

const webSearchRequest = () => createTestTurnRequest({ webSearch: { name: 'web_search', openPages: true } });

const encode = (events: readonly TurnEvent[]) => frameData(encodeTurnEvents(events, webSearchRequest()));

const urlSources = (...urls: string[]) => urls.map((url) => ({ type: 'url', url }));

describe('OpenaiResponsesStreamEncoder — web_search_call items', () => {
  it('sends a search as one web_search_call item through its whole lifecycle', () => {
    const data = encode([
      search('call-1', 'node 22', ['https://nodejs.org/a', 'https://b.example/']),
      turnEnd(),
    ]);
    expect(data.map((d) => d['sequence_number'])).toEqual(data.map((_, index) => index));
    const ref = { output_index: 0, item_id: 'ws_call-1' };
    expect(data.slice(2, -1)).toEqual([
      {
        type: 'response.output_item.added',
        sequence_number: 2,
        output_index: 0,
        item: {
          id: 'ws_call-1',
          type: 'web_search_call',
          status: 'in_progress',
          action: { type: 'search', query: 'node 22' },
        },
      },
      { type: 'response.web_search_call.in_progress', sequence_number: 3, ...ref },
      { type: 'response.web_search_call.searching', sequence_number: 4, ...ref },
      { type: 'response.web_search_call.completed', sequence_number: 5, ...ref },
      {
        type: 'response.output_item.done',
        sequence_number: 6,
        output_index: 0,
        item: {
          id: 'ws_call-1',
          type: 'web_search_call',
          status: 'completed',
          action: {
            type: 'search',
            query: 'node 22',
            sources: urlSources('https://nodejs.org/a', 'https://b.example/'),
          },
        },
      },
    ]);
    const completed = data.at(-1) as { type: string; response: { output: unknown[] } };
    expect(completed.type).toBe('response.completed');
    expect(completed.response.output).toEqual([(data[6] as { item: unknown }).item]);
  });

  it('sends a page open as an open_page action and a failed search as a failed item without sources', () => {
    const data = encode([
      openPage('p1', 'https://example.com/page'),
      failedSearch('s1', 'secret'),
      search('s2', 'empty', []),
      turnEnd(),
    ]);
    const done = data.filter((d) => d['type'] === 'response.output_item.done').map((d) => d['item']);
    expect(done).toEqual([
      {
        id: 'ws_p1',
        type: 'web_search_call',
        status: 'completed',
        action: { type: 'open_page', url: 'https://example.com/page' },
      },
      { id: 'ws_s1', type: 'web_search_call', status: 'failed', action: { type: 'search', query: 'secret' } },
      {
        id: 'ws_s2',
        type: 'web_search_call',
        status: 'completed',
        action: { type: 'search', query: 'empty', sources: [] },
      },
    ]);
    const failedEvents = data.filter((d) => d['item_id'] === 'ws_s1').map((d) => d['type']);
    expect(failedEvents).toEqual([
      'response.web_search_call.in_progress',
      'response.web_search_call.searching',
      'response.web_search_call.completed',
    ]);
  });

  it('closes the open message before a search and keeps the order text, search, function call', () => {
    const data = encode([
      { type: 'text-start', id: 't1' },
      { type: 'text-delta', id: 't1', delta: 'Let me look.' },
      search('s1', 'q', ['https://a.example/']),
      ...textEvents('t2', 'Now running it.'),
      ...toolCallEvents('call_1', 'exec_command', '{"cmd":"ls"}'),
      turnEnd('tool-use'),
    ]);
    const types = data.map((d) => d['type']);
    const messageDone = types.indexOf('response.output_item.done');
    expect(types.slice(messageDone - 2, messageDone + 6)).toEqual([
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.web_search_call.in_progress',
      'response.web_search_call.searching',
      'response.web_search_call.completed',
      'response.output_item.done',
    ]);
    const completed = data.at(-1) as { response: { output: Array<Record<string, unknown>> } };
    expect(completed.response.output.map((item) => [item['type'], item['id'], item['status']])).toEqual([
      ['message', 'msg_test1_0', 'completed'],
      ['web_search_call', 'ws_s1', 'completed'],
      ['message', 'msg_test1_2', 'completed'],
      ['function_call', 'fc_test1_3', 'completed'],
    ]);
    const added = data
      .filter((d) => d['type'] === 'response.output_item.added')
      .map((d) => d['output_index']);
    expect(added).toEqual([0, 1, 2, 3]);
  });

  it('never sends the same search twice', () => {
    const events = [search('s1', 'q', []), search('s1', 'q', []), turnEnd()];
    const added = encode(events).filter((d) => d['type'] === 'response.output_item.added');
    expect(added).toHaveLength(1);
  });

  it('gives the non-streaming body the same items as response.completed', () => {
    const events = [
      ...textEvents('t1', 'Searching.'),
      search('s1', 'q', ['https://a.example/']),
      openPage('p1', 'https://a.example/'),
      failedSearch('s2', 'again'),
      ...toolCallEvents('call_1', 'exec_command', '{}'),
      turnEnd('tool-use'),
    ];
    const body = createOpenaiResponsesJsonResponse(webSearchRequest(), testMeta, events);
    const completed = encode(events).at(-1) as { response: { output: unknown[] } };
    expect(body['status']).toBe('completed');
    expect(body['output']).toEqual(completed.response.output);
    expect(body['output']).toMatchObject([
      { type: 'message' },
      { id: 'ws_s1', type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'q' } },
      { id: 'ws_p1', type: 'web_search_call', status: 'completed', action: { type: 'open_page' } },
      { id: 'ws_s2', type: 'web_search_call', status: 'failed', action: { type: 'search', query: 'again' } },
      { type: 'function_call', call_id: 'call_1' },
    ]);
  });
});

const createClient = (frames: readonly SseFrame[], chunkSize?: number) =>
  new OpenAI({
    apiKey: 'sk-test',
    baseURL: 'http://127.0.0.1:9/v1',
    maxRetries: 0,
    fetch: createSseFetch(frames, chunkSize === undefined ? {} : { chunkSize }),
  });

describe('openai SDK decodes web_search_call items', () => {
  const events = [
    ...textEvents('t1', 'Looking it up.'),
    search('s1', 'node 22 release', ['https://nodejs.org/en/blog/release/v22.0.0']),
    openPage('p1', 'https://nodejs.org/en/blog/release/v22.0.0'),
    failedSearch('s2', 'more'),
    ...textEvents('t2', 'Node 22 was released in April 2024.'),
    ...toolCallEvents('call_1', 'exec_command', '{"cmd":"node -v"}'),
    turnEnd('tool-use'),
  ];

  it('accumulates the items with the strict responses.stream() helper', async () => {
    const frames = encodeTurnEvents(events, webSearchRequest());
    const stream = createClient(frames, 97).responses.stream({ model: 'gpt-5.5', input: 'when?' });
    const types: string[] = [];
    stream.on('event', (event) => types.push(event.type));
    const response = await stream.finalResponse();
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe('Looking it up.Node 22 was released in April 2024.');
    const searches = response.output.filter(
      (item): item is OpenAI.Responses.ResponseFunctionWebSearch => item.type === 'web_search_call',
    );
    expect(searches).toEqual([
      {
        id: 'ws_s1',
        type: 'web_search_call',
        status: 'completed',
        action: {
          type: 'search',
          query: 'node 22 release',
          sources: [{ type: 'url', url: 'https://nodejs.org/en/blog/release/v22.0.0' }],
        },
      },
      {
        id: 'ws_p1',
        type: 'web_search_call',
        status: 'completed',
        action: { type: 'open_page', url: 'https://nodejs.org/en/blog/release/v22.0.0' },
      },
      { id: 'ws_s2', type: 'web_search_call', status: 'failed', action: { type: 'search', query: 'more' } },
    ]);
    expect(response.output.map((item) => item.type)).toEqual([
      'message',
      'web_search_call',
      'web_search_call',
      'web_search_call',
      'message',
      'function_call',
    ]);
    expect(types.filter((type) => type.startsWith('response.web_search_call.'))).toHaveLength(9);
  });

  it('yields the typed web_search_call events from responses.create({stream: true})', async () => {
    const frames = encodeTurnEvents(events, webSearchRequest());
    const stream = await createClient(frames).responses.create({
      model: 'gpt-5.5',
      input: 'when?',
      stream: true,
    });
    const seen: Array<[string, string, number]> = [];
    for await (const event of stream) {
      if (
        event.type === 'response.web_search_call.in_progress' ||
        event.type === 'response.web_search_call.searching' ||
        event.type === 'response.web_search_call.completed'
      ) {
        seen.push([event.type.slice('response.web_search_call.'.length), event.item_id, event.output_index]);
      }
    }
    expect(seen.slice(0, 3)).toEqual([
      ['in_progress', 'ws_s1', 1],
      ['searching', 'ws_s1', 1],
      ['completed', 'ws_s1', 1],
    ]);
    expect(seen.map(([, id]) => id)).toEqual([
      ...Array(3).fill('ws_s1'),
      ...Array(3).fill('ws_p1'),
      ...Array(3).fill('ws_s2'),
    ]);
  });
});
