/**
 * The CCR 3 plugin entry's `config` object → the bridge's resolved {@link BridgeConfig}, by way of the
 * same resolver `serve` uses (so `$VAR` interpolation, defaults and validation are the ones of config.json):
 * its config.json keys are the file, its cursor-sdk options and `cursorApiKey` the host's overrides.
 *
 * ```json
 * { "port": 3460, "apiKey": "<the secret the CCR provider carries>", "models": ["composer-2"],
 *   "cursorMode": "bridge", "cursorCwd": "~/src", "sandboxEnabled": false, "cursorApiKey": "crsr_…",
 *   "cursorTemplatesDir": "…", "cursorWorkspacesDir": "…", "LOG_LEVEL": "info",
 *   "Router": { "default": "cursor,composer-2", "webSearch": "cursor,composer-2" } }
 * ```
 * Every key is optional. The Cursor key is a `crsr_` `cursorApiKey` here, else `CURSOR_API_KEY` in CCR's
 * environment.
 */
import { join } from 'node:path';
import { z } from 'zod';
import { parseConfigValue } from '../../config/config-error.js';
import type { Env } from '../../config/interpolate.js';
import { resolveConfig, type BridgeConfig } from '../../config/load-config.js';

/** Where the plugin's HTTP backend listens when its config names no port (CCR 3 holds 3456–3458). */
export const defaultCcr3PluginPort = 3460;

const ccr3PluginConfigSchema = z.looseObject({
  port: z.number().int().min(1).max(65_535).optional(),
  apiKey: z.string().optional(),
  cursorApiKey: z.string().optional(),
  models: z.array(z.string().min(1)).min(1).optional(),
  cursorMode: z.unknown().optional(),
  cursorCwd: z.unknown().optional(),
  sandboxEnabled: z.unknown().optional(),
  firstEventTimeoutMs: z.unknown().optional(),
  idleTimeoutMs: z.unknown().optional(),
});

/** Keys copied as they are into the config.json-shaped value `resolveConfig` reads, so its errors name them. */
const topLevelKeys = [
  'LOG_LEVEL',
  // CCR 3 routes by its own rules; the plugin's Router picks within what they send it (`webSearch`: the
  // model of web search requests, `default` for names Cursor does not serve).
  'Router',
  'cursorTemplatesDir',
  'cursorWorkspacesDir',
  'cursorMaxSessions',
  'cursorStallTimeoutMs',
  'cursorWarmWorkspaces',
  'cursorWarmWorkspacesAtCap',
] as const;
/** Keys that are the cursor-sdk options, handed to `resolveConfig` as overrides. */
const cursorOptionKeys = [
  'cursorMode',
  'cursorCwd',
  'sandboxEnabled',
  'firstEventTimeoutMs',
  'idleTimeoutMs',
] as const;
const knownKeys = new Set<string>([
  'port',
  'apiKey',
  'cursorApiKey',
  'models',
  ...topLevelKeys,
  ...cursorOptionKeys,
]);

export type Ccr3PluginSettings = {
  /** The fixed port of the plugin's HTTP backend (the CCR provider's `api_base_url` names it). */
  port: number;
  config: BridgeConfig;
  /**
   * Identifies the engine these settings build: equal keys may share one engine across gateway reloads.
   * The port is not part of it (the engine does not depend on where it is served).
   */
  engineKey: string;
};

const pick = (source: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> =>
  Object.fromEntries(keys.flatMap((key) => (source[key] === undefined ? [] : [[key, source[key]]])));

/** JSON with object keys sorted, so equal settings give equal strings. */
const stableJson = (value: unknown): string =>
  JSON.stringify(value, (_key, item: unknown) =>
    item !== null && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => a.localeCompare(b)))
      : item,
  );

/**
 * Resolves the plugin's `config`. `configDir` is CCR's (relative paths resolve against it; messages name
 * `<configDir>/plugins[cursor-bridge].config`).
 * @throws ConfigError naming the field of an invalid value.
 */
export const resolveCcr3PluginConfig = (
  pluginConfig: unknown,
  host: { configDir: string; env: Env; homedir: string },
): Ccr3PluginSettings => {
  const file = join(host.configDir, 'plugins[cursor-bridge].config');
  const options = parseConfigValue(ccr3PluginConfigSchema, pluginConfig ?? {}, { file });
  const raw = {
    ...pick(options, topLevelKeys),
    ...(options.apiKey === undefined ? {} : { APIKEY: options.apiKey }),
    Providers: [{ name: 'cursor', models: options.models ?? ['composer-2'] }],
  };
  const config = resolveConfig(raw, {
    path: file,
    env: host.env,
    homedir: host.homedir,
    overrides: {
      fieldPath: [],
      interpolate: true,
      cursorOptions: pick(options, cursorOptionKeys),
      ...(options.cursorApiKey === undefined ? {} : { cursorApiKey: options.cursorApiKey }),
    },
  });
  const unknown = Object.keys(options).filter((key) => !knownKeys.has(key));
  if (unknown.length > 0) config.warnings.push(`${file}: ignoring unknown keys ${unknown.join(', ')}`);
  if (config.apiKey === undefined)
    config.warnings.push(
      `${file}: no apiKey: any local process can use the backend on 127.0.0.1; run cursor-bridge ccr install`,
    );
  const { port: _port, ...engineOptions } = options;
  return {
    port: options.port ?? defaultCcr3PluginPort,
    config,
    engineKey: stableJson([engineOptions, host.configDir]),
  };
};
