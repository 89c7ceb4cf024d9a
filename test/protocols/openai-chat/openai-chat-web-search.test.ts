/**
 * Hosted web search on Chat Completions: `web_search_options` turns it on, and the sources of the
 * answer's searches come back as `url_citation` annotations on the message.
 */
import { describe, expect, it } from 'vitest';
import { convertOpenaiChatRequestToTurn } from '../../../src/protocols/openai-chat/openai-chat-to-turn.js';
import {
  createOpenaiChatJsonResponse,
  OpenaiChatStreamEncoder,
} from '../../../src/protocols/openai-chat/turn-to-openai-chat-events.js';
import type { TurnEvent } from '../../../src/turn/turn-event.js';
import { textEvents } from '../../helpers/protocols/turn-event-builders.js';

const meta = { id: 'chatcmpl-1', model: 'composer-2', createdAt: 1_700_000_000 };
const usage = { inputTokens: 7, outputTokens: 3, cacheReadTokens: 0, cacheWriteTokens: 0 };
const base = { model: 'composer-2', messages: [{ role: 'user', content: 'When did Node 22 ship?' }] };

const parse = (body: Record<string, unknown>) => {
  const result = convertOpenaiChatRequestToTurn(body, {});
  if (!result.ok) throw new Error(result.error.message);
  return result.value;
};

describe('web_search_options', () => {
  it('turns hosted web search on, with the user location as a hint; no warning', () => {
    const turn = parse({
      ...base,
      web_search_options: {
        search_context_size: 'high',
        user_location: { type: 'approximate', approximate: { city: 'Berlin', country: 'DE', region: null } },
      },
    });
    expect(turn.webSearch).toEqual({ name: 'web_search', userLocation: { city: 'Berlin', country: 'DE' } });
    expect(turn.warnings).toEqual([]);
    expect(parse({ ...base, web_search_options: {} }).webSearch).toEqual({ name: 'web_search' });
    expect(parse({ ...base, web_search_options: null }).webSearch).toBeUndefined();
    expect(parse(base).webSearch).toBeUndefined();
  });

  it('names the field of a malformed option in a 400', () => {
    const result = convertOpenaiChatRequestToTurn(
      { ...base, web_search_options: { user_location: { approximate: { city: 7 } } } },
      {},
    );
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.param).toBe('web_search_options.user_location.approximate.city');
  });
});

const search = (id: string, ...urls: string[]): TurnEvent => ({
  type: 'web-search',
  id,
  action: { kind: 'search', query: 'node 22' },
  outcome: { status: 'completed', sources: urls.map((url) => ({ url, title: `Title of ${url}` })) },
});
const events: TurnEvent[] = [
  search('ws1', 'https://nodejs.org/22', 'https://example.com/unmentioned'),
  {
    type: 'web-search',
    id: 'ws2',
    action: { kind: 'search', query: 'x' },
    outcome: { status: 'failed', code: 'unavailable', message: 'down' },
  },
  // The same source again: annotated once.
  search('ws3', 'https://nodejs.org/22'),
  ...textEvents('t', 'Node 22 shipped in April (see https://nodejs.org/22).'),
  { type: 'turn-end', stopReason: 'end', usage },
];
const content = 'Node 22 shipped in April (see https://nodejs.org/22).';
const annotations = [
  {
    type: 'url_citation',
    url_citation: {
      url: 'https://nodejs.org/22',
      title: 'Title of https://nodejs.org/22',
      start_index: 30,
      end_index: 51,
    },
  },
  {
    type: 'url_citation',
    url_citation: {
      url: 'https://example.com/unmentioned',
      title: 'Title of https://example.com/unmentioned',
      start_index: content.length,
      end_index: content.length,
    },
  },
];

describe('url_citation annotations', () => {
  it('streaming: one chunk with every source before the finish chunk, spans where the text names them', () => {
    const encoder = new OpenaiChatStreamEncoder({ includeStreamUsage: true }, meta);
    const frames = [...encoder.start(), ...events.flatMap((event) => encoder.push(event))];
    const chunks = frames.flatMap((frame) =>
      'data' in frame && frame.data !== '[DONE]'
        ? [
            JSON.parse(frame.data) as {
              choices: Array<{ delta: Record<string, unknown>; finish_reason: string | null }>;
            },
          ]
        : [],
    );
    const withAnnotations = chunks.findIndex((chunk) => chunk.choices[0]?.delta['annotations'] !== undefined);
    expect(chunks[withAnnotations]?.choices[0]?.delta['annotations']).toEqual(annotations);
    expect(chunks[withAnnotations + 1]?.choices[0]?.finish_reason).toBe('stop');
    expect(content.slice(30, 51)).toBe('https://nodejs.org/22');
  });

  it('non-streaming: the message carries them', () => {
    const body = createOpenaiChatJsonResponse(meta, events);
    expect(body.choices[0]?.message).toEqual({ role: 'assistant', content, annotations });
  });

  it('an answer without searches has none', () => {
    const body = createOpenaiChatJsonResponse(meta, [
      ...textEvents('t', 'hi'),
      { type: 'turn-end', stopReason: 'end', usage },
    ]);
    expect(body.choices[0]?.message).toEqual({ role: 'assistant', content: 'hi' });
  });
});
