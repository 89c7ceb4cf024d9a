/**
 * Makes sure `dist/` (what `bin/cursor-bridge.js` runs) is built from the current sources, so the
 * process-level tests never exercise a stale build: every `src/**`, `mcp/**` and `lib/**` `.ts` file must
 * have a `.js` in `dist/` at least as new, else `tsc -p tsconfig.build.json` runs (what `npm run build` runs).
 * Test files racing to build (the CLI and e2e suites) take turns through a lock directory holding the
 * owner's pid, so two never run tsc into `dist/` at once.
 */

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

import { repoRoot } from './repo-root.js';
import { isProcessAlive } from '../../lib/is-process-alive.js';
import { sleep } from '../../lib/sleep.js';

const sourceRoots = ['src', 'mcp', 'lib'];
const lockDir = join(
  tmpdir(),
  `cursor-bridge-build-${createHash('sha256').update(repoRoot).digest('hex').slice(0, 12)}.lock`,
);
const staleLockMs = 180_000;

const mtime = async (path: string): Promise<number | undefined> =>
  stat(path).then(
    (info) => info.mtimeMs,
    () => undefined,
  );

/**
 * The sources whose built `.js` is missing or older than they are (empty when dist is fresh); with
 * `editedBefore`, only sources saved before then count (one saved during a build is not its fault).
 */
export const findStaleSources = async (options: { editedBefore?: number } = {}): Promise<string[]> => {
  const stale: string[] = [];
  for (const root of sourceRoots) {
    const entries = await readdir(join(repoRoot, root), { recursive: true, withFileTypes: true });
    for (const entry of entries) {
      if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.d.ts')) continue;
      const source = join(entry.parentPath, entry.name);
      const built = join(repoRoot, 'dist', relative(repoRoot, source)).replace(/\.ts$/, '.js');
      const [sourceTime, builtTime] = await Promise.all([mtime(source), mtime(built)]);
      if (sourceTime === undefined || sourceTime > (options.editedBefore ?? Infinity)) continue;
      if (builtTime === undefined || builtTime < sourceTime) stale.push(relative(repoRoot, source));
    }
  }
  return stale;
};

const runTsc = (): Promise<{ code: number | null; output: string }> =>
  new Promise((resolve, reject) => {
    const tsc = join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
    const child = spawn(process.execPath, [tsc, '-p', 'tsconfig.build.json'], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });

/** A lock is stale when its owner died, or (without an owner pid) when it is old. */
const lockIsStale = async (): Promise<boolean> => {
  const since = await mtime(lockDir);
  if (since === undefined) return false;
  if (Date.now() - since > staleLockMs) return true;
  const owner = Number(await readFile(join(lockDir, 'pid'), 'utf8').catch(() => ''));
  return Number.isInteger(owner) && owner > 0 && !isProcessAlive(owner);
};

const acquireLock = async (): Promise<void> => {
  for (;;) {
    try {
      await mkdir(lockDir);
      await writeFile(join(lockDir, 'pid'), String(process.pid));
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (await lockIsStale()) await rm(lockDir, { recursive: true, force: true });
      else await sleep(300);
    }
  }
};

let fresh: Promise<void> | undefined;

/**
 * Build `dist/` when a source is newer than its output (once per test process). A tsc run that reports
 * type errors but emits every file is accepted (type errors are `npm run typecheck`'s job; a half-edited
 * file of another module must not block these tests) with a warning; a build that leaves stale output
 * throws with the compiler's output.
 */
export const ensureBuilt = (): Promise<void> => (fresh ??= buildIfStale());

const buildIfStale = async (): Promise<void> => {
  if ((await findStaleSources()).length === 0) return;
  await acquireLock();
  try {
    if ((await findStaleSources()).length === 0) return;
    const started = Date.now();
    const result = await runTsc();
    const stillStale = await findStaleSources({ editedBefore: started });
    if (stillStale.length > 0) {
      throw new Error(`the build left dist/ stale (${stillStale.slice(0, 5).join(', ')}):\n${result.output}`);
    }
    if (result.code !== 0) {
      process.stderr.write(`[ensure-built] tsc reported errors but emitted dist/:\n${result.output}\n`);
    }
  } finally {
    await rm(lockDir, { recursive: true, force: true });
  }
};
