/**
 * Reads a CCR-style config.json into the bridge's resolved {@link BridgeConfig}: JSON5 → env
 * interpolation → schema → defaults. Never logs: anything worth telling the user is returned in
 * `warnings`; anything that makes the file unusable throws a {@link ConfigError}.
 */
import { readFile } from 'node:fs/promises';
import { homedir as osHomedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';

import { ConfigError, parseConfigValue } from './config-error.js';
import { resolveConfigOverrides, type ConfigOverrides } from './config-overrides.js';
import { configFileSchema } from './config-schema.js';
import type { ConfigFile, CursorMode, CursorOptions, LogLevel } from './config-schema.js';
import { isCursorProvider, resolveCursorOptions } from './cursor-provider.js';
import { interpolateEnv } from './interpolate.js';
import type { Env } from './interpolate.js';
import { convertJsonNodeToValue, parseJson5 } from './parse-json5.js';
import { errorMessage } from '../../lib/error-message.js';

/** CCR's defaults (v1 `src/constants.ts`). */
export const defaultHost = '127.0.0.1';
export const defaultPort = 3456;
export const defaultLongContextThreshold = 60_000;
const defaultCursorProvider = { name: 'cursor', models: ['composer-2'] } as const;

/** `Router` with the default route always present; values are `"provider,model"`. */
export type RouterConfig = {
  default: string;
  background?: string;
  think?: string;
  longContext?: string;
  longContextThreshold: number;
  webSearch?: string;
  image?: string;
};

/** The provider the bridge serves. */
export type CursorProviderConfig = {
  providerName: string;
  /** The provider's `models` list (a routing hint; the SDK catalog is authoritative). */
  models: string[];
  mode: CursorMode;
  /** `cursorCwd`, absolute (`~` and relative paths expanded); only used in `agent` mode. */
  cwd?: string;
  /**
   * `sandboxEnabled` (from any source: an override cannot turn the file's off) or `CCR_CURSOR_SANDBOX=1`; the
   * upstream still forces it off where unsupported.
   */
  sandboxEnabled: boolean;
  /**
   * Bounds on a run's silence (ms): `firstEventTimeoutMs` / `idleTimeoutMs` transformer options, or
   * `CURSOR_BRIDGE_FIRST_EVENT_TIMEOUT_MS` / `CURSOR_BRIDGE_IDLE_TIMEOUT_MS` (the environment wins);
   * absent ones take the upstream's defaults.
   */
  timeouts?: { firstEventTimeoutMs?: number; idleTimeoutMs?: number };
  /**
   * The host's Cursor key ({@link ConfigOverrides}) or the provider's `api_key`, after interpolation, possibly
   * still a `$VAR` literal; see `resolveCursorApiKey`.
   */
  apiKeyConfigured?: string;
};

export type BridgeConfig = {
  /** The config file path, and whether it existed (built-in defaults otherwise). */
  file: { path: string; found: boolean };
  host: string;
  /**
   * The file's non-loopback `HOST` when it was forced back to 127.0.0.1 for lack of `APIKEY` (CCR's
   * rule, and `host` then says 127.0.0.1): the CLI may still honour it with an `APIKEY` from the
   * environment, or refuse instead where 127.0.0.1 is unreachable (a container).
   */
  hostWithoutApiKey?: string;
  port: number;
  /** `APIKEY`: when set, clients must send it as `x-api-key` or `Authorization: Bearer`. */
  apiKey?: string;
  logLevel: LogLevel;
  /** `LOG`: logging is on unless the file says `false`. */
  log: boolean;
  /** Every configured provider, by name, so routing can explain a route to a non-Cursor provider. */
  providers: Array<{ name: string; isCursor: boolean }>;
  router: RouterConfig;
  cursor: CursorProviderConfig;
  /** `cursorTemplatesDir`, absolute: user overrides for the packaged workspace templates. */
  templatesDir?: string;
  /** Absolute root of the scratch workspaces. */
  workspacesDir: string;
  /** The `mcpHost` section, for `cursor-bridge mcp-host` (empty strings dropped). */
  mcpHost: McpHostConfig;
  /** `cursorMaxSessions` / `CURSOR_BRIDGE_MAX_SESSIONS`: the engine's LRU cap of live conversations. */
  maxSessions: number;
  /** `cursorStallTimeoutMs` / `CURSOR_BRIDGE_STALL_TIMEOUT_MS`: a non-reading client's grace. */
  stallTimeoutMs: number;
  /**
   * `cursorWarmWorkspaces` / `CURSOR_BRIDGE_WARM_WORKSPACES`: the most pre-warmed scratch workspaces kept
   * (0: none; default the session cap, at most 32).
   */
  warmWorkspaces: number;
  /**
   * `cursorWarmWorkspacesAtCap` / `CURSOR_BRIDGE_WARM_WORKSPACES_AT_CAP`: the pool warms only while its
   * entries plus the sessions' executors are below `maxSessions` + this (default 4).
   */
  warmWorkspacesAtCap: number;
  /** `cursorImages`: how images given by URL are fetched. */
  images: ImagesConfig;
  /** Things the user should know (defaults substituted, unsafe settings overridden). */
  warnings: string[];
};

export type ImagesConfig = {
  fetchUrls: boolean;
  maxFetchBytes: number;
  fetchTimeoutMs: number;
  /** CIDR ranges fetched from although not public. */
  allowNetworks: string[];
  /** Cursor model ids that take no images (their images become notes). */
  textOnlyModels: string[];
};

export const defaultImagesConfig: ImagesConfig = {
  fetchUrls: true,
  maxFetchBytes: 10 * 1024 * 1024,
  fetchTimeoutMs: 20_000,
  allowNetworks: [],
  textOnlyModels: [],
};

export const defaultMaxSessions = 32;
export const defaultStallTimeoutMs = 30_000;
/** The most pre-warmed workspaces kept by default (never more than the session cap). */
export const defaultWarmWorkspaces = 32;
/** Pre-warmed workspaces still built at the session cap, by default. */
export const defaultWarmWorkspacesAtCap = 4;

/** A non-negative integer from the environment, which wins over the file; a bad value is a ConfigError. */
const countFromEnv = (env: Env, name: string, file: string): number | undefined => {
  const value = env[name];
  if (value === undefined || value === '') return undefined;
  if (!/^\d+$/.test(value))
    throw new ConfigError(
      { file },
      `${name} must be a non-negative integer, got ${JSON.stringify(value.slice(0, 40))}`,
    );
  return Number(value);
};

/** A positive integer from the environment, which wins over the file; a bad value is a ConfigError. */
const positiveFromEnv = (env: Env, name: string, file: string): number | undefined => {
  const value = env[name];
  if (value === undefined || value === '') return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1)
    throw new ConfigError(
      { file },
      `${name} must be a positive integer, got ${JSON.stringify(value.slice(0, 40))}`,
    );
  return Number(value);
};

/** `mcpHost` as read from the file; the CLI applies flags, env and defaults. */
export type McpHostConfig = {
  token?: string;
  host?: string;
  port?: number;
  callDeadlineMs?: number;
  progressIntervalMs?: number;
  allowedHosts?: string[];
};

export type ConfigSourceOptions = {
  /** The config path (for messages and relative paths). */
  path: string;
  env: Env;
  /** Defaults to `os.homedir()`. */
  homedir?: string;
  /** What the host hands over besides the file (CCR's transformer options, the CCR 3 plugin's config). */
  overrides?: ConfigOverrides;
};

/** `$CURSOR_BRIDGE_CONFIG` if set, else `~/.claude-code-router/config.json`. */
export const defaultConfigPath = (env: Env, homedir: string): string => {
  const override = env['CURSOR_BRIDGE_CONFIG'];
  return override === undefined || override === ''
    ? join(homedir, '.claude-code-router', 'config.json')
    : expandHome(override, homedir);
};

/**
 * Loads and resolves the config at `options.path`. A missing file yields the built-in defaults (one
 * provider `cursor` with `composer-2`, Router.default `cursor,composer-2`, 127.0.0.1:3456).
 * @throws ConfigError for an unreadable file, bad JSON5 (with line/column) or an invalid field.
 */
export const loadConfig = async (options: ConfigSourceOptions): Promise<BridgeConfig> => {
  let text: string;
  try {
    text = await readFile(options.path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      return { ...resolveConfig({}, options), file: { path: options.path, found: false } };
    }
    const reason = errorMessage(error);
    throw new ConfigError({ file: options.path }, `cannot read the config file: ${reason}`, { cause: error });
  }
  return parseConfigText(text, options);
};

/** {@link loadConfig} for text already in memory. */
export const parseConfigText = (text: string, options: ConfigSourceOptions): BridgeConfig => {
  const parsed = parseJson5(text);
  if (!parsed.ok) {
    const { line, column, message } = parsed.error;
    throw new ConfigError({ file: options.path, line, column }, `invalid JSON5: ${message}`);
  }
  return resolveConfig(convertJsonNodeToValue(parsed.value), options);
};

/**
 * Resolves an already-parsed config value (interpolation, validation, defaults) with the host's
 * `options.overrides` on top. Pure apart from `os.homedir()` when `options.homedir` is absent.
 * @throws ConfigError naming the file and field.
 */
export const resolveConfig = (raw: unknown, options: ConfigSourceOptions): BridgeConfig => {
  const file = options.path;
  const home = options.homedir ?? osHomedir();
  const baseDir = dirname(resolve(file));
  const config = parseConfigValue(configFileSchema, interpolateEnv(raw, options.env), { file });
  const warnings: string[] = [];

  const providers = config.Providers ?? [];
  warnings.push(...misspelledProviderKeys(providers, file));
  const cursorIndexes = providers.flatMap((provider, index) => (isCursorProvider(provider) ? [index] : []));
  const cursor = resolveCursorProvider(
    config,
    cursorIndexes,
    { ...options, baseDir, homedir: home },
    warnings,
  );

  const apiKey = config.APIKEY === undefined || config.APIKEY === '' ? undefined : config.APIKEY;
  const hostCheck = restrictHostWithoutApiKey(config.HOST ?? defaultHost, apiKey);
  if (hostCheck.warning !== undefined) warnings.push(`${file}: ${hostCheck.warning}`);

  const router: RouterConfig = {
    default: `${cursor.providerName},${cursor.models[0] ?? defaultCursorProvider.models[0]}`,
    longContextThreshold: config.Router?.longContextThreshold ?? defaultLongContextThreshold,
  };
  for (const scenario of routeScenarios) {
    const route = config.Router?.[scenario]?.trim();
    if (route !== undefined && route !== '') router[scenario] = route;
  }

  const maxSessions =
    positiveFromEnv(options.env, 'CURSOR_BRIDGE_MAX_SESSIONS', file) ??
    config.cursorMaxSessions ??
    defaultMaxSessions;
  return {
    file: { path: file, found: true },
    host: hostCheck.host,
    ...(hostCheck.warning === undefined ? {} : { hostWithoutApiKey: config.HOST ?? defaultHost }),
    port: config.PORT ?? defaultPort,
    ...(apiKey === undefined ? {} : { apiKey }),
    logLevel: config.LOG_LEVEL ?? 'info',
    log: config.LOG !== false,
    providers: providers.map((entry, index) => ({
      name: entry.name,
      isCursor: cursorIndexes.includes(index),
    })),
    router,
    cursor,
    ...(config.cursorTemplatesDir === undefined
      ? {}
      : { templatesDir: expandPath(config.cursorTemplatesDir, baseDir, home) }),
    workspacesDir:
      config.cursorWorkspacesDir === undefined
        ? join(home, '.claude-code-router', 'cursor-sdk-workspaces')
        : expandPath(config.cursorWorkspacesDir, baseDir, home),
    mcpHost: resolveMcpHost(config.mcpHost),
    maxSessions,
    stallTimeoutMs:
      positiveFromEnv(options.env, 'CURSOR_BRIDGE_STALL_TIMEOUT_MS', file) ??
      config.cursorStallTimeoutMs ??
      defaultStallTimeoutMs,
    warmWorkspaces:
      countFromEnv(options.env, 'CURSOR_BRIDGE_WARM_WORKSPACES', file) ??
      config.cursorWarmWorkspaces ??
      Math.min(defaultWarmWorkspaces, maxSessions),
    warmWorkspacesAtCap:
      countFromEnv(options.env, 'CURSOR_BRIDGE_WARM_WORKSPACES_AT_CAP', file) ??
      config.cursorWarmWorkspacesAtCap ??
      defaultWarmWorkspacesAtCap,
    images: {
      fetchUrls: config.cursorImages?.fetchUrls ?? defaultImagesConfig.fetchUrls,
      maxFetchBytes: config.cursorImages?.maxFetchBytes ?? defaultImagesConfig.maxFetchBytes,
      fetchTimeoutMs: config.cursorImages?.fetchTimeoutMs ?? defaultImagesConfig.fetchTimeoutMs,
      allowNetworks: config.cursorImages?.allowNetworks ?? defaultImagesConfig.allowNetworks,
      textOnlyModels: config.cursorImages?.textOnlyModels ?? defaultImagesConfig.textOnlyModels,
    },
    warnings,
  };
};

const timeoutEnv = {
  firstEventTimeoutMs: 'CURSOR_BRIDGE_FIRST_EVENT_TIMEOUT_MS',
  idleTimeoutMs: 'CURSOR_BRIDGE_IDLE_TIMEOUT_MS',
} as const;

/** The run silence bounds from the transformer options, overridden by the environment; `{}` when none is set. */
const resolveTimeouts = (
  cursorOptions: Pick<CursorOptions, keyof typeof timeoutEnv>,
  options: ConfigSourceOptions,
): Pick<CursorProviderConfig, 'timeouts'> => {
  const timeouts: NonNullable<CursorProviderConfig['timeouts']> = {};
  for (const key of Object.keys(timeoutEnv) as Array<keyof typeof timeoutEnv>) {
    const text = options.env[timeoutEnv[key]]?.trim();
    if (text !== undefined && text !== '') {
      if (!/^\d+$/.test(text))
        throw new ConfigError(
          { file: options.path, field: timeoutEnv[key] },
          `expected a whole number of milliseconds (0 disables), got "${text}"`,
        );
      timeouts[key] = Number(text);
    } else if (cursorOptions[key] !== undefined) timeouts[key] = cursorOptions[key];
  }
  return Object.keys(timeouts).length === 0 ? {} : { timeouts };
};

/**
 * The first Cursor provider (or the built-in one when `Providers` is absent or empty) with its options: the
 * file's, then the host's overrides on top.
 */
const resolveCursorProvider = (
  config: ConfigFile,
  cursorIndexes: number[],
  options: ConfigSourceOptions & { baseDir: string; homedir: string },
  warnings: string[],
): CursorProviderConfig => {
  const file = options.path;
  const providers = config.Providers ?? [];
  const cursorIndex = cursorIndexes[0];
  if (cursorIndex === undefined && providers.length > 0) {
    const found = providers.map((provider) => provider.name).join(', ');
    throw new ConfigError(
      { file, field: 'Providers' },
      `no Cursor provider: name one provider "cursor" or add "cursor-sdk" to its transformer.use (found: ${found})`,
    );
  }
  if (cursorIndex === undefined && config.Providers !== undefined) {
    warnings.push(
      `${file}: Providers is empty; serving the built-in "cursor" provider with models composer-2`,
    );
  }
  const provider = cursorIndex === undefined ? undefined : providers[cursorIndex];
  if (cursorIndexes.length > 1) {
    const ignored = cursorIndexes.slice(1).map((index) => providers[index]?.name);
    warnings.push(
      `${file}: several Cursor providers; serving "${provider?.name}", ignoring ${ignored.join(', ')}`,
    );
  }
  const fileOptions = cursorIndex === undefined ? {} : resolveCursorOptions(config, cursorIndex, file);
  const host = resolveConfigOverrides(options.overrides, file, options.env);
  const cursorOptions = { ...fileOptions, ...host.cursorOptions };
  const fileApiKey = provider?.api_key === '' ? undefined : provider?.api_key;
  const apiKey = host.cursorApiKey ?? fileApiKey;
  return {
    providerName: provider?.name ?? defaultCursorProvider.name,
    models: provider === undefined ? [...defaultCursorProvider.models] : provider.models,
    mode: cursorOptions.cursorMode ?? 'bridge',
    sandboxEnabled:
      fileOptions.sandboxEnabled === true ||
      host.cursorOptions.sandboxEnabled === true ||
      options.env['CCR_CURSOR_SANDBOX'] === '1',
    ...resolveTimeouts(cursorOptions, options),
    ...(cursorOptions.cursorCwd === undefined
      ? {}
      : { cwd: expandPath(cursorOptions.cursorCwd, options.baseDir, options.homedir) }),
    ...(apiKey === undefined ? {} : { apiKeyConfigured: apiKey }),
  };
};

/** Spellings other tools use for a provider's URL and key; CCR (and so the bridge) reads only its own. */
const providerKeySpellings: Readonly<Record<string, string>> = {
  apiKey: 'api_key',
  baseUrl: 'api_base_url',
  baseURL: 'api_base_url',
  apiBaseUrl: 'api_base_url',
};

/**
 * A provider key CCR does not read is silently ignored (a key from `apiKey` never reaches Cursor):
 * one warning per such key, naming the provider, the key and CCR's spelling.
 * CCR reads `api_base_url` / `api_key` in config.json, never `baseUrl` / `apiKey`.
 */
const misspelledProviderKeys = (providers: NonNullable<ConfigFile['Providers']>, file: string): string[] =>
  providers.flatMap((provider, index) =>
    Object.keys(provider).flatMap((key) => {
      const spelling = Object.hasOwn(providerKeySpellings, key) ? providerKeySpellings[key] : undefined;
      return spelling === undefined
        ? []
        : [
            `${file}: Providers[${index}] ("${provider.name}").${key} is ignored: CCR's config spells it "${spelling}"`,
          ];
    }),
  );

const resolveMcpHost = (section: ConfigFile['mcpHost']): McpHostConfig => {
  if (section === undefined) return {};
  const { token, host, port, callDeadlineMs, progressIntervalMs, allowedHosts } = section;
  return {
    ...(token === undefined || token === '' ? {} : { token }),
    ...(host === undefined ? {} : { host }),
    ...(port === undefined ? {} : { port }),
    ...(callDeadlineMs === undefined ? {} : { callDeadlineMs }),
    ...(progressIntervalMs === undefined ? {} : { progressIntervalMs }),
    ...(allowedHosts === undefined ? {} : { allowedHosts }),
  };
};

const routeScenarios = ['default', 'background', 'think', 'longContext', 'webSearch', 'image'] as const;

const loopbackHosts = new Set(['127.0.0.1', 'localhost', '::1']);

/**
 * CCR's rule: listening beyond loopback needs `APIKEY`. A non-loopback host without a key is forced
 * back to 127.0.0.1 with a warning. The CLI applies this to `--host` too.
 */
export const restrictHostWithoutApiKey = (
  host: string,
  apiKey: string | undefined,
): { host: string; warning?: string } => {
  if (loopbackHosts.has(host) || (apiKey !== undefined && apiKey !== '')) return { host };
  return {
    host: defaultHost,
    warning: `HOST ${host} needs APIKEY (anyone on the network could use your Cursor account); listening on ${defaultHost} instead`,
  };
};

const expandHome = (path: string, homedir: string): string => {
  if (path === '~') return homedir;
  return path.startsWith('~/') ? join(homedir, path.slice(2)) : path;
};

/** `~` / `~/x` → under the home directory; relative paths → against `baseDir` (the config's directory). */
const expandPath = (path: string, baseDir: string, homedir: string): string => {
  const expanded = expandHome(path, homedir);
  return isAbsolute(expanded) ? expanded : resolve(baseDir, expanded);
};
