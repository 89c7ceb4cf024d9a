/**
 * The request's rules over Cursor's hosted web calls (WebSearchPolicy), as tables: which sources pass the
 * domain rules, how searches count against `maxUses`, what a failed call says, and when a page open is
 * reported at all.
 */
import { describe, expect, it } from 'vitest';
import { passesDomainRules, WebSearchPolicy } from '../../src/engine/web-search-policy.js';
import type { TurnWebSearchCall } from '../../src/turn/turn-event.js';
import type { TurnWebSearch } from '../../src/turn/turn-request.js';
import type { UpstreamWebCall } from '../../src/upstream/upstream-port.js';

type Rules = Pick<TurnWebSearch, 'allowedDomains' | 'blockedDomains'>;

const search = (id: string, urls: readonly string[], query = `query ${id}`): UpstreamWebCall => ({
  id,
  kind: 'search',
  query,
  result: {
    status: 'success',
    references: urls.map((url) => ({ title: `Title of ${url}`, url, chunk: `Text of ${url}` })),
  },
});

const failedSearch = (
  id: string,
  result: Extract<UpstreamWebCall['result'], { status: 'error' | 'rejected' }>,
): UpstreamWebCall => ({ id, kind: 'search', query: `query ${id}`, result });

const fetchCall = (
  id: string,
  url: string,
  result: Extract<UpstreamWebCall, { kind: 'fetch' }>['result'],
): UpstreamWebCall => ({ id, kind: 'fetch', url, result });

const urlsOf = (event: TurnWebSearchCall | undefined): string[] | undefined =>
  event?.outcome.status === 'completed' ? event.outcome.sources.map((source) => source.url) : undefined;

describe('passesDomainRules', () => {
  it.each<[string, string, Rules, boolean]>([
    // No rules: any web page passes.
    ['no rules', 'https://anything.example/page', {}, true],
    ['http too', 'http://anything.example/', {}, true],
    // Allowed domains: the domain and its subdomains, nothing that merely looks like it.
    ['allowed, same host', 'https://nodejs.org/en', { allowedDomains: ['nodejs.org'] }, true],
    ['allowed, subdomain', 'https://docs.nodejs.org/api', { allowedDomains: ['nodejs.org'] }, true],
    ['allowed, deep subdomain', 'https://a.b.nodejs.org/', { allowedDomains: ['nodejs.org'] }, true],
    ['allowed, www. host', 'https://www.nodejs.org/', { allowedDomains: ['nodejs.org'] }, true],
    ['allowed, www. rule', 'https://nodejs.org/', { allowedDomains: ['www.nodejs.org'] }, true],
    ['allowed, suffix lookalike', 'https://notnodejs.org/', { allowedDomains: ['nodejs.org'] }, false],
    [
      'allowed, prefix lookalike',
      'https://nodejs.org.evil.example/',
      { allowedDomains: ['nodejs.org'] },
      false,
    ],
    [
      'allowed, userinfo trick',
      'https://nodejs.org@evil.example/',
      { allowedDomains: ['nodejs.org'] },
      false,
    ],
    ['allowed, parent of the rule', 'https://nodejs.org/', { allowedDomains: ['docs.nodejs.org'] }, false],
    [
      'allowed, sibling of the rule',
      'https://api.nodejs.org/',
      { allowedDomains: ['docs.nodejs.org'] },
      false,
    ],
    ['allowed, one of several', 'https://b.example/', { allowedDomains: ['a.example', 'b.example'] }, true],
    // Rules written loosely: case, a URL, a path, a port, a wildcard, surrounding blanks, a root dot.
    ['rule in upper case', 'https://NodeJS.org/', { allowedDomains: ['NODEJS.ORG'] }, true],
    ['rule as a URL', 'https://nodejs.org/a', { allowedDomains: ['https://nodejs.org/'] }, true],
    [
      'rule as a URL with a path',
      'https://nodejs.org/en/blog/x',
      { allowedDomains: ['https://nodejs.org/en/blog'] },
      true,
    ],
    // A path narrows the rule to that path and below it.
    ['outside the rule path', 'https://nodejs.org/a', { allowedDomains: ['nodejs.org/en/blog'] }, false],
    ['rule with a path', 'https://docs.nodejs.org/api/fs', { allowedDomains: ['docs.nodejs.org/api'] }, true],
    [
      'the rule path itself',
      'https://docs.nodejs.org/api',
      { allowedDomains: ['docs.nodejs.org/api/'] },
      true,
    ],
    [
      'a sibling of the rule path',
      'https://docs.nodejs.org/apis',
      { allowedDomains: ['docs.nodejs.org/api'] },
      false,
    ],
    ['blocked path only', 'https://example.com/public', { blockedDomains: ['example.com/private'] }, true],
    [
      'under a blocked path',
      'https://example.com/private/x',
      { blockedDomains: ['example.com/private'] },
      false,
    ],
    ['rule with a query', 'https://nodejs.org/x', { allowedDomains: ['nodejs.org?x=1'] }, true],
    ['rule with a wildcard', 'https://docs.nodejs.org/', { allowedDomains: ['*.nodejs.org'] }, true],
    ['rule with blanks', 'https://nodejs.org/', { allowedDomains: ['  nodejs.org  '] }, true],
    ['blank rules are no rules', 'https://any.example/', { allowedDomains: ['', '   '] }, true],
    [
      'rule with a port',
      'https://blocked.example:8443/x',
      { blockedDomains: ['blocked.example:8443'] },
      false,
    ],
    ['rule with a root dot', 'https://blocked.example/x', { blockedDomains: ['blocked.example.'] }, false],
    [
      'rule with a leading dot',
      'https://a.blocked.example/',
      { blockedDomains: ['.blocked.example'] },
      false,
    ],
    // Blocked domains: the domain and its subdomains; blocking wins over allowing.
    ['blocked host', 'https://github.com/x', { blockedDomains: ['github.com'] }, false],
    ['blocked subdomain', 'https://api.github.com/x', { blockedDomains: ['github.com'] }, false],
    ['blocked www.', 'https://www.github.com/x', { blockedDomains: ['github.com'] }, false],
    ['not blocked lookalike', 'https://mygithub.com/x', { blockedDomains: ['github.com'] }, true],
    ['other host', 'https://example.com/x', { blockedDomains: ['github.com'] }, true],
    [
      'blocked inside allowed',
      'https://docs.github.com/x',
      { allowedDomains: ['github.com'], blockedDomains: ['docs.github.com'] },
      false,
    ],
    [
      'allowed beside a blocked sibling',
      'https://api.github.com/x',
      { allowedDomains: ['github.com'], blockedDomains: ['docs.github.com'] },
      true,
    ],
    // A source's host as URL parsing writes it: a root dot, upper case, a port, Unicode.
    ['source with a root dot', 'https://blocked.example./x', { blockedDomains: ['blocked.example'] }, false],
    ['source in upper case', 'https://API.GITHUB.COM/', { blockedDomains: ['github.com'] }, false],
    ['source with a port', 'https://github.com:444/', { blockedDomains: ['github.com'] }, false],
    [
      'Unicode rule, Unicode source',
      'https://bücher.example/',
      { blockedDomains: ['bücher.example'] },
      false,
    ],
    [
      'Unicode rule, punycode source',
      'https://xn--bcher-kva.example/',
      { blockedDomains: ['bücher.example'] },
      false,
    ],
    [
      'punycode rule, Unicode source',
      'https://bücher.example/',
      { blockedDomains: ['xn--bcher-kva.example'] },
      false,
    ],
    // A source that is not a web page's URL is dropped, whatever the rules.
    ['unparseable', 'not a url', {}, false],
    ['empty', '', {}, false],
    ['relative', '/path/only', {}, false],
    ['javascript:', 'javascript:alert(1)', {}, false],
    [
      'mailto: on a blocked domain',
      'mailto:someone@blocked.example',
      { blockedDomains: ['blocked.example'] },
      false,
    ],
    ['file:', 'file:///etc/passwd', {}, false],
    ['unparseable, allowed list', 'https://exa mple.com/', { allowedDomains: ['example.com'] }, false],
  ])('%s: %s under %j passes: %s', (_name, url, rules, passes) => {
    expect(passesDomainRules(url, rules)).toBe(passes);
  });
});

describe('WebSearchPolicy: sources under the domain rules', () => {
  it('keeps the passing sources of a search in order, with title and snippet', () => {
    const policy = new WebSearchPolicy({
      name: 'web_search',
      allowedDomains: ['nodejs.org', 'github.com'],
      blockedDomains: ['gist.github.com'],
    });
    const event = policy.apply(
      search('s1', [
        'https://nodejs.org/en/blog',
        'https://evil.example/nodejs.org',
        'https://gist.github.com/x',
        'not a url',
        'https://github.com/nodejs/node',
      ]),
    );
    expect(event).toEqual({
      type: 'web-search',
      id: 's1',
      action: { kind: 'search', query: 'query s1' },
      outcome: {
        status: 'completed',
        sources: [
          {
            url: 'https://nodejs.org/en/blog',
            title: 'Title of https://nodejs.org/en/blog',
            snippet: 'Text of https://nodejs.org/en/blog',
          },
          {
            url: 'https://github.com/nodejs/node',
            title: 'Title of https://github.com/nodejs/node',
            snippet: 'Text of https://github.com/nodejs/node',
          },
        ],
      },
    });
  });

  it('a search whose every source is filtered out is completed with no sources (not failed)', () => {
    const policy = new WebSearchPolicy({ name: 'web_search', allowedDomains: ['nodejs.org'] });
    expect(policy.apply(search('s', ['https://a.example/', 'https://b.example/']))?.outcome).toEqual({
      status: 'completed',
      sources: [],
    });
  });

  it('an untitled source is titled by its URL; an empty excerpt gives no snippet; a long one is cut', () => {
    const policy = new WebSearchPolicy({ name: 'web_search' });
    const event = policy.apply({
      id: 's',
      kind: 'search',
      query: 'q',
      result: {
        status: 'success',
        references: [
          { title: '', url: 'https://a.example/', chunk: '' },
          { title: 'B', url: 'https://b.example/', chunk: 'x'.repeat(10_000) },
        ],
      },
    });
    expect(event?.outcome.status).toBe('completed');
    const sources = event?.outcome.status === 'completed' ? event.outcome.sources : [];
    expect(sources[0]).toEqual({ url: 'https://a.example/', title: 'https://a.example/' });
    expect(sources[1]?.title).toBe('B');
    expect(sources[1]?.snippet?.length).toBeGreaterThan(0);
    expect(sources[1]?.snippet?.length).toBeLessThan(10_000);
  });
});

describe('WebSearchPolicy: maxUses', () => {
  it.each([
    [1, 2],
    [2, 3],
    [3, 3],
  ])('maxUses %i over %i searches: the ones past the limit fail as max-uses-exceeded', (maxUses, count) => {
    const policy = new WebSearchPolicy({ name: 'web_search', maxUses });
    const events = Array.from({ length: count }, (_, index) =>
      policy.apply(search(`s${index}`, [`https://site${index}.example/`])),
    );
    events.forEach((event, index) => {
      if (index < maxUses) expect(urlsOf(event)).toEqual([`https://site${index}.example/`]);
      else
        expect(event).toEqual({
          type: 'web-search',
          id: `s${index}`,
          action: { kind: 'search', query: `query s${index}` },
          outcome: {
            status: 'failed',
            code: 'max-uses-exceeded',
            message: expect.stringContaining(`allows ${maxUses} web search`),
          },
        });
    });
  });

  it('every search counts: failed ones, and the refused ones past the limit', () => {
    const policy = new WebSearchPolicy({ name: 'web_search', maxUses: 2 });
    const codes = [
      policy.apply(failedSearch('a', { status: 'error', message: 'timeout' })),
      policy.apply(search('b', ['https://b.example/'])),
      policy.apply(search('c', ['https://c.example/'])),
      policy.apply(failedSearch('d', { status: 'error', message: 'timeout' })),
      policy.apply(search('e', ['https://e.example/'])),
    ].map((event) => (event?.outcome.status === 'failed' ? event.outcome.code : 'completed'));
    expect(codes).toEqual([
      'unavailable',
      'completed',
      'max-uses-exceeded',
      'max-uses-exceeded',
      'max-uses-exceeded',
    ]);
  });

  it('page opens do not count against maxUses', () => {
    const policy = new WebSearchPolicy({ name: 'web_search', maxUses: 1, openPages: true });
    const opened = policy.apply(
      fetchCall('f', 'https://a.example/', { status: 'success', url: 'https://a.example/', markdown: 'A' }),
    );
    expect(opened?.outcome.status).toBe('completed');
    expect(urlsOf(policy.apply(search('s', ['https://b.example/'])))).toEqual(['https://b.example/']);
  });

  it('the limit is per policy (one per answer)', () => {
    const first = new WebSearchPolicy({ name: 'web_search', maxUses: 1 });
    first.apply(search('a', ['https://a.example/']));
    const second = new WebSearchPolicy({ name: 'web_search', maxUses: 1 });
    expect(second.apply(search('b', ['https://b.example/']))?.outcome.status).toBe('completed');
  });

  it('the message says a single search in the singular', () => {
    const policy = new WebSearchPolicy({ name: 'web_search', maxUses: 1 });
    policy.apply(search('a', []));
    const refused = policy.apply(search('b', []));
    expect(refused?.outcome).toMatchObject({
      status: 'failed',
      message: expect.stringContaining('allows 1 web search;'),
    });
  });
});

describe('WebSearchPolicy: failures name their cause', () => {
  it.each<[string, UpstreamWebCall['result'] & { status: 'error' | 'rejected' }, string]>([
    ['an error', { status: 'error', message: 'rate limited' }, "Cursor's web search failed: rate limited"],
    ['an error without a message', { status: 'error', message: '' }, "Cursor's web search failed"],
    [
      'a refusal',
      { status: 'rejected', reason: 'web search is disabled for this team' },
      'Cursor refused the web search: web search is disabled for this team',
    ],
    ['a refusal without a reason', { status: 'rejected', reason: '' }, 'Cursor refused the web search'],
  ])('a search that ended in %s is failed, unavailable', (_name, result, message) => {
    const policy = new WebSearchPolicy({ name: 'web_search' });
    expect(policy.apply(failedSearch('x', result))).toEqual({
      type: 'web-search',
      id: 'x',
      action: { kind: 'search', query: 'query x' },
      outcome: { status: 'failed', code: 'unavailable', message },
    });
  });
});

describe('WebSearchPolicy: page opens', () => {
  const opened = fetchCall('f', 'https://docs.example/page', {
    status: 'success',
    url: 'https://docs.example/page',
    markdown: '# Page',
  });

  it.each<[string, Partial<TurnWebSearch>]>([
    ['openPages absent', {}],
    ['openPages false', { openPages: false }],
  ])('are not reported with %s, and leave no trace on the search count', (_name, extra) => {
    const policy = new WebSearchPolicy({ name: 'web_search', maxUses: 1, ...extra });
    expect(policy.apply(opened)).toBeUndefined();
    expect(
      policy.apply(fetchCall('g', 'https://x.example/', { status: 'error', message: 'boom' })),
    ).toBeUndefined();
    expect(policy.apply(search('s', ['https://a.example/']))?.outcome.status).toBe('completed');
  });

  it('are reported as open-page actions when the request asks for them', () => {
    const policy = new WebSearchPolicy({ name: 'web_search', openPages: true });
    expect(policy.apply(opened)).toEqual({
      type: 'web-search',
      id: 'f',
      action: { kind: 'open-page', url: 'https://docs.example/page' },
      outcome: {
        status: 'completed',
        sources: [
          { url: 'https://docs.example/page', title: 'https://docs.example/page', snippet: '# Page' },
        ],
      },
    });
  });

  it('report the page the fetch landed on, and the URL asked for when it names none', () => {
    const policy = new WebSearchPolicy({ name: 'web_search', openPages: true });
    const redirected = policy.apply(
      fetchCall('r', 'https://short.example/x', {
        status: 'success',
        url: 'https://long.example/article',
        markdown: 'text',
      }),
    );
    expect(redirected?.action).toEqual({ kind: 'open-page', url: 'https://short.example/x' });
    expect(urlsOf(redirected)).toEqual(['https://long.example/article']);
    const unnamed = policy.apply(
      fetchCall('u', 'https://plain.example/', { status: 'success', url: '', markdown: 'text' }),
    );
    expect(urlsOf(unnamed)).toEqual(['https://plain.example/']);
  });

  it('keep the domain rules: a page off the allowed domains is opened but gives no source', () => {
    const policy = new WebSearchPolicy({
      name: 'web_search',
      openPages: true,
      allowedDomains: ['docs.example'],
    });
    expect(urlsOf(policy.apply(opened))).toEqual(['https://docs.example/page']);
    expect(
      urlsOf(
        policy.apply(
          fetchCall('o', 'https://other.example/', {
            status: 'success',
            url: 'https://other.example/',
            markdown: 'x',
          }),
        ),
      ),
    ).toEqual([]);
  });

  it.each<[string, Extract<UpstreamWebCall, { kind: 'fetch' }>['result'], string]>([
    ['an error', { status: 'error', message: '404 Not Found' }, "Cursor's page fetch failed: 404 Not Found"],
    [
      'a refusal',
      { status: 'rejected', reason: 'blocked by policy' },
      'Cursor refused the page fetch: blocked by policy',
    ],
  ])('that ended in %s are failed, unavailable, naming the cause', (_name, result, message) => {
    const policy = new WebSearchPolicy({ name: 'web_search', openPages: true });
    expect(policy.apply(fetchCall('e', 'https://x.example/', result))).toEqual({
      type: 'web-search',
      id: 'e',
      action: { kind: 'open-page', url: 'https://x.example/' },
      outcome: { status: 'failed', code: 'unavailable', message },
    });
  });
});
