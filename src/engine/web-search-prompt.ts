/**
 * What the agent is told about the client's hosted web search: that it may (or, for a search side call,
 * must) use its web search tool, and the request's own rules, which Cursor's search does not apply
 * itself — the bridge applies them to the sources it reports, and the model is asked to keep to them.
 */

import type { TurnWebSearch } from '../turn/turn-request.js';
import type { Grounding } from './prompt-builder.js';

const list = (domains: readonly string[]): string => domains.map((domain) => `\`${domain}\``).join(', ');

/** The request's rules as sentences (empty when it sets none). */
const rules = (webSearch: TurnWebSearch): string[] => {
  const lines: string[] = [];
  if (webSearch.allowedDomains?.length)
    lines.push(
      `Only sources on these domains count: ${list(webSearch.allowedDomains)}; results from anywhere else are discarded.`,
    );
  if (webSearch.blockedDomains?.length)
    lines.push(`Sources on these domains are discarded: ${list(webSearch.blockedDomains)}.`);
  if (webSearch.maxUses !== undefined)
    lines.push(
      `At most ${webSearch.maxUses} web search${webSearch.maxUses === 1 ? '' : 'es'}; any beyond that are discarded.`,
    );
  const location = webSearch.userLocation;
  if (location !== undefined) {
    const where = [location.city, location.region, location.country].filter(Boolean).join(', ');
    const parts = [where, location.timezone ? `time zone ${location.timezone}` : ''].filter(Boolean);
    if (parts.length > 0) lines.push(`The user is in ${parts.join(', ')}; prefer results relevant there.`);
  }
  return lines;
};

/** The note added to a conversation's prompt tail when its client offered hosted web search. */
export const webSearchNote = (webSearch: TurnWebSearch): string =>
  [
    '<web_search>',
    "You may use your web search tool in this conversation; it runs on Cursor's servers, and the client",
    'shows each search and its sources to the user. Cite the pages you use by their URL.',
    ...rules(webSearch),
    '</web_search>',
  ].join('\n');

/**
 * The grounding of a search side call (a request whose only job is a web search, as Claude Code's
 * WebSearch tool sends it): search, answer from what was found, link the sources; never from memory.
 */
export const webSearchCallGrounding = (webSearch: TurnWebSearch): Grounding => ({
  head: [
    '<web_search_task>',
    'This request is a web search run for a client application. Use your web search tool for the query',
    'in the request below; do not answer from memory. If the search fails or finds nothing, say so in',
    'one sentence instead of answering.',
    '</web_search_task>',
  ].join('\n'),
  tail: [
    '<web_search_rules>',
    'Answer from the search results only: summarise what they say about the query, and link each source',
    'you use by its URL.',
    ...rules(webSearch),
    '</web_search_rules>',
  ].join('\n'),
});
