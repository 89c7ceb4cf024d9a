import type { HostFact } from '../workspace/host-fact-blocks.js';

/** Host facts as a `templates` command has them: a `HostFacts`, or one read back from the bridge's JSON. */
export type FactsView = {
  facts: readonly HostFact[];
  root?: string | undefined;
  platform?: string | undefined;
  shell?: string | undefined;
  osVersion?: string | undefined;
  isGitRepo?: boolean | undefined;
};

/** The host facts as the `templates` commands print them: the normalised ones, then every reported one. */
export const describeFacts = (facts: FactsView): string => {
  const normalised = [
    ['root', facts.root],
    ['platform', facts.platform],
    ['shell', facts.shell],
    ['OS version', facts.osVersion],
    ['git repo', facts.isGitRepo === undefined ? undefined : facts.isGitRepo ? 'yes' : 'no'],
  ]
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .map(([key, value]) => `  ${key}: ${value}\n`)
    .join('');
  const reported = facts.facts.map(({ key, value }) => `    ${key}: ${value}\n`).join('');
  return `${normalised}  as reported:\n${reported}`;
};

/** One rendered text under a `==> title <==` line, ending with a newline. */
export const formatSection = (title: string, content: string): string =>
  `\n==> ${title} <==\n${content.endsWith('\n') ? content : `${content}\n`}`;
