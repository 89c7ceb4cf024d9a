import type { HostFactsSource } from './host-fact-blocks.js';

/** One environment-block shape `extractHostFacts` recognises, as `templates render --env` documents it. */
export type EnvBlockFormat = {
  /** How the output names facts of this shape. */
  label: string;
  /** What marks the block, in a few words. */
  shape: string;
  /** A block of this shape, as a client sends it. */
  example: string;
};

/**
 * The shapes an `--env FILE` may hold (the newest block in the file wins), keyed by the source
 * `extractHostFacts` reports for them; every example is one that source's parser accepts.
 */
export const envBlockFormats: Readonly<Record<HostFactsSource, EnvBlockFormat>> = {
  'claude-code': {
    label: 'Claude Code "# Environment"',
    shape: 'a list of " - Key: value" items with a "Primary working directory" item',
    example: [
      '# Environment',
      'You have been invoked in the following environment: ',
      ' - Primary working directory: /home/ada/project',
      ' - Is a git repository: true',
      ' - Platform: linux',
      ' - Shell: zsh',
      ' - OS Version: Linux 6.8.0',
    ].join('\n'),
  },
  opencode: {
    label: 'OpenCode <env>',
    shape: 'an <env> block of "Key: value" lines with a "Working directory" line',
    example: [
      '<env>',
      '  Working directory: /home/ada/project',
      '  Is directory a git repo: yes',
      '  Platform: darwin',
      '</env>',
    ].join('\n'),
  },
  codex: {
    label: 'Codex <environment_context>',
    shape: 'an <environment_context> element with one element per fact',
    example: [
      '<environment_context>',
      '  <cwd>/home/ada/project</cwd>',
      '  <shell>bash</shell>',
      '</environment_context>',
    ].join('\n'),
  },
  'env-block': {
    label: 'generic <env>',
    shape: 'any other <env> block of "Key: value" lines (the root from "Project root", "cwd", …)',
    example: ['<env>', '  Project root: /home/ada/project', '  OS: linux', '</env>'].join('\n'),
  },
};
