import { describe, expect, it } from 'vitest';

import type { BridgeConfig } from '../../src/config/load-config.js';
import { nearCatalogIds, isClaudeCodeModelName } from '../../src/config/model-names.js';
import {
  mayRouteByTokenCount,
  resolveModelRoute,
  type ModelRouteKind,
  type ModelRouteRequest,
} from '../../src/config/model-route.js';

type RouteConfig = Pick<BridgeConfig, 'cursor' | 'router' | 'providers'>;

const config: RouteConfig = {
  cursor: {
    providerName: 'cursor',
    models: ['composer-2', 'gpt-5.4', 'grok-9-listed'],
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

/** Cursor's live catalog, as the fake backend serves it plus a Cursor-named Claude model and gpt-5.5. */
const catalog = [
  { id: 'composer-2', aliases: ['composer'] },
  { id: 'claude-opus-4-8', aliases: ['opus-4.8'] },
  { id: 'claude-haiku-4-5' },
  { id: 'claude-4.5-sonnet' },
  { id: 'gpt-5.4' },
  { id: 'gpt-5.5' },
];

type Row = [
  label: string,
  model: string,
  reasoning: boolean,
  expected: { model: string; route: ModelRouteKind; note?: RegExp },
  options?: { config?: RouteConfig; catalog?: typeof catalog | undefined },
];

// Every step of the routing order (README "Picking the model"), the catalog read unless a row says otherwise.
const rows: Row[] = [
  // A name in Cursor's catalog runs that model.
  ['catalog id', 'gpt-5.5', false, { model: 'gpt-5.5', route: 'catalog' }],
  ['catalog id, reasoning does not change it', 'gpt-5.5', true, { model: 'gpt-5.5', route: 'catalog' }],
  [
    "Cursor's own name for a Claude model",
    'claude-4.5-sonnet',
    false,
    { model: 'claude-4.5-sonnet', route: 'catalog' },
  ],
  ['catalog alias → its id', 'composer', false, { model: 'composer-2', route: 'catalog' }],
  ['catalog id in another case', 'GPT-5.5', false, { model: 'gpt-5.5', route: 'catalog' }],
  ['catalog id with the [1m] suffix', 'gpt-5.5[1m]', false, { model: 'gpt-5.5', route: 'catalog' }],
  // Claude Code's own names follow the Router, even when Cursor serves that id.
  [
    'opus → Router.default',
    'opus',
    false,
    {
      model: 'composer-2',
      route: 'default',
      note: /Claude Code's "opus" follows Router.default \(composer-2\)$/,
    },
  ],
  ['sonnet → Router.default', 'sonnet', false, { model: 'composer-2', route: 'default', note: /"sonnet"/ }],
  [
    'sonnet[1m] → Router.default',
    'sonnet[1m]',
    false,
    { model: 'composer-2', route: 'default', note: /"sonnet"/ },
  ],
  [
    'opus with reasoning → Router.think',
    'opus',
    true,
    { model: 'claude-opus-4-8', route: 'think', note: /follows Router.think/ },
  ],
  ['haiku → Router.background', 'haiku', true, { model: 'claude-haiku-4-5', route: 'background' }],
  [
    'full Claude id Cursor also serves → Router.default, and says how to run it',
    'claude-opus-4-8',
    false,
    {
      model: 'composer-2',
      route: 'default',
      note: /Cursor also serves "claude-opus-4-8": ask for "cursor,claude-opus-4-8"/,
    },
  ],
  [
    "Claude Code's default, claude-opus-4-8[1m]",
    'claude-opus-4-8[1m]',
    false,
    { model: 'composer-2', route: 'default', note: /"claude-opus-4-8" follows/ },
  ],
  [
    'full Claude id with reasoning → Router.think',
    'claude-opus-4-8[1m]',
    true,
    { model: 'claude-opus-4-8', route: 'think' },
  ],
  [
    'dated Claude id → Router.default',
    'claude-sonnet-4-5-20250929',
    false,
    { model: 'composer-2', route: 'default' },
  ],
  [
    'Claude id Cursor does not serve',
    'claude-sonnet-4-6',
    true,
    { model: 'claude-opus-4-8', route: 'think' },
  ],
  [
    'Claude haiku id → Router.background',
    'claude-haiku-4-5-20251001',
    false,
    { model: 'claude-haiku-4-5', route: 'background' },
  ],
  [
    'legacy Claude haiku id → Router.background',
    'claude-3-5-haiku-20241022',
    true,
    { model: 'claude-haiku-4-5', route: 'background' },
  ],
  [
    'Claude haiku id in any case',
    'Claude-HAIKU-4-5',
    false,
    { model: 'claude-haiku-4-5', route: 'background' },
  ],
  // Any other name runs the Router, and says so.
  [
    "Codex's default model → Router.default",
    'gpt-6.2-sol',
    false,
    {
      model: 'composer-2',
      route: 'default',
      note: /^"gpt-6.2-sol" is not in Cursor's catalog; Router.default \(composer-2\) runs$/,
    },
  ],
  [
    "Codex's default model with reasoning → Router.think",
    'gpt-6.2-sol',
    true,
    { model: 'claude-opus-4-8', route: 'think' },
  ],
  // A name near catalog models is reported, not guessed.
  [
    'gpt-5 when Cursor serves gpt-5.4 and gpt-5.5 → unmatched, Router.default',
    'gpt-5',
    false,
    {
      model: 'composer-2',
      route: 'unmatched',
      note: /which has "gpt-5.4", "gpt-5.5"; Router.default \(composer-2\) runs instead/,
    },
  ],
  [
    'gpt-5-codex → unmatched',
    'gpt-5-codex',
    true,
    { model: 'claude-opus-4-8', route: 'unmatched', note: /"gpt-5.4"/ },
  ],
  [
    'an unknown name with haiku → Router.background',
    'my-haiku-model',
    false,
    { model: 'claude-haiku-4-5', route: 'background' },
  ],
  ['empty model → Router.default', '', false, { model: 'composer-2', route: 'default' }],
  // Explicit provider,model.
  [
    'explicit provider,model',
    'cursor,claude-opus-4-8',
    false,
    { model: 'claude-opus-4-8', route: 'explicit' },
  ],
  [
    'explicit, provider in another case, spaces trimmed',
    'Cursor, gpt-5.4 ',
    true,
    { model: 'gpt-5.4', route: 'explicit' },
  ],
  ['explicit alias → its id', 'cursor,opus-4.8', false, { model: 'claude-opus-4-8', route: 'explicit' }],
  [
    'explicit with [1m]',
    'cursor,claude-opus-4-8[1m]',
    false,
    { model: 'claude-opus-4-8', route: 'explicit' },
  ],
  [
    'explicit wins over haiku',
    'cursor,claude-haiku-4-5-fast',
    false,
    { model: 'claude-haiku-4-5-fast', route: 'explicit' },
  ],
  // The config's models: when the catalog lacks the name, or could not be read.
  ['listed, not in the catalog', 'grok-9-listed', false, { model: 'grok-9-listed', route: 'listed' }],
  ['no catalog: listed', 'gpt-5.4', true, { model: 'gpt-5.4', route: 'listed' }, { catalog: undefined }],
  [
    'no catalog: not listed → Router.default, saying the catalog was not read',
    'gpt-5.5',
    false,
    { model: 'composer-2', route: 'default', note: /could not be read/ },
    { catalog: undefined },
  ],
  // A Router without background / think.
  [
    'no background route: haiku → default',
    'haiku',
    false,
    { model: 'composer-2', route: 'default' },
    { config: defaultOnly },
  ],
  [
    'no think route: reasoning → default',
    'opus',
    true,
    { model: 'composer-2', route: 'default' },
    { config: defaultOnly },
  ],
];

describe('resolveModelRoute', () => {
  it.each(rows)('%s (%s)', (_label, model, reasoningRequested, expected, options = {}) => {
    const result = resolveModelRoute(options.config ?? config, {
      model,
      reasoningRequested,
      catalog: 'catalog' in options ? options.catalog : catalog,
    });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value).toMatchObject({ provider: 'cursor', model: expected.model, route: expected.route });
    if (expected.note !== undefined) expect(result.value.note).toMatch(expected.note);
    // A name that runs as sent needs no explanation; every other one has one.
    const asSent = ['explicit', 'catalog', 'listed'].includes(expected.route);
    expect(result.value.note === undefined).toBe(asSent);
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
    const result = resolveModelRoute(routeConfig, { model, reasoningRequested: false, catalog });
    expect(result.ok).toBe(false);
    expect(result.ok ? '' : result.error).toMatch(message);
  });

  it('rejects a Router route to a non-Cursor provider, naming the Router key', () => {
    const routed: RouteConfig = { ...config, router: { ...config.router, think: 'openrouter,o3' } };
    const result = resolveModelRoute(routed, { model: 'claude-opus-4-8', reasoningRequested: true, catalog });
    expect(result).toEqual({
      ok: false,
      error:
        'Router.think routes to provider "openrouter", which is not a Cursor provider; this bridge only serves Cursor: use "cursor,<model>"',
    });
  });
});

/** The Router with a long-context model, at Claude Code Router's default threshold. */
const longContext: RouteConfig = {
  ...config,
  router: { ...config.router, longContext: 'cursor,gpt-5.4', webSearch: 'cursor,composer-2' },
};

describe('Router.longContext', () => {
  it.each<
    [
      label: string,
      request: Omit<ModelRouteRequest, 'catalog'>,
      route: ModelRouteKind,
      model: string,
      RouteConfig?,
    ]
  >([
    // Claude Code Router's comparison: strictly above the threshold.
    [
      'one token above 60000',
      { model: 'opus', reasoningRequested: false, tokenCount: 60_001 },
      'long-context',
      'gpt-5.4',
    ],
    [
      'exactly 60000',
      { model: 'opus', reasoningRequested: false, tokenCount: 60_000 },
      'default',
      'composer-2',
    ],
    ['not counted', { model: 'opus', reasoningRequested: false }, 'default', 'composer-2'],
    // Before the Router's other scenarios, as in Claude Code Router.
    [
      'over think',
      { model: 'opus', reasoningRequested: true, tokenCount: 90_000 },
      'long-context',
      'gpt-5.4',
    ],
    [
      'over background',
      { model: 'claude-haiku-4-5', reasoningRequested: false, tokenCount: 90_000 },
      'long-context',
      'gpt-5.4',
    ],
    [
      'over an offered web search',
      { model: 'opus', reasoningRequested: false, webSearch: 'offered', tokenCount: 90_000 },
      'long-context',
      'gpt-5.4',
    ],
    [
      'a name Cursor does not serve',
      { model: 'gpt-6.2-sol', reasoningRequested: false, tokenCount: 90_000 },
      'long-context',
      'gpt-5.4',
    ],
    // A model the client named runs whatever the size.
    [
      'explicit',
      { model: 'cursor,composer-2', reasoningRequested: false, tokenCount: 900_000 },
      'explicit',
      'composer-2',
    ],
    [
      "an Anthropic id (Claude Code's own name)",
      { model: 'claude-opus-4-8', reasoningRequested: false, tokenCount: 900_000 },
      'long-context',
      'gpt-5.4',
    ],
    [
      'catalog name',
      { model: 'gpt-5.5', reasoningRequested: false, tokenCount: 900_000 },
      'catalog',
      'gpt-5.5',
    ],
    // A search side call runs on Router.webSearch, whatever its conversation's size.
    [
      'search side call',
      { model: 'opus', reasoningRequested: false, webSearch: 'call', tokenCount: 900_000 },
      'web-search',
      'composer-2',
    ],
    // The configured threshold.
    [
      'above a configured threshold',
      { model: 'opus', reasoningRequested: false, tokenCount: 1_001 },
      'long-context',
      'gpt-5.4',
      { ...longContext, router: { ...longContext.router, longContextThreshold: 1_000 } },
    ],
    [
      'no long-context route',
      { model: 'opus', reasoningRequested: false, tokenCount: 900_000 },
      'default',
      'composer-2',
      config,
    ],
  ])('%s', (_label, request, route, model, routeConfig = longContext) => {
    const result = resolveModelRoute(routeConfig, { ...request, catalog });
    expect(result.ok && result.value).toMatchObject({ model, route });
  });

  it('says the count and the threshold in the note', () => {
    const result = resolveModelRoute(longContext, {
      model: 'opus',
      reasoningRequested: false,
      tokenCount: 70_123,
      catalog,
    });
    expect(result.ok && result.value.note).toBe(
      `Claude Code's "opus" follows Router.longContext (gpt-5.4; 70123 tokens > longContextThreshold 60000)`,
    );
  });

  it.each<[ModelRouteKind, boolean]>([
    ['default', true],
    ['think', true],
    ['background', true],
    ['web-search', true],
    ['unmatched', true],
    ['explicit', false],
    ['catalog', false],
    ['listed', false],
    ['long-context', false],
  ])('a request routed %s is counted: %s', (kind, counted) => {
    expect(mayRouteByTokenCount(longContext, kind)).toBe(counted);
    expect(mayRouteByTokenCount(config, kind)).toBe(false);
  });
});

describe('model names', () => {
  it.each([
    ['opus', true],
    ['Sonnet', true],
    ['claude-opus-4-8', true],
    ['claude-sonnet-4-5-20250929', true],
    ['claude-3-7-sonnet-latest', true],
    ['claude-4.5-sonnet', false],
    ['claude-4-sonnet', false],
    ['gpt-5', false],
    ['composer-2', false],
  ] as const)('isClaudeCodeModelName(%s) is %s', (name, expected) => {
    expect(isClaudeCodeModelName(name)).toBe(expected);
  });

  it.each([
    ['gpt-5', ['gpt-5.4', 'gpt-5.5']],
    ['gpt', ['gpt-5.4', 'gpt-5.5']],
    ['GPT_5', ['gpt-5.4', 'gpt-5.5']],
    ['gpt-6.2-sol', []],
    ['composer-1', []],
    ['claude-4.5-opus', ['claude-4.5-sonnet']],
    ['5', []],
  ] as const)('nearCatalogIds(%s)', (name, expected) => {
    expect(nearCatalogIds(catalog, name)).toEqual(expected);
  });
});
