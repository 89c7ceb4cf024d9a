import { resolveLogLevel } from '../config/log-level.js';
import type { LogLevel } from '../config/config-schema.js';
import { loadConfig, type BridgeConfig } from '../config/load-config.js';
import type { Result } from '../../lib/result.js';
import type { CliIo } from './cli-io.js';
import { resolveConfigPath } from './config-path.js';

/** What a long-running command (`serve`, `mcp-host`) starts from. */
export type CommandConfig = { path: string; config: BridgeConfig; level: LogLevel };

/**
 * The command's config file (see `resolveConfigPath` for the lookup order) and its log level
 * (`LOG_LEVEL` over the file's). An invalid `LOG_LEVEL` is an error to report as bad usage; an invalid
 * config file throws the loader's `ConfigError`.
 */
export const loadCommandConfig = async (
  io: CliIo,
  configPath: string | undefined,
): Promise<Result<CommandConfig, string>> => {
  const path = resolveConfigPath(io, configPath);
  const config = await loadConfig({ path, env: io.env, homedir: io.homedir });
  const level = resolveLogLevel(io.env, config.logLevel);
  return level.ok ? { ok: true, value: { path, config, level: level.value } } : level;
};

/** What `serve` and `mcp-host` print on stderr when no config file was found at `path`. */
export const builtInDefaultsNotice = (path: string): string =>
  `cursor-bridge: no config file at ${path}; starting on built-in defaults (provider cursor, model composer-2). ` +
  `Lookup order: --config, $CURSOR_BRIDGE_CONFIG, ~/.claude-code-router/config.json, ~/.config/cursor-bridge/config.json.`;
