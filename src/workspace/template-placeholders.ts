/**
 * The placeholders every workspace template may use: the one list that the template check
 * (`template-store.ts`), the renderer's unknown-placeholder message, `buildTemplateContext`, the
 * `cursor-bridge templates placeholders` listing and docs/templates.md (checked by a test) all follow.
 */

import { editDistance } from '../../lib/edit-distance.js';

/** A `text` is inserted with `{{name}}` or `{{json name}}`; a `flag` (true or false) is for `{{#if name}}`. */
export type TemplatePlaceholderKind = 'text' | 'flag';

/** One placeholder: its name, what it holds, and a value it could have. */
export type TemplatePlaceholder = {
  readonly name: string;
  readonly kind: TemplatePlaceholderKind;
  readonly meaning: string;
  /** A realistic value (a `flag`'s is `true` or `false`); may span lines. */
  readonly example: string;
};

/** Every placeholder, in the order they are documented. */
export const templatePlaceholders = [
  {
    name: 'hasFacts',
    kind: 'flag',
    meaning: 'The client reported an environment block with at least one non-empty fact.',
    example: 'true',
  },
  {
    name: 'hasRoot',
    kind: 'flag',
    meaning: 'The client reported a project root, so `root` is set.',
    example: 'true',
  },
  {
    name: 'root',
    kind: 'text',
    meaning:
      "The project's root directory on the user's machine, as the client reported it (Claude Code's " +
      '"Primary working directory", OpenCode\'s "Working directory", Codex\'s `<cwd>`); empty when none was reported.',
    example: '/home/ada/project',
  },
  {
    name: 'platform',
    kind: 'text',
    meaning: "The user's platform, as reported; empty when not reported.",
    example: 'linux',
  },
  {
    name: 'shell',
    kind: 'text',
    meaning: "The user's shell, as reported; empty when not reported or reported as unknown.",
    example: 'zsh',
  },
  {
    name: 'osVersion',
    kind: 'text',
    meaning: "The user's OS version, as reported; empty when not reported.",
    example: 'Linux 6.8.0-45-generic',
  },
  {
    name: 'gitRepo',
    kind: 'text',
    meaning: 'Whether the project is a git repository: `yes` or `no`; empty when not reported.',
    example: 'yes',
  },
  {
    name: 'factsSource',
    kind: 'text',
    meaning:
      'Which client reported the facts: Claude Code, OpenCode, Codex, or "the client" for a generic `<env>` block; empty when none.',
    example: 'Claude Code',
  },
  {
    name: 'factsList',
    kind: 'text',
    meaning:
      'Every non-empty reported fact as a Markdown list, one `- Key: value` line each, keys and values as the client wrote them.',
    example: '- Primary working directory: /home/ada/project\n- Platform: linux\n- OS Version: Linux 6.8.0',
  },
  {
    name: 'factsInline',
    kind: 'text',
    meaning: 'The same facts on one line: `Key: value; Key: value`.',
    example: 'Primary working directory: /home/ada/project; Platform: linux; OS Version: Linux 6.8.0',
  },
  {
    name: 'scratchDir',
    kind: 'text',
    meaning:
      "This conversation's scratch workspace, never the user's project: the directory Cursor's agent runs in (except in agent mode with `cursorCwd`).",
    example: '/home/ada/.claude-code-router/cursor-sdk-workspaces/6f1c0e2a9b7d4c3e8a5f1b2d3c4e5f60',
  },
  {
    name: 'agentCwd',
    kind: 'text',
    meaning:
      "The Cursor agent's working directory, where its own tools act in agent mode: `cursorCwd` when agent mode sets one, else the scratch workspace.",
    example: '/srv/work',
  },
  {
    name: 'agentCwdIsScratch',
    kind: 'flag',
    meaning: '`agentCwd` is the scratch workspace (always, except in agent mode with `cursorCwd`).',
    example: 'false',
  },
  {
    name: 'toolServer',
    kind: 'text',
    meaning:
      "The MCP server that carries the client's tools; the only MCP server the deny-hook lets through.",
    example: 'custom-user-tools',
  },
  {
    name: 'hookCommand',
    kind: 'text',
    meaning:
      'The shell command that runs the deny-hook script (for `.cursor/hooks.json`, as `{{json hookCommand}}`); empty in the prompt head and tail.',
    example:
      "'/usr/bin/node' '/home/ada/.claude-code-router/cursor-sdk-workspaces/6f1c0e2a9b7d4c3e8a5f1b2d3c4e5f60/.cursor/hooks/deny-builtin.mjs'",
  },
  {
    name: 'denyMessage',
    kind: 'text',
    meaning:
      'The rendered `deny-message.md` (for the hook script, as `{{json denyMessage}}`); set in the workspace files only, empty in deny-message.md itself and in the prompt head and tail.',
    example:
      "Your tools run on the user's machine (Platform: linux), not in this directory. This directory is an empty scratch workspace; never use its path. …",
  },
] as const satisfies readonly TemplatePlaceholder[];

/** The name of a placeholder. */
export type TemplatePlaceholderName = (typeof templatePlaceholders)[number]['name'];

/** The names of {@link templatePlaceholders}: a template referencing any other name is broken. */
export const templatePlaceholderNames: ReadonlySet<string> = new Set(
  templatePlaceholders.map((placeholder) => placeholder.name),
);

/**
 * The placeholder `name` was most likely meant to be, ignoring case: one whose name contains `name` or
 * is contained in it (`projectRoot` → `root`), else one within a few edits (`rooot` → `root`). Undefined
 * when nothing is close.
 */
export const findNearestPlaceholder = (name: string): TemplatePlaceholderName | undefined => {
  const wanted = name.toLowerCase();
  let best: { name: TemplatePlaceholderName; rank: number; distance: number } | undefined;
  for (const placeholder of templatePlaceholders) {
    const candidate = placeholder.name.toLowerCase();
    const distance = editDistance(wanted, candidate);
    const rank = wanted.includes(candidate) || candidate.includes(wanted) ? 0 : 1;
    if (rank === 1 && distance > Math.max(2, Math.floor(candidate.length / 3))) continue;
    if (best === undefined || rank < best.rank || (rank === best.rank && distance < best.distance)) {
      best = { name: placeholder.name, rank, distance };
    }
  }
  return best?.name;
};

/** The command that lists the placeholders, named by every unknown-placeholder message. */
export const placeholdersCommand = 'cursor-bridge templates placeholders';

/** The message for a template that references `name`, which is no placeholder, with the nearest one. */
export const describeUnknownPlaceholder = (name: string): string => {
  const nearest = findNearestPlaceholder(name);
  const hint = nearest === undefined ? ';' : ` — did you mean "${nearest}"?`;
  return `unknown placeholder "${name}"${hint} run \`${placeholdersCommand}\` for the list`;
};
