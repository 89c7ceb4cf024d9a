/**
 * OpenAI Responses' shapes for a hosted web search: the `web_search` tool a client offers (read into
 * {@link TurnWebSearch}), the `web_search_call` output item (what was searched for or opened, and the
 * sources found) and the reading of those items back from a transcript.
 * @see https://platform.openai.com/docs/guides/tools-web-search
 */

import type { TurnWebSearchCall } from '../../turn/turn-event.js';
import { readUserLocation } from '../shared/read-user-location.js';
import type { TurnWebSearch, TurnWebSearchPart } from '../../turn/turn-request.js';
import type {
  OpenaiResponsesWebSearchCallItem,
  OpenaiResponsesWebSearchTool,
} from './openai-responses-schema.js';

type Json = Record<string, unknown>;

/** The tool types of OpenAI's hosted web search (`web_search_preview` is the older name). */
export const webSearchToolTypes: ReadonlySet<string> = new Set([
  'web_search',
  'web_search_2025_08_26',
  'web_search_preview',
  'web_search_preview_2025_03_11',
]);

/**
 * The search the request offers, or undefined for a cached search (`external_web_access: false`, Codex's
 * default mode): that one answers from OpenAI's cached index of the web, which Cursor does not have.
 * The context size and content types have no Cursor counterpart and are ignored.
 */
export const readWebSearchTool = (tool: OpenaiResponsesWebSearchTool): TurnWebSearch | undefined => {
  if (tool.external_web_access === false) return undefined;
  const allowedDomains = tool.filters?.allowed_domains ?? [];
  const userLocation = readUserLocation(tool.user_location);
  return {
    name: 'web_search',
    openPages: true,
    ...(allowedDomains.length > 0 ? { allowedDomains } : {}),
    ...(userLocation === undefined ? {} : { userLocation }),
  };
};

/** Why a cached web search tool is dropped, and how a Codex user gets a search the bridge can run. */
export const cachedWebSearchReason =
  "in cached mode (external_web_access: false: answered from OpenAI's cached web index, which " +
  'cursor-bridge does not have) is not available; dropped. Set web_search = "live" in the Codex config ' +
  'to let the model search the web.';

/** The output item's id: `ws_` and the search's id, kept to the characters OpenAI's ids use. */
export const webSearchCallId = (id: string): string => `ws_${id.replace(/[^A-Za-z0-9_-]/g, '')}`;

/**
 * The `web_search_call` item of a search the server ran. `done: false` gives the item as announced (in
 * progress, no sources yet); `done: true` the finished one: `completed` with the sources found (a search's
 * `sources`), or `failed` without any.
 */
export const createWebSearchCallItem = (event: TurnWebSearchCall, done: boolean): Json => {
  const finalStatus = event.outcome.status === 'failed' ? 'failed' : 'completed';
  const status = done ? finalStatus : 'in_progress';
  return {
    id: webSearchCallId(event.id),
    type: 'web_search_call',
    status,
    action: createAction(event, done),
  };
};

const createAction = (event: TurnWebSearchCall, done: boolean): Json => {
  const { action, outcome } = event;
  if (action.kind === 'open-page') return { type: 'open_page', url: action.url };
  if (!done || outcome.status !== 'completed') return { type: 'search', query: action.query };
  return {
    type: 'search',
    query: action.query,
    sources: outcome.sources.map((source) => ({ type: 'url', url: source.url })),
  };
};

/**
 * An earlier `web_search_call` item (Codex sends them back without their sources), as an assistant part:
 * what was searched for (`query`, or the queries joined) or which page was opened or searched in (`url`),
 * the sources when the item still has them, and `error: 'failed'` for a failed one. An item without an
 * action, or with one of type `other`, still says a search happened.
 */
export const readWebSearchCallItem = (
  item: OpenaiResponsesWebSearchCallItem,
  fallbackId: string,
): TurnWebSearchPart => ({
  type: 'web-search',
  id: item.id || fallbackId,
  ...readAction(item.action ?? undefined),
  ...(item.status === 'failed' ? { error: 'failed' } : {}),
});

const readAction = (
  action: NonNullable<OpenaiResponsesWebSearchCallItem['action']> | undefined,
): Pick<TurnWebSearchPart, 'query' | 'url' | 'sources'> => {
  if (action === undefined) return {};
  if (action.type !== 'search') return action.url ? { url: action.url } : {};
  const query = action.query || (action.queries ?? []).filter((text) => text !== '').join('; ');
  const sources = (action.sources ?? []).map((source) => ({ url: source.url }));
  return { ...(query ? { query } : {}), ...(sources.length > 0 ? { sources } : {}) };
};
