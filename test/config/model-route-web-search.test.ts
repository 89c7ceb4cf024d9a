import { describe, expect, it } from 'vitest';

import type { BridgeConfig } from '../../src/config/load-config.js';
import { resolveModelRoute } from '../../src/config/model-route.js';

type RouteConfig = Pick<BridgeConfig, 'cursor' | 'router' | 'providers'>;

const base: RouteConfig = {
  cursor: { providerName: 'cursor', models: ['composer-2'], mode: 'bridge', sandboxEnabled: false },
  router: {
    default: 'cursor,composer-2',
    background: 'cursor,claude-haiku-4-5',
    think: 'cursor,claude-opus-4-8',
    webSearch: 'cursor,searcher',
    longContextThreshold: 60000,
  },
  providers: [{ name: 'cursor', isCursor: true }],
};
const catalog = [{ id: 'composer-2' }, { id: 'gpt-5.4' }, { id: 'searcher-1', aliases: ['searcher'] }];

const route = (
  model: string,
  webSearch: 'call' | 'offered' | undefined,
  config: RouteConfig = base,
  reasoningRequested = false,
) => {
  const result = resolveModelRoute(config, {
    model,
    reasoningRequested,
    ...(webSearch === undefined ? {} : { webSearch }),
    catalog,
  });
  if (!result.ok) throw new Error(result.error);
  return result.value;
};

describe('Router.webSearch', () => {
  it.each([
    // A search side call runs on it whatever its name (the conversation's), alias resolved.
    ['cursor,composer-2', 'call', 'searcher-1', 'web-search'],
    ['claude-opus-5-5', 'call', 'searcher-1', 'web-search'],
    ['gpt-5.4', 'call', 'searcher-1', 'web-search'],
    // A turn that may search: only where the Router decides.
    ['claude-opus-5-5', 'offered', 'searcher', 'web-search'],
    ['claude-haiku-4-5', 'offered', 'searcher', 'web-search'],
    ['some-unknown-model', 'offered', 'searcher', 'web-search'],
    ['gpt-5.4', 'offered', 'gpt-5.4', 'catalog'],
    ['cursor,composer-2', 'offered', 'composer-2', 'explicit'],
    // No web search: the Router as before.
    ['claude-opus-5-5', undefined, 'composer-2', 'default'],
  ] as const)('%s (%s) runs %s by %s', (model, webSearch, expected, kind) => {
    const value = route(model, webSearch);
    expect(value.model).toBe(expected);
    expect(value.route).toBe(kind);
  });

  it('names itself in the note of a side call', () => {
    expect(route('claude-opus-5-5', 'call').note).toBe(
      'a web search call runs on Router.webSearch (searcher-1), not "claude-opus-5-5"',
    );
  });

  it('without Router.webSearch, web search requests route as any other', () => {
    const { webSearch: _dropped, ...router } = base.router;
    const without: RouteConfig = { ...base, router };
    expect(route('claude-opus-5-5', 'call', without).route).toBe('default');
    expect(route('claude-opus-5-5', 'offered', without, true).route).toBe('think');
    expect(route('cursor,composer-2', 'call', without).route).toBe('explicit');
  });

  it('a Router.webSearch on another provider is refused, naming it', () => {
    const other: RouteConfig = { ...base, router: { ...base.router, webSearch: 'openrouter,x' } };
    const result = resolveModelRoute(other, {
      model: 'x',
      reasoningRequested: false,
      webSearch: 'call',
      catalog,
    });
    expect(result).toEqual({
      ok: false,
      error: expect.stringContaining('Router.webSearch routes to provider "openrouter"'),
    });
  });
});
