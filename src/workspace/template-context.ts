/**
 * How host facts become the values of the placeholders every workspace template may use
 * (the table in `template-placeholders.ts`). The set is fixed (every name is always present, empty when unknown),
 * so a template is checked once when it is loaded: a name outside this set makes the template broken.
 */

import { CUSTOM_USER_TOOLS_SERVER_NAME as hostToolServerName } from '../../mcp/server-name.js';
import type { HostFacts } from './host-facts.js';
import type { TemplatePlaceholderName } from './template-placeholders.js';
import type { TemplateValue } from './template-renderer.js';

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

/**
 * Build the full template context for `facts` (or for "no environment reported" when undefined): a value
 * for every placeholder of the table and nothing else (the return type makes the compiler check both).
 */
export const buildTemplateContext = (
  facts: HostFacts | undefined,
  extras: TemplateContextExtras = {},
): Readonly<Record<TemplatePlaceholderName, TemplateValue>> => {
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
