import { describe, expect, it } from 'vitest';

import { resolveModelRoute } from '../../src/config/model-route.js';
import type { BridgeConfig } from '../../src/config/load-config.js';

type RouteConfig = Pick<BridgeConfig, 'cursor' | 'router' | 'providers'>;

const config: RouteConfig = {
  cursor: {
    providerName: 'cursor',
    models: ['composer-2', 'gpt-5.4'],
    mode: 'bridge',
    sandboxEnabled: false,
  },
  router: {
    default: 'cursor,composer-2',
    background: 'cursor,claude-haiku-4-5',
    think: 'cursor,claude-opus-4-8',
    longContextThreshold: 60000,
  },
  providers: [
    { name: 'cursor', isCursor: true },
    { name: 'openrouter', isCursor: false },
    { name: 'cursor-two', isCursor: true },
  ],
};

const defaultOnly: RouteConfig = {
  ...config,
  router: { default: 'cursor,composer-2', longContextThreshold: 60000 },
};

describe('resolveModelRoute', () => {
  it.each([
    ['explicit provider,model', config, 'cursor,claude-opus-4-8', false, 'claude-opus-4-8', 'explicit'],
    [
      'explicit, provider name in another case, spaces trimmed',
      config,
      'Cursor, gpt-5.4 ',
      true,
      'gpt-5.4',
      'explicit',
    ],
    [
      'explicit wins over haiku',
      config,
      'cursor,claude-haiku-4-5-fast',
      false,
      'claude-haiku-4-5-fast',
      'explicit',
    ],
    ['a model listed in the cursor provider', config, 'gpt-5.4', true, 'gpt-5.4', 'listed'],
    [
      'haiku → Router.background',
      config,
      'claude-3-5-haiku-20241022',
      true,
      'claude-haiku-4-5',
      'background',
    ],
    [
      'HAIKU in any case → Router.background',
      config,
      'Claude-HAIKU-4-5',
      false,
      'claude-haiku-4-5',
      'background',
    ],
    ['reasoning → Router.think', config, 'claude-opus-4-8', true, 'claude-opus-4-8', 'think'],
    ['otherwise Router.default', config, 'claude-sonnet-4-6', false, 'composer-2', 'default'],
    ['empty model → Router.default', config, '', false, 'composer-2', 'default'],
    ['no background route: haiku → default', defaultOnly, 'claude-haiku-4-5', false, 'composer-2', 'default'],
    ['no think route: reasoning → default', defaultOnly, 'claude-opus-4-8', true, 'composer-2', 'default'],
  ] as const)('%s', (_label, routeConfig, model, reasoningRequested, expectedModel, route) => {
    expect(resolveModelRoute(routeConfig, { model, reasoningRequested })).toEqual({
      ok: true,
      value: { provider: 'cursor', model: expectedModel, route },
    });
  });

  it.each([
    [
      'openrouter,gpt-4o',
      config,
      /^model "openrouter,gpt-4o" routes to provider "openrouter", which is not a Cursor provider; this bridge only serves Cursor: use "cursor,<model>"$/,
    ],
    ['nowhere,gpt-4o', config, /provider "nowhere", which is not configured;/],
    ['cursor-two,composer-2', config, /a second Cursor provider \(only the first, "cursor", is served\)/],
    ['cursor,', config, /^model "cursor," must be "provider,model"/],
    [',composer-2', config, /must be "provider,model"/],
  ] as const)('rejects explicit %s', (model, routeConfig, message) => {
    const result = resolveModelRoute(routeConfig, { model, reasoningRequested: false });
    expect(result.ok).toBe(false);
    expect(result.ok ? '' : result.error).toMatch(message);
  });

  it('rejects a Router route to a non-Cursor provider, naming the Router key', () => {
    const routed: RouteConfig = { ...config, router: { ...config.router, think: 'openrouter,o3' } };
    const result = resolveModelRoute(routed, { model: 'claude-opus-4-8', reasoningRequested: true });
    expect(result).toEqual({
      ok: false,
      error:
        'Router.think routes to provider "openrouter", which is not a Cursor provider; this bridge only serves Cursor: use "cursor,<model>"',
    });
  });
});
