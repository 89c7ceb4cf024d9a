/**
 * Writing the user's config.json the way an editor would: atomically (temp file + rename, so a crash
 * never leaves half a file), through a symlink (dotfile managers link config.json into a repository; the
 * link stays a link and its target gets the text), and keeping the file's mode (it may hold API keys).
 */

import { chmod, lstat, mkdir, readlink, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

import { ConfigError } from '../config/config-error.js';

/** Linux's own limit on symlinks followed while resolving one path (`ELOOP`). */
const maxSymlinkHops = 40;

/**
 * Where a write to `path` must land: `path` itself, or where its symlink chain ends (which may not exist
 * yet). Relative link targets resolve against the link's directory.
 * @throws ConfigError for a symlink cycle or a chain longer than 40 links.
 */
export const resolveWriteTarget = async (path: string): Promise<string> => {
  let current = resolve(path);
  for (let hops = 0; hops <= maxSymlinkHops; hops += 1) {
    let isLink: boolean;
    try {
      isLink = (await lstat(current)).isSymbolicLink();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return current;
      throw error;
    }
    if (!isLink) return current;
    current = resolve(dirname(current), await readlink(current));
  }
  throw new ConfigError({ file: path }, 'too many levels of symbolic links');
};

/**
 * Replaces the config at `path` with `text`: written next to the real file (so `rename` stays on one
 * file system), given the old file's permission bits (a new file gets 0600), then renamed over it.
 * Creates missing directories. On failure the temp file is removed and the old file is untouched.
 * Used by every command that edits the config (`model get`, `ccr install`).
 */
export const writeConfigFile = async (path: string, text: string): Promise<void> => {
  const target = await resolveWriteTarget(path);
  await mkdir(dirname(target), { recursive: true });
  let mode: number | undefined;
  try {
    mode = (await stat(target)).mode & 0o7777;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const temporary = `${target}.${process.pid}.tmp`;
  try {
    await writeFile(temporary, text, { encoding: 'utf8', mode: mode ?? 0o600 });
    // `writeFile`'s mode is filtered by the umask; the old file's bits are restored exactly.
    if (mode !== undefined) await chmod(temporary, mode);
    await rename(temporary, target);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
};
