/**
 * Default locations. Callers pass the home directory (only the CLI reads the environment); the package's
 * own template directory is found relative to this module, from `src/` and from the built `dist/src/`.
 */

import { join } from 'node:path';
import { findShippedDir } from '../../lib/find-shipped-dir.js';

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
export const resolveDefaultTemplateDir = (moduleUrl: string = import.meta.url): string =>
  findShippedDir(moduleUrl, 'workspace-templates', 'AGENTS.md');
