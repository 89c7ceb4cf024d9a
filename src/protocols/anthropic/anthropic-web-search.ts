/**
 * Anthropic's shapes for a hosted web search: the `server_tool_use` block (what was searched), the
 * `web_search_tool_result` block (the sources, or `web_search_tool_result_error`), the citation of a
 * source in text, and the reading of those blocks back from a transcript.
 * @see https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/web-search-tool
 */

import type { TurnWebSearchCall, TurnWebSearchErrorCode, TurnWebSource } from '../../turn/turn-event.js';
import type { TurnAssistantPart, TurnWebSearchPart } from '../../turn/turn-request.js';

export type AnthropicWebSearchResult = {
  type: 'web_search_result';
  url: string;
  title: string;
  encrypted_content: string;
  page_age: string | null;
};

export type AnthropicServerToolUseBlock = {
  type: 'server_tool_use';
  id: string;
  name: string;
  input: { query: string };
};

export type AnthropicWebSearchToolResultBlock = {
  type: 'web_search_tool_result';
  tool_use_id: string;
  content: AnthropicWebSearchResult[] | { type: 'web_search_tool_result_error'; error_code: string };
};

export type AnthropicWebSearchCitation = {
  type: 'web_search_result_location';
  url: string;
  title: string;
  encrypted_index: string;
  cited_text: string;
};

/** Anthropic's `error_code` for each reason a search gave no sources. */
const errorCodes: Record<TurnWebSearchErrorCode, string> = {
  unavailable: 'unavailable',
  'max-uses-exceeded': 'max_uses_exceeded',
  'not-performed': 'unavailable',
};

/**
 * The bridge's `encrypted_content`: Anthropic's is opaque ciphertext that only its API reads back; the
 * bridge's is the source's excerpt, so a transcript sent back with it (an API client keeps the blocks)
 * still tells the next agent what the page said. Clients treat it as opaque and never show it.
 */
const contentPrefix = 'cbx1.';
const maxExcerptChars = 2_000;
/** Anthropic's `cited_text` holds up to 150 characters of the source. */
const maxCitedChars = 150;

export const encodeEncryptedContent = (snippet: string | undefined): string =>
  contentPrefix + Buffer.from((snippet ?? '').slice(0, maxExcerptChars), 'utf8').toString('base64url');

/** The excerpt in a bridge-made `encrypted_content`; undefined for anyone else's (Anthropic's ciphertext). */
export const decodeEncryptedContent = (value: string | null | undefined): string | undefined => {
  if (typeof value !== 'string' || !value.startsWith(contentPrefix)) return undefined;
  const text = Buffer.from(value.slice(contentPrefix.length), 'base64url').toString('utf8');
  return text === '' ? undefined : text;
};

/** A `srvtoolu_` id for the search (Anthropic's server tool ids carry that prefix). */
export const serverToolUseId = (id: string): string => `srvtoolu_${id.replace(/[^A-Za-z0-9_]/g, '')}`;

/** The two blocks of one search; an `open-page` action has no Anthropic web_search shape (undefined). */
export const createWebSearchBlocks = (
  event: TurnWebSearchCall,
  toolName: string,
): { use: AnthropicServerToolUseBlock; result: AnthropicWebSearchToolResultBlock } | undefined => {
  if (event.action.kind !== 'search') return undefined;
  const id = serverToolUseId(event.id);
  const { outcome } = event;
  return {
    use: { type: 'server_tool_use', id, name: toolName, input: { query: event.action.query } },
    result: {
      type: 'web_search_tool_result',
      tool_use_id: id,
      content:
        outcome.status === 'completed'
          ? outcome.sources.map(toSearchResult)
          : { type: 'web_search_tool_result_error', error_code: errorCodes[outcome.code] },
    },
  };
};

const toSearchResult = (source: TurnWebSource): AnthropicWebSearchResult => ({
  type: 'web_search_result',
  url: source.url,
  title: source.title,
  encrypted_content: encodeEncryptedContent(source.snippet),
  page_age: source.pageAge ?? null,
});

/**
 * The sources a text cites: each earlier source whose URL appears in it, once, in order of first
 * mention (Cursor's models link their sources in the text; there are no structured citations).
 */
export const findCitations = (
  text: string,
  sources: ReadonlyMap<string, TurnWebSource>,
): AnthropicWebSearchCitation[] =>
  [...sources.values()]
    .map((source) => ({ source, at: text.indexOf(source.url) }))
    .filter(({ at }) => at >= 0)
    .sort((a, b) => a.at - b.at)
    .map(({ source }) => ({
      type: 'web_search_result_location',
      url: source.url,
      title: source.title,
      encrypted_index: encodeEncryptedContent(source.url),
      cited_text: (source.snippet ?? source.title).slice(0, maxCitedChars),
    }));

/** What an earlier `server_tool_use` block searched for. */
export const readServerToolUseInput = (input: unknown): Pick<TurnWebSearchPart, 'query'> =>
  typeof input === 'object' && input !== null && 'query' in input && typeof input.query === 'string'
    ? { query: input.query }
    : {};

/** What an earlier `web_search_tool_result` block found: its sources (with the bridge's excerpts), or its error. */
export const readWebSearchResult = (
  content:
    | Array<{ url: string; title?: string | null | undefined; encrypted_content?: string | null | undefined }>
    | { error_code: string },
): Pick<TurnWebSearchPart, 'sources' | 'error'> => {
  if (!Array.isArray(content)) return { error: content.error_code };
  return {
    sources: content.map((result) => {
      const snippet = decodeEncryptedContent(result.encrypted_content);
      return {
        url: result.url,
        ...(result.title ? { title: result.title } : {}),
        ...(snippet === undefined ? {} : { snippet }),
      };
    }),
  };
};

/** A search's call and result blocks, read as two parts with one id, become one part (order kept). */
export const mergeWebSearchParts = (parts: TurnAssistantPart[]): TurnAssistantPart[] => {
  const merged: TurnAssistantPart[] = [];
  const byId = new Map<string, TurnWebSearchPart>();
  for (const part of parts) {
    if (part.type !== 'web-search') {
      merged.push(part);
      continue;
    }
    const earlier = byId.get(part.id);
    if (earlier === undefined) {
      const copy = { ...part };
      byId.set(part.id, copy);
      merged.push(copy);
    } else
      Object.assign(earlier, { ...part, ...(earlier.query === undefined ? {} : { query: earlier.query }) });
  }
  return merged;
};
