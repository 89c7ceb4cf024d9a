import { loadConfig, type BridgeConfig } from '../config/load-config.js';
import { templateNames, type TemplateName } from '../workspace/template-store.js';
import { defaultTemplateOverrideDir, resolveDefaultTemplateDir } from '../workspace/workspace-paths.js';
import type { CliIo } from './cli-io.js';
import { resolveConfigPath } from './config-path.js';

/** Where the `templates` commands find things, resolved the way `serve` resolves them. */
export type TemplateDirs = {
  config: BridgeConfig;
  /** The packaged `workspace-templates/`. */
  defaultDir: string;
  /** `cursorTemplatesDir` from the config, else `~/.claude-code-router/cursor-templates`. */
  overrideDir: string;
  /** Whether the override dir came from the config (`cursorTemplatesDir`) or is the default one. */
  overrideFromConfig: boolean;
};

/** Load the config (ConfigError for a bad file) and resolve both template directories. */
export const resolveTemplateDirs = async (
  io: CliIo,
  configPath: string | undefined,
): Promise<TemplateDirs> => {
  const path = resolveConfigPath(io, configPath);
  const config = await loadConfig({ path, env: io.env, homedir: io.homedir });
  return {
    config,
    defaultDir: resolveDefaultTemplateDir(),
    overrideDir: config.templatesDir ?? defaultTemplateOverrideDir(io.homedir),
    overrideFromConfig: config.templatesDir !== undefined,
  };
};

/**
 * The template `input` names: an exact name, or a unique last path segment (`hooks.json` for
 * `.cursor/hooks.json`). Undefined when nothing (or more than one template) matches.
 */
export const findTemplateName = (input: string): TemplateName | undefined => {
  const exact = templateNames.find((name) => name === input);
  if (exact !== undefined) return exact;
  const byBase = templateNames.filter((name) => name.split('/').at(-1) === input);
  return byBase.length === 1 ? byBase[0] : undefined;
};

/** "valid names: a, b, c" for error messages. */
export const describeTemplateNames = (): string => `valid names: ${templateNames.join(', ')}`;
