/**
 * What the client sees of the backend's hosted web calls, under the request's own rules. Cursor's search
 * has no domain filter and no use limit, so the request's `allowedDomains` / `blockedDomains` are applied
 * to the sources returned and `maxUses` to the number of searches reported: a search past the limit is
 * reported as refused (its sources are not passed on). A page open is passed on only when the request
 * asked for them (`openPages`).
 */

import type { TurnWebSearchCall, TurnWebSource } from '../turn/turn-event.js';
import type { TurnWebSearch } from '../turn/turn-request.js';
import type { UpstreamWebCall } from '../upstream/upstream-port.js';

/**
 * A host as the rules compare it: lower case, punycode (as `URL` writes a host), without the DNS root's
 * trailing dot and a leading `www.` — `https://Blocked.example./` is on `blocked.example`.
 */
const comparableHost = (host: string): string =>
  host
    .toLowerCase()
    .replace(/\.+$/, '')
    .replace(/^www\./, '');

/** Where a rule or a source points: its host (see {@link comparableHost}) and its path (`''`: any). */
type Place = { host: string; path: string };

/**
 * A domain rule, which may be written as a URL, with a port or with a path (`example.com/blog`: only that
 * path and below it, as Anthropic's rules read), in Unicode or punycode; its host is parsed as a URL's
 * host, so it compares with the host of a source's URL. Undefined for an empty rule.
 */
const parseRule = (rule: string): Place | undefined => {
  const bare = rule
    .trim()
    .replace(/^[a-z][a-z0-9+.-]*:\/\//i, '')
    .replace(/[?#].*$/, '')
    .replace(/^\*\./, '')
    .replace(/^\.+/, '');
  const slash = bare.indexOf('/');
  const hostPart = (slash < 0 ? bare : bare.slice(0, slash)).toLowerCase();
  if (hostPart === '') return undefined;
  let host = hostPart;
  try {
    host = new URL(`http://${hostPart}`).hostname;
  } catch {
    // Not a host a URL can have: compared as written.
  }
  return { host: comparableHost(host), path: slash < 0 ? '' : bare.slice(slash).replace(/\/+$/, '') };
};

/** Where a source's URL points; undefined unless it is an http(s) URL with a host. */
const placeOf = (url: string): Place | undefined => {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return undefined;
  const host = comparableHost(parsed.hostname);
  return host === '' ? undefined : { host, path: parsed.pathname };
};

/** Whether `source` is on the rule's domain (or a subdomain of it) and, when the rule has a path, under it. */
const matches = (source: Place, rule: Place): boolean =>
  (source.host === rule.host || source.host.endsWith(`.${rule.host}`)) &&
  (rule.path === '' || source.path === rule.path || source.path.startsWith(`${rule.path}/`));

const parseRules = (rules: readonly string[] | undefined): Place[] =>
  (rules ?? []).flatMap((rule) => parseRule(rule) ?? []);

/**
 * Whether a source's URL passes the request's domain rules (a URL that does not parse, or is not an
 * http(s) URL, never does).
 */
export const passesDomainRules = (
  url: string,
  webSearch: Pick<TurnWebSearch, 'allowedDomains' | 'blockedDomains'>,
): boolean => {
  const source = placeOf(url);
  if (source === undefined) return false;
  const allowed = parseRules(webSearch.allowedDomains);
  if (allowed.length > 0 && !allowed.some((rule) => matches(source, rule))) return false;
  return !parseRules(webSearch.blockedDomains).some((rule) => matches(source, rule));
};

/** The longest excerpt of a source kept on the event (the model already read the whole of it). */
const maxSnippetChars = 4_000;

const failed = (
  call: UpstreamWebCall,
  action: TurnWebSearchCall['action'],
  code: 'unavailable' | 'max-uses-exceeded',
  message: string,
): TurnWebSearchCall => ({
  type: 'web-search',
  id: call.id,
  action,
  outcome: { status: 'failed', code, message },
});

/** Applies one request's rules to the hosted calls of its answer, in order (it counts the searches). */
export class WebSearchPolicy {
  readonly #webSearch: TurnWebSearch;
  #searches = 0;

  constructor(webSearch: TurnWebSearch) {
    this.#webSearch = webSearch;
  }

  /** The client's event for `call`; undefined for a page open the request did not ask for. */
  apply(call: UpstreamWebCall): TurnWebSearchCall | undefined {
    if (call.kind === 'fetch') {
      if (this.#webSearch.openPages !== true) return undefined;
      const action = { kind: 'open-page' as const, url: call.url };
      const { result } = call;
      if (result.status !== 'success')
        return failed(call, action, 'unavailable', describeFailure(result, 'page fetch'));
      const source: TurnWebSource = {
        url: result.url || call.url,
        title: result.url || call.url,
        snippet: result.markdown.slice(0, maxSnippetChars),
      };
      return {
        type: 'web-search',
        id: call.id,
        action,
        outcome: {
          status: 'completed',
          sources: passesDomainRules(source.url, this.#webSearch) ? [source] : [],
        },
      };
    }
    const action = { kind: 'search' as const, query: call.query };
    this.#searches += 1;
    const { maxUses } = this.#webSearch;
    if (maxUses !== undefined && this.#searches > maxUses) {
      return failed(
        call,
        action,
        'max-uses-exceeded',
        `The request allows ${maxUses} web search${maxUses === 1 ? '' : 'es'}; this one is not reported.`,
      );
    }
    const { result } = call;
    if (result.status !== 'success')
      return failed(call, action, 'unavailable', describeFailure(result, 'web search'));
    const sources = result.references
      .filter((reference) => passesDomainRules(reference.url, this.#webSearch))
      .map((reference): TurnWebSource => ({
        url: reference.url,
        title: reference.title || reference.url,
        ...(reference.chunk === '' ? {} : { snippet: reference.chunk.slice(0, maxSnippetChars) }),
      }));
    return { type: 'web-search', id: call.id, action, outcome: { status: 'completed', sources } };
  }
}

const describeFailure = (
  result: Extract<UpstreamWebCall['result'], { status: 'error' | 'rejected' }>,
  what: 'web search' | 'page fetch',
): string =>
  result.status === 'error'
    ? `Cursor's ${what} failed${result.message === '' ? '' : `: ${result.message}`}`
    : `Cursor refused the ${what}${result.reason === '' ? '' : `: ${result.reason}`}`;
