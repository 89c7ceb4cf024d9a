import { constants } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { templateNames } from '../workspace/template-store.js';
import { exitCodes, type CliIo } from './cli-io.js';
import type { TemplateDirs } from './templates-setup.js';

const isExisting = (error: unknown): boolean =>
  typeof error === 'object' && error !== null && 'code' in error && error.code === 'EEXIST';

/**
 * `cursor-bridge templates eject [DIR]`: copies every packaged default template into DIR (default: the
 * override dir the bridge reads) for the user to edit. Never overwrites: an existing file is skipped
 * and named (the copy is exclusive, so a file created meanwhile is not clobbered either).
 */
export const runTemplatesEject = async (
  io: CliIo,
  dirs: TemplateDirs,
  targetDir: string | undefined,
): Promise<number> => {
  const target = targetDir === undefined ? dirs.overrideDir : resolve(io.cwd, targetDir);
  io.stdout(`Copying the default templates\n  from ${dirs.defaultDir}\n  to   ${target}\n`);
  const skipped: string[] = [];
  for (const name of templateNames) {
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
  io.stdout(
    skipped.length === 0
      ? '\nEvery template copied.\n'
      : `\n${skipped.length} existing file(s) kept as they were: ${skipped.join(', ')}.\n`,
  );
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
