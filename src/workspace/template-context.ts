/**
 * The names every workspace template may use, and how host facts become their values. The set is fixed
 * (every name is always present, empty when unknown), so a template is checked once when it is loaded:
 * a name outside this set makes the template broken.
 */

import { CUSTOM_USER_TOOLS_SERVER_NAME as hostToolServerName } from '../../mcp/server-name.js';
import type { HostFacts } from './host-facts.js';
import type { TemplateContext } from './template-renderer.js';

/**
 * Every placeholder a template may reference:
 * - `hasFacts`, `hasRoot` (booleans, for `{{#if}}`);
 * - `root`, `platform`, `shell`, `osVersion`, `gitRepo` (`yes` / `no`), `factsSource` — normalised facts;
 * - `factsList` — every reported fact as a Markdown list (`- Key: value` lines);
 * - `factsInline` — the same on one line (`Key: value; Key: value`);
 * - `scratchDir` — this session's scratch workspace directory;
 * - `agentCwd` — the Cursor agent's working directory, where its own tools act in agent mode: `cursorCwd`
 *   when agent mode sets one, else the scratch workspace; `agentCwdIsScratch` — whether it is the latter;
 * - `toolServer` — {@link hostToolServerName};
 * - `hookCommand` — the shell command that runs the deny-hook script (hooks.json);
 * - `denyMessage` — the rendered `deny-message.md` (the hook script).
 */
export const templateContextKeys: ReadonlySet<string> = new Set([
  'hasFacts',
  'hasRoot',
  'root',
  'platform',
  'shell',
  'osVersion',
  'gitRepo',
  'factsSource',
  'factsList',
  'factsInline',
  'scratchDir',
  'agentCwd',
  'agentCwdIsScratch',
  'toolServer',
  'hookCommand',
  'denyMessage',
]);

const sourceLabels: Record<HostFacts['source'], string> = {
  'claude-code': 'Claude Code',
  opencode: 'OpenCode',
  codex: 'Codex',
  'env-block': 'the client',
};

/** Values that only some templates need; empty when not given. `agentCwd` defaults to `scratchDir`. */
export type TemplateContextExtras = {
  scratchDir?: string;
  agentCwd?: string;
  hookCommand?: string;
  denyMessage?: string;
};

/** Build the full template context for `facts` (or for "no environment reported" when undefined). */
export const buildTemplateContext = (
  facts: HostFacts | undefined,
  extras: TemplateContextExtras = {},
): TemplateContext => {
  const reported = facts?.facts.filter(({ value }) => value !== '') ?? [];
  const scratchDir = extras.scratchDir ?? '';
  const agentCwd = extras.agentCwd ?? scratchDir;
  return {
    hasFacts: reported.length > 0,
    hasRoot: facts?.root !== undefined,
    root: facts?.root ?? '',
    platform: facts?.platform ?? '',
    shell: facts?.shell ?? '',
    osVersion: facts?.osVersion ?? '',
    gitRepo: facts?.isGitRepo === undefined ? '' : facts.isGitRepo ? 'yes' : 'no',
    factsSource: facts === undefined ? '' : sourceLabels[facts.source],
    factsList: reported.map(({ key, value }) => `- ${key}: ${value}`).join('\n'),
    factsInline: reported.map(({ key, value }) => `${key}: ${value}`).join('; '),
    scratchDir,
    agentCwd,
    agentCwdIsScratch: agentCwd === scratchDir,
    toolServer: hostToolServerName,
    hookCommand: extras.hookCommand ?? '',
    denyMessage: extras.denyMessage ?? '',
  };
};
