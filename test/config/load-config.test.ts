import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ConfigError } from '../../src/config/config-error.js';
import {
  defaultConfigPath,
  loadConfig,
  parseConfigText,
  resolveConfig,
  restrictHostWithoutApiKey,
} from '../../src/config/load-config.js';
import type { BridgeConfig } from '../../src/config/load-config.js';

const home = '/home/user';
const path = '/etc/bridge/config.json';
const resolve = (raw: unknown, env: Record<string, string> = {}): BridgeConfig =>
  resolveConfig(raw, { path, env, homedir: home });

const configErrorOf = (action: () => unknown): ConfigError => {
  try {
    action();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
};

const specExample = {
  Providers: [
    {
      name: 'cursor',
      api_base_url: 'https://cursor.com',
      api_key: '$CURSOR_API_KEY',
      models: ['composer-2', 'claude-opus-4-8', 'gpt-5.4'],
      transformer: { use: [['cursor-sdk', { cursorMode: 'bridge' }]] },
    },
  ],
  Router: { default: 'cursor,composer-2' },
};

describe('resolveConfig', () => {
  it('resolves a typical Cursor provider config with defaults for everything unset', () => {
    expect(resolve(specExample, { CURSOR_API_KEY: 'crsr_k' })).toEqual({
      file: { path, found: true },
      host: '127.0.0.1',
      port: 3456,
      logLevel: 'info',
      log: true,
      providers: [{ name: 'cursor', isCursor: true }],
      router: { default: 'cursor,composer-2', longContextThreshold: 60000 },
      cursor: {
        providerName: 'cursor',
        models: ['composer-2', 'claude-opus-4-8', 'gpt-5.4'],
        mode: 'bridge',
        sandboxEnabled: false,
        apiKeyConfigured: 'crsr_k',
      },
      workspacesDir: '/home/user/.claude-code-router/cursor-sdk-workspaces',
      mcpHost: {},
      maxSessions: 32,
      stallTimeoutMs: 30_000,
      warmWorkspaces: 32,
      warmWorkspacesAtCap: 4,
      images: {
        fetchUrls: true,
        maxFetchBytes: 10 * 1024 * 1024,
        fetchTimeoutMs: 20_000,
        allowNetworks: [],
        textOnlyModels: [],
      },
      warnings: [],
    });
  });

  it('reads the mcpHost section for cursor-bridge mcp-host, interpolating the token', () => {
    const config = resolve(
      {
        mcpHost: {
          token: '$MCP_TOKEN',
          host: '0.0.0.0',
          port: '4000',
          callDeadlineMs: 30000,
          progressIntervalMs: 0,
          allowedHosts: ['tools.internal'],
        },
      },
      { MCP_TOKEN: 'tok-1' },
    );
    expect(config.mcpHost).toEqual({
      token: 'tok-1',
      host: '0.0.0.0',
      port: 4000,
      callDeadlineMs: 30000,
      progressIntervalMs: 0,
      allowedHosts: ['tools.internal'],
    });
    // The serve keys are untouched by mcpHost.
    expect(config.host).toBe('127.0.0.1');
    expect(resolve({ mcpHost: { token: '' } }).mcpHost).toEqual({});
  });

  it('names the mcpHost field at fault', () => {
    expect(() => resolve({ mcpHost: { port: 70000 } })).toThrow(
      `${path}: mcpHost.port: expected a port number 0-65535`,
    );
    expect(() => resolve({ mcpHost: { callDeadlineMs: 0 } })).toThrow('mcpHost.callDeadlineMs');
  });

  it('keeps an unresolved placeholder literal in apiKeyConfigured', () => {
    expect(resolve(specExample).cursor.apiKeyConfigured).toBe('$CURSOR_API_KEY');
  });

  it('reads CCR keys, interpolating env first (PORT as a string)', () => {
    const config = resolve(
      {
        HOST: '0.0.0.0',
        PORT: '$PORT',
        APIKEY: '${BRIDGE_KEY}',
        LOG_LEVEL: 'DEBUG',
        LOG: false,
        UNKNOWN_KEY: { kept: true },
        ...specExample,
        Router: {
          default: 'cursor,composer-2',
          background: 'cursor,claude-haiku-4-5',
          think: ' cursor,claude-opus-4-8 ',
          longContext: '',
          longContextThreshold: 100000,
        },
        cursorTemplatesDir: 'templates',
        cursorWorkspacesDir: '~/scratch',
      },
      { PORT: '4000', BRIDGE_KEY: 'secret' },
    );
    expect(config).toMatchObject({
      host: '0.0.0.0',
      port: 4000,
      apiKey: 'secret',
      logLevel: 'debug',
      log: false,
      router: {
        default: 'cursor,composer-2',
        background: 'cursor,claude-haiku-4-5',
        think: 'cursor,claude-opus-4-8',
        longContextThreshold: 100000,
      },
      templatesDir: '/etc/bridge/templates',
      workspacesDir: '/home/user/scratch',
      warnings: [],
    });
    expect(config.router).not.toHaveProperty('longContext');
  });

  it('forces HOST back to 127.0.0.1 without APIKEY, with a returned warning', () => {
    const config = resolve({ ...specExample, HOST: '0.0.0.0', APIKEY: '' });
    expect(config.host).toBe('127.0.0.1');
    expect(config.apiKey).toBeUndefined();
    expect(config.warnings).toEqual([
      expect.stringMatching(/^\/etc\/bridge\/config\.json: HOST 0\.0\.0\.0 needs APIKEY/),
    ]);
  });

  it.each([
    ['name "cursor"', { name: 'cursor', models: ['m'] }],
    ['name in another case', { name: 'Cursor', models: ['m'] }],
    ['transformer.use string', { name: 'cx', models: ['m'], transformer: { use: ['cursor-sdk'] } }],
    [
      'transformer.use tuple',
      { name: 'cx', models: ['m'], transformer: { use: ['maxtoken', ['cursor-sdk', {}]] } },
    ],
  ])('detects the Cursor provider by %s', (_label, provider) => {
    const config = resolve({ Providers: [{ name: 'openrouter', models: ['x'] }, provider] });
    expect(config.cursor.providerName).toBe(provider.name);
    expect(config.cursor.models).toEqual(['m']);
    expect(config.providers).toEqual([
      { name: 'openrouter', isCursor: false },
      { name: provider.name, isCursor: true },
    ]);
    expect(config.router.default).toBe(`${provider.name},m`);
  });

  it('does not treat a model-level cursor-sdk use as a Cursor provider', () => {
    const error = configErrorOf(() =>
      resolve({ Providers: [{ name: 'other', transformer: { 'some-model': { use: ['cursor-sdk'] } } }] }),
    );
    expect(error.field).toBe('Providers');
    expect(error.message).toMatch(
      /^\/etc\/bridge\/config\.json: Providers: no Cursor provider.*\(found: other\)$/,
    );
  });

  it('warns and serves the first when several providers are Cursor providers', () => {
    const config = resolve({
      Providers: [{ name: 'cursor' }, { name: 'c2', transformer: { use: ['cursor-sdk'] } }],
    });
    expect(config.cursor.providerName).toBe('cursor');
    expect(config.warnings).toEqual([expect.stringContaining('serving "cursor", ignoring c2')]);
  });

  it("warns, naming CCR's spelling, for each provider key it would silently ignore (apiKey, baseUrl)", () => {
    const config = resolve({
      Providers: [
        { name: 'openrouter', baseUrl: 'https://openrouter.ai/api/v1', api_key: 'sk-or' },
        { name: 'cursor', apiKey: 'crsr_x', api_base_url: 'https://cursor.com' },
      ],
    });
    expect(config.warnings).toEqual([
      `${path}: Providers[0] ("openrouter").baseUrl is ignored: CCR's config spells it "api_base_url"`,
      `${path}: Providers[1] ("cursor").apiKey is ignored: CCR's config spells it "api_key"`,
    ]);
    expect(config.cursor.apiKeyConfigured).toBeUndefined();
    expect(resolve({ Providers: [{ name: 'cursor', api_key: 'k', api_base_url: 'u' }] }).warnings).toEqual(
      [],
    );
  });

  it('serves the built-in provider (with a warning) when Providers is empty, as in a fresh CCR config', () => {
    const config = resolve({ PORT: 3456, Providers: [], Router: {} });
    expect(config.cursor).toEqual({
      providerName: 'cursor',
      models: ['composer-2'],
      mode: 'bridge',
      sandboxEnabled: false,
    });
    expect(config.router.default).toBe('cursor,composer-2');
    expect(config.warnings).toEqual([expect.stringContaining('Providers is empty')]);
  });

  it('reads cursor options from the provider tuple', () => {
    const config = resolve({
      Providers: [
        {
          name: 'cursor',
          transformer: {
            use: [['cursor-sdk', { cursorMode: 'agent', cursorCwd: '~/proj', sandboxEnabled: true }]],
          },
        },
      ],
    });
    expect(config.cursor).toMatchObject({ mode: 'agent', cwd: '/home/user/proj', sandboxEnabled: true });
  });

  it('reads cursor options from a top-level transformers[] entry whose path ends in cursor-sdk, tuple winning', () => {
    const withUse = (use: unknown[]) => ({
      transformers: [
        { path: '/opt/plugins/other.js', options: { cursorMode: 'agent' } },
        { path: '/opt/plugins/cursor-sdk.js', options: { cursorMode: 'plan', cursorCwd: 'work' } },
      ],
      Providers: [{ name: 'cursor', transformer: { use } }],
    });
    expect(resolve(withUse(['cursor-sdk'])).cursor).toMatchObject({ mode: 'plan', cwd: '/etc/bridge/work' });
    expect(resolve(withUse([['cursor-sdk', { cursorMode: 'bridge' }]])).cursor).toMatchObject({
      mode: 'bridge',
      cwd: '/etc/bridge/work',
    });
  });

  it('reads the run silence bounds from the transformer options, the environment winning', () => {
    const withUse = (use: unknown[]) => ({ Providers: [{ name: 'cursor', transformer: { use } }] });
    const withBounds = withUse([['cursor-sdk', { firstEventTimeoutMs: 5000, idleTimeoutMs: 0 }]]);
    expect(resolve(withBounds).cursor.timeouts).toEqual({ firstEventTimeoutMs: 5000, idleTimeoutMs: 0 });
    expect(resolve(withBounds, { CURSOR_BRIDGE_IDLE_TIMEOUT_MS: '7000' }).cursor.timeouts).toEqual({
      firstEventTimeoutMs: 5000,
      idleTimeoutMs: 7000,
    });
    expect(resolve(specExample).cursor.timeouts).toBeUndefined();
    expect(
      configErrorOf(() => resolve(specExample, { CURSOR_BRIDGE_FIRST_EVENT_TIMEOUT_MS: '45s' })),
    ).toMatchObject({ field: 'CURSOR_BRIDGE_FIRST_EVENT_TIMEOUT_MS' });
    expect(() => resolve(withUse([['cursor-sdk', { idleTimeoutMs: -1 }]]))).toThrow(ConfigError);
  });

  it("puts a host's overrides over the file's cursor options and key, also on the built-in provider", () => {
    const overrides = {
      fieldPath: ['plugin'],
      interpolate: true,
      cursorOptions: { cursorMode: 'agent', cursorCwd: '~/$PROJECT' },
      cursorApiKey: '$HOST_KEY',
    };
    const env = { PROJECT: 'app', HOST_KEY: 'crsr_host' };
    for (const raw of [specExample, {}]) {
      expect(resolveConfig(raw, { path, env, homedir: home, overrides }).cursor).toMatchObject({
        mode: 'agent',
        cwd: '/home/user/app',
        apiKeyConfigured: 'crsr_host',
      });
    }
    // An empty key is none: the file's stays.
    expect(
      resolveConfig(specExample, {
        path,
        env: {},
        homedir: home,
        overrides: { ...overrides, cursorApiKey: '' },
      }).cursor.apiKeyConfigured,
    ).toBe('$CURSOR_API_KEY');
    expect(
      configErrorOf(() =>
        resolveConfig(
          {},
          { path, env: {}, homedir: home, overrides: { ...overrides, cursorOptions: { idleTimeoutMs: -1 } } },
        ),
      ),
    ).toMatchObject({ file: path, field: 'plugin.idleTimeoutMs' });
  });

  it('enables the sandbox from CCR_CURSOR_SANDBOX=1', () => {
    expect(resolve(specExample, { CCR_CURSOR_SANDBOX: '1' }).cursor.sandboxEnabled).toBe(true);
    expect(resolve(specExample, { CCR_CURSOR_SANDBOX: '0' }).cursor.sandboxEnabled).toBe(false);
  });

  it.each([
    [{ PORT: 70000 }, 'PORT', 'expected a port number 0-65535'],
    [{ PORT: 'abc' }, 'PORT', 'expected an integer'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL', 'Invalid option'],
    [{ Providers: [{ models: [] }] }, 'Providers[0].name', 'expected string'],
    [{ Providers: [{ name: 'cursor', models: 'composer-2' }] }, 'Providers[0].models', 'expected array'],
    [
      { Providers: [{ name: 'cursor', transformer: { use: [42] } }] },
      'Providers[0].transformer.use[0]',
      'transformer name',
    ],
    [
      { Providers: [{ name: 'cursor', transformer: { m1: { use: 'x' } } }] },
      'Providers[0].transformer.m1.use',
      'expected array',
    ],
    [{ Router: { think: 'claude-opus-4-8' } }, 'Router.think', '"provider,model"'],
    [{ Router: { default: '$UNSET_ROUTE' } }, 'Router.default', '"provider,model"'],
    [{ transformers: [{ options: {} }] }, 'transformers[0].path', 'expected string'],
    [
      { Providers: [{ name: 'cursor', transformer: { use: [['cursor-sdk', { cursorMode: 'turbo' }]] } }] },
      'Providers[0].transformer.use[0][1].cursorMode',
      'Invalid option',
    ],
    [
      {
        transformers: [{ path: 'cursor-sdk', options: { sandboxEnabled: 'yes' } }],
        Providers: [{ name: 'cursor' }],
      },
      'transformers[0].options.sandboxEnabled',
      'expected boolean',
    ],
  ])('rejects %j naming the file and field %s', (raw, field, reason) => {
    const error = configErrorOf(() => resolve(raw));
    expect(error).toMatchObject({ file: path, field });
    expect(error.reason).toContain(reason);
    expect(error.message).toBe(`${path}: ${field}: ${error.reason}`);
  });

  it('rejects a root that is not an object without inventing a field', () => {
    const error = configErrorOf(() => resolve([1, 2]));
    expect(error.field).toBeUndefined();
    expect(error.message).toMatch(/^\/etc\/bridge\/config\.json: .*expected object/);
  });
});

describe('parseConfigText', () => {
  it('accepts JSON5 (comments, trailing commas, unquoted keys)', () => {
    const text = `{
      // local bridge
      PORT: 3457,
      Providers: [{ name: 'cursor', models: ['composer-2',], },],
    }`;
    expect(parseConfigText(text, { path, env: {}, homedir: home }).port).toBe(3457);
  });

  it('reports bad JSON5 with line and column', () => {
    const error = configErrorOf(() =>
      parseConfigText('{\n  "PORT": 3456\n  "HOST": "x"\n}', { path, env: {}, homedir: home }),
    );
    expect(error).toMatchObject({ file: path, line: 3, column: 3, field: undefined });
    expect(error.message).toBe(`${path}:3:3: invalid JSON5: expected ',' or '}' but found '"'`);
  });
});

describe('loadConfig', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bridge-config-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('uses the built-in defaults when the file does not exist', async () => {
    const config = await loadConfig({ path: join(dir, 'missing.json'), env: {}, homedir: home });
    expect(config).toMatchObject({
      file: { path: join(dir, 'missing.json'), found: false },
      host: '127.0.0.1',
      port: 3456,
      router: { default: 'cursor,composer-2' },
      cursor: { providerName: 'cursor', models: ['composer-2'], mode: 'bridge' },
      warnings: [],
    });
    expect(config.providers).toEqual([]);
  });

  it('reads, interpolates and resolves a file', async () => {
    const file = join(dir, 'config.json');
    await writeFile(file, JSON.stringify(specExample));
    const config = await loadConfig({ path: file, env: { CURSOR_API_KEY: 'crsr_x' }, homedir: home });
    expect(config.file).toEqual({ path: file, found: true });
    expect(config.cursor.apiKeyConfigured).toBe('crsr_x');
  });

  it('turns an unreadable path into a ConfigError', async () => {
    const sub = join(dir, 'a-directory');
    await mkdir(sub);
    await expect(loadConfig({ path: sub, env: {}, homedir: home })).rejects.toMatchObject({
      name: 'ConfigError',
      file: sub,
      message: expect.stringContaining('cannot read the config file'),
    });
  });
});

describe('defaultConfigPath', () => {
  it('prefers $CURSOR_BRIDGE_CONFIG, expanding ~', () => {
    expect(defaultConfigPath({ CURSOR_BRIDGE_CONFIG: '/x/c.json' }, home)).toBe('/x/c.json');
    expect(defaultConfigPath({ CURSOR_BRIDGE_CONFIG: '~/c.json' }, home)).toBe('/home/user/c.json');
  });

  it('falls back to the CCR config path', () => {
    expect(defaultConfigPath({}, home)).toBe('/home/user/.claude-code-router/config.json');
    expect(defaultConfigPath({ CURSOR_BRIDGE_CONFIG: '' }, home)).toBe(
      '/home/user/.claude-code-router/config.json',
    );
  });
});

describe('restrictHostWithoutApiKey', () => {
  it.each([
    ['127.0.0.1', undefined, '127.0.0.1', false],
    ['localhost', undefined, 'localhost', false],
    ['::1', undefined, '::1', false],
    ['0.0.0.0', 'key', '0.0.0.0', false],
    ['0.0.0.0', undefined, '127.0.0.1', true],
    ['192.168.1.5', '', '127.0.0.1', true],
  ])('%s with APIKEY %j → %s', (host, apiKey, expected, warns) => {
    const result = restrictHostWithoutApiKey(host, apiKey);
    expect(result.host).toBe(expected);
    expect(result.warning !== undefined).toBe(warns);
  });
});

describe('session cap and stall deadline', () => {
  it('defaults to 32 sessions and 30 s; the file sets them; the environment wins', () => {
    expect(resolve({})).toMatchObject({ maxSessions: 32, stallTimeoutMs: 30_000 });
    expect(resolve({ cursorMaxSessions: 64, cursorStallTimeoutMs: '5000' })).toMatchObject({
      maxSessions: 64,
      stallTimeoutMs: 5_000,
    });
    expect(
      resolve(
        { cursorMaxSessions: 64 },
        { CURSOR_BRIDGE_MAX_SESSIONS: '128', CURSOR_BRIDGE_STALL_TIMEOUT_MS: '700' },
      ),
    ).toMatchObject({ maxSessions: 128, stallTimeoutMs: 700 });
  });

  it('refuses a cap below 1 or a non-integer, naming the field or variable', () => {
    expect(configErrorOf(() => resolve({ cursorMaxSessions: 0 })).message).toContain('cursorMaxSessions');
    expect(configErrorOf(() => resolve({}, { CURSOR_BRIDGE_MAX_SESSIONS: 'lots' })).message).toContain(
      'CURSOR_BRIDGE_MAX_SESSIONS',
    );
  });
});

describe('pre-warmed workspaces', () => {
  it('defaults to the session cap, at most 32; the file sets it (0 disables); the environment wins', () => {
    expect(resolve({})).toMatchObject({ warmWorkspaces: 32 });
    expect(resolve({ cursorMaxSessions: 4 })).toMatchObject({ warmWorkspaces: 4 });
    expect(resolve({ cursorMaxSessions: 100 })).toMatchObject({ warmWorkspaces: 32 });
    expect(resolve({ cursorWarmWorkspaces: 0 })).toMatchObject({ warmWorkspaces: 0 });
    expect(resolve({ cursorWarmWorkspaces: '3' }, { CURSOR_BRIDGE_WARM_WORKSPACES: '9' })).toMatchObject({
      warmWorkspaces: 9,
    });
  });

  it('refuses a negative or non-integer count, naming the field or variable', () => {
    expect(configErrorOf(() => resolve({ cursorWarmWorkspaces: -1 })).message).toContain(
      'cursorWarmWorkspaces',
    );
    expect(configErrorOf(() => resolve({}, { CURSOR_BRIDGE_WARM_WORKSPACES: 'some' })).message).toContain(
      'CURSOR_BRIDGE_WARM_WORKSPACES',
    );
  });

  it('keeps 4 warm beyond the session cap by default; the file sets it; the environment wins', () => {
    expect(resolve({})).toMatchObject({ warmWorkspacesAtCap: 4 });
    expect(resolve({ cursorWarmWorkspacesAtCap: 0 })).toMatchObject({ warmWorkspacesAtCap: 0 });
    expect(
      resolve({ cursorWarmWorkspacesAtCap: 2 }, { CURSOR_BRIDGE_WARM_WORKSPACES_AT_CAP: '6' }),
    ).toMatchObject({ warmWorkspacesAtCap: 6 });
    expect(configErrorOf(() => resolve({ cursorWarmWorkspacesAtCap: -1 })).message).toContain(
      'cursorWarmWorkspacesAtCap',
    );
    expect(configErrorOf(() => resolve({}, { CURSOR_BRIDGE_WARM_WORKSPACES_AT_CAP: 'x' })).message).toContain(
      'CURSOR_BRIDGE_WARM_WORKSPACES_AT_CAP',
    );
  });

  it('reads cursorImages: fetching image URLs, its bounds and the networks allowed besides public ones', () => {
    expect(
      resolve({
        cursorImages: {
          fetchUrls: false,
          maxFetchBytes: '2048',
          fetchTimeoutMs: 500,
          allowNetworks: ['10.0.0.0/8', 'fd00::/8'],
        },
      }),
    ).toMatchObject({
      images: {
        fetchUrls: false,
        maxFetchBytes: 2048,
        fetchTimeoutMs: 500,
        allowNetworks: ['10.0.0.0/8', 'fd00::/8'],
      },
    });
    const error = configErrorOf(() => resolve({ cursorImages: { allowNetworks: ['10.0.0.0'] } }));
    expect(error.message).toContain('cursorImages.allowNetworks[0]');
    expect(error.message).toContain('expected a CIDR');
    expect(configErrorOf(() => resolve({ cursorImages: { maxFetchBytes: 0 } })).message).toContain(
      'cursorImages.maxFetchBytes',
    );
  });
});
