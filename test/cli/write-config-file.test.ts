import {
  chmod,
  lstat,
  mkdtemp,
  readFile,
  readdir,
  realpath,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { resolveWriteTarget, writeConfigFile } from '../../src/cli/write-config-file.js';

let dir: string;
beforeEach(async () => {
  dir = await realpath(await mkdtemp(join(tmpdir(), 'cursor-bridge-write-config-')));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('writeConfigFile', () => {
  it('follows a chain of links to the real file, keeps every link and the mode, leaves no temp file', async () => {
    const real = join(dir, 'real.json');
    await writeFile(real, '{}');
    await chmod(real, 0o604);
    await symlink('real.json', join(dir, 'middle.json'));
    await symlink(join(dir, 'middle.json'), join(dir, 'config.json'));

    await writeConfigFile(join(dir, 'config.json'), '{ "PORT": 1 }\n');
    expect(await readFile(real, 'utf8')).toBe('{ "PORT": 1 }\n');
    expect((await stat(real)).mode & 0o7777).toBe(0o604);
    expect((await lstat(join(dir, 'config.json'))).isSymbolicLink()).toBe(true);
    expect((await lstat(join(dir, 'middle.json'))).isSymbolicLink()).toBe(true);
    expect((await readdir(dir)).sort()).toEqual(['config.json', 'middle.json', 'real.json']);
  });

  it('creates a missing file 0600, and a dangling link’s target instead of replacing the link', async () => {
    await writeConfigFile(join(dir, 'new', 'config.json'), 'a');
    expect((await stat(join(dir, 'new', 'config.json'))).mode & 0o777).toBe(0o600);

    await symlink(join(dir, 'later', 'target.json'), join(dir, 'link.json'));
    await writeConfigFile(join(dir, 'link.json'), 'b');
    expect((await lstat(join(dir, 'link.json'))).isSymbolicLink()).toBe(true);
    expect(await readFile(join(dir, 'later', 'target.json'), 'utf8')).toBe('b');
  });

  it('refuses a symlink cycle naming the file', async () => {
    await symlink('b.json', join(dir, 'a.json'));
    await symlink('a.json', join(dir, 'b.json'));
    const loop = {
      name: 'ConfigError',
      message: `${join(dir, 'a.json')}: too many levels of symbolic links`,
    };
    await expect(resolveWriteTarget(join(dir, 'a.json'))).rejects.toMatchObject(loop);
    await expect(writeConfigFile(join(dir, 'a.json'), 'x')).rejects.toMatchObject(loop);
  });
});
