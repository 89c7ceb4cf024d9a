/**
 * Reads the repository's Dockerfile into its stages and instructions, so tests run the image's own
 * install steps and environment instead of a copy that could drift from it.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { repoRoot } from '../repo-root.js';

export type DockerInstruction = { keyword: string; args: string };
export type DockerStage = { from: string; instructions: DockerInstruction[] };

export const dockerfilePath = join(repoRoot, 'Dockerfile');

/** The Dockerfile's logical lines: continuation lines joined, comments and blank lines dropped. */
const readLogicalLines = async (): Promise<string[]> => {
  const text = await readFile(dockerfilePath, 'utf8');
  return text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
};

/** The `ARG NAME=default` lines before the first `FROM` (what `FROM ${NAME}` may use), by name. */
export const readDockerfileArgs = async (): Promise<Record<string, string>> => {
  const args: Record<string, string> = {};
  for (const line of await readLogicalLines()) {
    if (line.startsWith('FROM ')) break;
    const match = /^ARG\s+([A-Za-z_][A-Za-z0-9_]*)(?:=(.*))?$/.exec(line);
    if (match === null) throw new Error(`unparsed Dockerfile line before the first FROM: ${line}`);
    args[match[1] ?? ''] = match[2] ?? '';
  }
  return args;
};

/** Stages in order (the global `ARG`s before the first `FROM` are {@link readDockerfileArgs}'). */
export const readDockerfile = async (): Promise<DockerStage[]> => {
  const stages: DockerStage[] = [];
  for (const line of await readLogicalLines()) {
    const match = /^([A-Z]+)\s+(.*)$/.exec(line);
    if (match === null) throw new Error(`unparsed Dockerfile line: ${line}`);
    const [, keyword = '', args = ''] = match;
    if (keyword === 'FROM') stages.push({ from: args, instructions: [] });
    else stages.at(-1)?.instructions.push({ keyword, args: args.replace(/\s+/g, ' ') });
  }
  return stages;
};

/** The `&&`-separated commands of every `RUN` in `stage`. */
export const runCommands = (stage: DockerStage): string[] =>
  stage.instructions
    .filter((instruction) => instruction.keyword === 'RUN')
    .flatMap((instruction) => instruction.args.split(' && ').map((command) => command.trim()));

/** `ENV A=1 B=2` instructions of `stage`, merged. */
export const envOf = (stage: DockerStage): Record<string, string> =>
  Object.fromEntries(
    stage.instructions
      .filter((instruction) => instruction.keyword === 'ENV')
      .flatMap((instruction) =>
        instruction.args.split(' ').map((pair) => pair.split('=') as [string, string]),
      ),
  );

/** An exec-form (`["a", "b"]`) instruction's argv. */
export const execForm = (stage: DockerStage, keyword: string): string[] => {
  const instruction = stage.instructions.findLast((candidate) => candidate.keyword === keyword);
  if (instruction === undefined) throw new Error(`no ${keyword} in the stage FROM ${stage.from}`);
  return JSON.parse(instruction.args) as string[];
};
