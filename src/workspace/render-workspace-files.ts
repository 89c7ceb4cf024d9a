/**
 * The files of one scratch workspace, rendered from the templates and the current host facts. In bridge
 * mode: the AGENTS.md rules Cursor injects, the hooks.json that registers the deny-hook, the hook script
 * with the denial message (which states the real topology and the host facts) baked in. In every mode:
 * a `.git` boundary. Which templates a mode renders is {@link groundingTemplates}' rule.
 */

import { join } from 'node:path';
import type { HostFacts } from './host-facts.js';
import { buildTemplateContext } from './template-context.js';
import { groundingTemplates, type TemplateRendering } from './template-store.js';

/** Where the hook script lands inside a workspace. */
export const hookScriptPath = '.cursor/hooks/deny-builtin.mjs';

/** One rendered file: its path relative to the workspace (with `/`) and its content. */
export type WorkspaceFile = { path: string; content: string };

/**
 * A `.git` file in every workspace that is not a gitfile: a boundary, not a repository. The SDK takes
 * `git rev-parse --show-toplevel` of its cwd as the project whose rules and hooks it loads
 * (`findGitRoot`). Under an enclosing work tree (a HOME kept in git, a workspaces root inside a
 * checkout) that would be the enclosing repository, and the workspace's AGENTS.md and deny-hooks would
 * not load. git stops at an invalid `.git` with an error, exactly as outside any repository.
 */
export const gitBoundaryFile: WorkspaceFile = {
  path: '.git',
  content:
    'Not a git repository: this file stops git (and the Cursor SDK) from taking an enclosing repository\n' +
    "as this scratch workspace's project. Written by cursor-bridge.\n",
};

const quotePosix = (value: string): string => `'${value.replaceAll("'", `'\\''`)}'`;
const quotePowerShell = (value: string): string => `'${value.replaceAll("'", "''")}'`;

/**
 * The command line Cursor runs for the hook. The SDK runs it through `$SHELL -lc` (PowerShell
 * `-Command` on Windows) in the workspace directory; a login shell may change PATH, so the Node binary
 * and the script are absolute.
 */
export const buildHookCommand = (nodePath: string, scriptPath: string, platform: NodeJS.Platform): string =>
  platform === 'win32'
    ? `& ${quotePowerShell(nodePath)} ${quotePowerShell(scriptPath)}`
    : `${quotePosix(nodePath)} ${quotePosix(scriptPath)}`;

export type RenderWorkspaceFilesOptions = {
  /** The workspace directory (absolute). */
  workspaceDir: string;
  /** The Node binary that runs the hook (the bridge's own `process.execPath`). */
  nodePath: string;
  platform: NodeJS.Platform;
};

/**
 * Render every workspace file of the store's mode for `facts`. Pure apart from reading the (already
 * loaded) templates.
 */
export const renderWorkspaceFiles = (
  templates: TemplateRendering,
  facts: HostFacts | undefined,
  options: RenderWorkspaceFilesOptions,
): WorkspaceFile[] => {
  const { workspaceFiles, denyMessage: denyTemplate } = groundingTemplates[templates.mode];
  const scratchDir = options.workspaceDir;
  const hookCommand = buildHookCommand(
    options.nodePath,
    join(options.workspaceDir, ...hookScriptPath.split('/')),
    options.platform,
  );
  const denyMessage =
    denyTemplate === undefined
      ? ''
      : templates.render(denyTemplate, buildTemplateContext(facts, { scratchDir, hookCommand })).trim();
  const context = buildTemplateContext(facts, { scratchDir, hookCommand, denyMessage });
  return [
    ...workspaceFiles.map((name) => ({ path: name, content: templates.render(name, context) })),
    gitBoundaryFile,
  ];
};
