import { readdir, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { isMissingFile } from '../../lib/read-file-if-present.js';
import {
  groundingTemplates,
  TemplateStore,
  templateNames,
  type GroundingMode,
  type TemplateProblem,
} from '../workspace/template-store.js';
import { exitCodes, type CliIo } from './cli-io.js';
import type { TemplateDirs } from './templates-setup.js';

/** A problem as one line that names the file (template errors already start with it). */
export const formatTemplateProblem = (problem: TemplateProblem): string =>
  problem.message.startsWith(problem.path) ? problem.message : `${problem.path}: ${problem.message}`;

/** Files in the override dir that are not a template name (a typo like `AGENT.md` is silently unused). */
const findIgnoredFiles = async (dir: string): Promise<string[]> => {
  try {
    const entries = await readdir(dir, { recursive: true, withFileTypes: true });
    const known = new Set<string>(templateNames);
    return entries
      .filter((entry) => entry.isFile())
      .map((entry) => relative(dir, join(entry.parentPath, entry.name)).split(sep).join('/'))
      .filter((path) => !known.has(path))
      .sort();
  } catch (error) {
    if (isMissingFile(error)) return [];
    throw error;
  }
};

const describeOverrideDir = async (dirs: TemplateDirs): Promise<string> => {
  const origin = dirs.overrideFromConfig
    ? `cursorTemplatesDir in ${dirs.config.file.path}`
    : 'the default; set cursorTemplatesDir in the config to move it';
  try {
    const info = await stat(dirs.overrideDir);
    return info.isDirectory() ? origin : `${origin}; NOT A DIRECTORY, so no override applies`;
  } catch (error) {
    if (!isMissingFile(error)) throw error;
    return `${origin}; does not exist yet: \`cursor-bridge templates eject\` copies the defaults there`;
  }
};

/** One line per mode: the templates that ground it (`groundingTemplates`), the config's mode marked. */
const describeModes = (current: GroundingMode): string =>
  (Object.keys(groundingTemplates) as GroundingMode[])
    .map((mode) => {
      const { workspaceFiles, denyMessage, head, tail } = groundingTemplates[mode];
      const names = [...workspaceFiles, ...(denyMessage === undefined ? [] : [denyMessage]), head, tail];
      return `  ${mode.padEnd(6)}  ${names.join(', ')}${mode === current ? '   <- this config' : ''}\n`;
    })
    .join('');

/**
 * `cursor-bridge templates list`: every template with the file it comes from (default or override),
 * which templates each `cursorMode` uses, the problems of broken overrides, and files in the override
 * dir that match no template. Exit 1 when there are problems, as a linter does: the bridge still runs
 * (with the default in place of a broken override, as this shows), but an edit did not take effect.
 */
export const runTemplatesList = async (io: CliIo, dirs: TemplateDirs): Promise<number> => {
  const store = await TemplateStore.load({ defaultDir: dirs.defaultDir, overrideDir: dirs.overrideDir });
  io.stdout(`Defaults:  ${dirs.defaultDir}\n`);
  io.stdout(`Overrides: ${dirs.overrideDir} (${await describeOverrideDir(dirs)})\n\n`);

  const width = Math.max(...templateNames.map((name) => name.length));
  for (const name of templateNames) {
    const source = store.source(name);
    io.stdout(`${name.padEnd(width)}  ${source.origin.padEnd(8)}  ${source.path}\n`);
    for (const problem of store.problems.filter((entry) => entry.name === name)) {
      io.stdout(
        `${' '.repeat(width)}  PROBLEM: ${formatTemplateProblem(problem)}\n` +
          `${' '.repeat(width)}  so the ${source.origin} version is used (a running server keeps its last good version)\n`,
      );
    }
  }
  io.stdout(`\nUsed per mode (cursorMode):\n${describeModes(dirs.config.cursor.mode)}`);
  const ignored = await findIgnoredFiles(dirs.overrideDir);
  if (ignored.length > 0) {
    io.stdout(`\nIgnored in the override dir (not a template name): ${ignored.join(', ')}\n`);
  }
  const count = store.problems.length;
  io.stdout(count === 0 ? '\nNo problems.\n' : `\n${count} problem(s); fix the file(s) above.\n`);
  return count === 0 ? exitCodes.ok : exitCodes.failure;
};
