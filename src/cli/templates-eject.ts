import { constants } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { templateNames, type TemplateName } from '../workspace/template-store.js';
import { exitCodes, type CliIo } from './cli-io.js';
import type { TemplateDirs } from './templates-setup.js';

const isExisting = (error: unknown): boolean =>
  typeof error === 'object' && error !== null && 'code' in error && error.code === 'EEXIST';

export type EjectOptions = {
  /** The one template to copy; every template when absent. */
  name?: TemplateName;
  /** `--dir DIR` (relative to the cwd); default: the override dir the bridge reads. */
  targetDir?: string;
};

/**
 * `cursor-bridge templates eject [NAME] [--dir DIR]`: copies the packaged default of NAME (of every
 * template without NAME) into DIR, by default the override dir the bridge reads, for the user to edit.
 * Never overwrites: an existing file is skipped and named (the copy is exclusive, so a file created
 * meanwhile is not clobbered either).
 */
export const runTemplatesEject = async (
  io: CliIo,
  dirs: TemplateDirs,
  options: EjectOptions = {},
): Promise<number> => {
  const target = options.targetDir === undefined ? dirs.overrideDir : resolve(io.cwd, options.targetDir);
  const names: readonly TemplateName[] = options.name === undefined ? templateNames : [options.name];
  const what = options.name === undefined ? 'the default templates' : `the default ${options.name}`;
  io.stdout(`Copying ${what}\n  from ${dirs.defaultDir}\n  to   ${target}\n`);
  const skipped: string[] = [];
  for (const name of names) {
    const destination = join(target, ...name.split('/'));
    await mkdir(dirname(destination), { recursive: true });
    try {
      await copyFile(join(dirs.defaultDir, ...name.split('/')), destination, constants.COPYFILE_EXCL);
      io.stdout(`  wrote    ${name}\n`);
    } catch (error) {
      if (!isExisting(error)) throw error;
      skipped.push(name);
      io.stdout(`  skipped  ${name} (already exists; left unchanged)\n`);
    }
  }
  if (options.name === undefined) {
    io.stdout(
      skipped.length === 0
        ? '\nEvery template copied.\n'
        : `\n${skipped.length} existing file(s) kept as they were: ${skipped.join(', ')}.\n`,
    );
  }
  io.stdout(
    'Edit the copies to change the grounding text; a running server reloads them on save, and a broken\n' +
      'file keeps the last good version (check with `cursor-bridge templates list`). Delete any copy you\n' +
      'do not change, so that template keeps following the packaged default.\n',
  );
  if (target !== dirs.overrideDir) {
    io.stdout(
      `\nNote: the bridge reads overrides from ${dirs.overrideDir};\n` +
        `set "cursorTemplatesDir": ${JSON.stringify(target)} in ${dirs.config.file.path} to use these.\n`,
    );
  }
  return exitCodes.ok;
};
