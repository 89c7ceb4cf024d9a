/**
 * Default locations. Callers pass the home directory (only the CLI reads the environment); the package's
 * own template directory is found relative to this module, from `src/` and from the built `dist/src/`.
 */

import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** `~/.claude-code-router/cursor-sdk-workspaces`: one scratch workspace per session below it. */
export const defaultWorkspaceRoot = (homeDir: string): string =>
  join(homeDir, '.claude-code-router', 'cursor-sdk-workspaces');

/** `~/.claude-code-router/cursor-templates`: user overrides of the shipped templates, file by file. */
export const defaultTemplateOverrideDir = (homeDir: string): string =>
  join(homeDir, '.claude-code-router', 'cursor-templates');

/**
 * The `workspace-templates/` directory shipped with the package: the nearest ancestor of this module
 * that holds `workspace-templates/AGENTS.md`. Throws when the package was installed without it.
 */
export const resolveDefaultTemplateDir = (moduleUrl: string = import.meta.url): string => {
  let directory = dirname(fileURLToPath(moduleUrl));
  for (let depth = 0; depth < 8; depth += 1) {
    const candidate = join(directory, 'workspace-templates');
    if (existsSync(join(candidate, 'AGENTS.md'))) return candidate;
    const parent = dirname(directory);
    if (parent === directory) break;
    directory = parent;
  }
  throw new Error(`workspace-templates/ not found above ${fileURLToPath(moduleUrl)}`);
};
