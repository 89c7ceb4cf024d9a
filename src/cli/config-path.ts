import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defaultConfigPath } from '../config/load-config.js';
import type { Env } from '../config/interpolate.js';
import type { CliIo } from './cli-io.js';

/** `~/.claude-code-router/config.json`: CCR 1/2's config, which `serve` has always read. */
const ccrConfigJson = (homedir: string): string => join(homedir, '.claude-code-router', 'config.json');

/**
 * Claude Code Router 3 owns `~/.claude-code-router`: its SQLite config is there and no config.json. CCR 3
 * imports a config.json it finds there once and deletes it, so cursor-bridge must not keep its own there.
 */
export const ccr3OwnsCcrDir = (homedir: string): boolean =>
  existsSync(join(homedir, '.claude-code-router', 'config.sqlite')) && !existsSync(ccrConfigJson(homedir));

/** `$XDG_CONFIG_HOME/cursor-bridge/config.json`, by default `~/.config/cursor-bridge/config.json`. */
export const cursorBridgeConfigPath = (env: Env, homedir: string): string => {
  const xdg = env['XDG_CONFIG_HOME'];
  return join(
    xdg !== undefined && xdg !== '' ? xdg : join(homedir, '.config'),
    'cursor-bridge',
    'config.json',
  );
};

/**
 * The config file a command reads. Lookup order:
 * 1. `--config FILE` (relative to the cwd);
 * 2. `$CURSOR_BRIDGE_CONFIG`;
 * 3. `~/.claude-code-router/config.json`, if it exists (CCR 1/2, or a standalone setup);
 * 4. `~/.config/cursor-bridge/config.json` (`$XDG_CONFIG_HOME`), if it exists;
 * 5. neither exists: built-in defaults, with (3) as the file's path — or (4) when CCR 3 owns
 *    `~/.claude-code-router`, so a command that writes the config never puts it where CCR 3 would take it.
 */
export const resolveConfigPath = (io: CliIo, configPath: string | undefined): string => {
  if (configPath !== undefined) return resolve(io.cwd, configPath);
  const override = io.env['CURSOR_BRIDGE_CONFIG'];
  if (override !== undefined && override !== '') return defaultConfigPath(io.env, io.homedir);
  const ccrJson = ccrConfigJson(io.homedir);
  if (existsSync(ccrJson)) return ccrJson;
  const own = cursorBridgeConfigPath(io.env, io.homedir);
  if (existsSync(own) || ccr3OwnsCcrDir(io.homedir)) return own;
  return ccrJson;
};
