/**
 * `bin/cursor-bridge.js` runs the compiled `dist/`, not `src/`: before a scenario spawns the real CLI,
 * make sure every source file has a compiled output at least as new as itself, else run
 * `npm run build` once. Safe to race: test files run in parallel processes, so a `mkdir` lock lets one
 * of them build while the others wait and then re-check.
 */

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (no trailing separator). */
export const repoRoot = resolve(fileURLToPath(new URL('../../../', import.meta.url)));

/** What `tsconfig.build.json` compiles into `dist/`. */
const sourceDirs = ['src', 'mcp'] as const;
/**
 * One lock per checkout, shared with every other test helper that builds `dist/` (the same path as
 * `test/cli/helpers/ensure-built.ts` uses), so two suites never run `tsc` into `dist/` at once.
 */
const lockDir = join(
  tmpdir(),
  `cursor-bridge-build-${createHash('sha256').update(repoRoot).digest('hex').slice(0, 12)}.lock`,
);
const buildTimeoutMs = 5 * 60_000;
/** A lock without an owner pid (taken by a helper that writes none) counts as stale after this long. */
const lockStaleMs = 180_000;

const listSources = async (dir: string): Promise<string[]> => {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
};

const mtime = (path: string): Promise<number | undefined> =>
  stat(path).then(
    (info) => info.mtimeMs,
    () => undefined,
  );

/**
 * Source files whose `dist/` output is missing or older than they are (empty: dist is fresh); with
 * `editedBefore`, only sources last saved before that time count.
 */
export const staleDistSources = async (options: { editedBefore?: number } = {}): Promise<string[]> => {
  const stale: string[] = [];
  for (const dir of sourceDirs) {
    for (const source of await listSources(join(repoRoot, dir))) {
      const output = join(repoRoot, 'dist', relative(repoRoot, source)).replace(/\.ts$/, '.js');
      const [sourceTime, outputTime] = await Promise.all([mtime(source), mtime(output)]);
      if (sourceTime === undefined || sourceTime > (options.editedBefore ?? Infinity)) continue;
      if (outputTime === undefined || outputTime < sourceTime) {
        stale.push(relative(repoRoot, source));
      }
    }
  }
  return stale;
};

const runBuild = (): Promise<{ code: number | null; output: string; timedOut: boolean }> =>
  new Promise((resolve, reject) => {
    // Without the npm_* variables an enclosing `npm test` sets.
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith('npm_')),
    );
    const child = spawn('npm', ['run', 'build'], {
      cwd: repoRoot,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    let timedOut = false;
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    }, buildTimeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output, timedOut });
    });
  });

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

const lockIsStale = async (): Promise<boolean> => {
  const created = await mtime(lockDir);
  if (created === undefined) return false;
  if (Date.now() - created > lockStaleMs) return true;
  const owner = Number(await readFile(join(lockDir, 'pid'), 'utf8').catch(() => ''));
  return Number.isInteger(owner) && owner > 0 && !isAlive(owner);
};

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

let fresh: Promise<void> | undefined;

/**
 * Resolves once `dist/` is compiled from the current sources, building it when needed (`tsc` takes
 * tens of seconds on two cores). A build that reports type errors but emitted every output is accepted
 * with a warning (other engineers' unfinished files must not block the suite); one that leaves outputs
 * stale rejects with the compiler's output.
 */
export const ensureFreshDist = (): Promise<void> => (fresh ??= buildIfStale());

const buildIfStale = async (): Promise<void> => {
  for (;;) {
    if ((await staleDistSources()).length === 0) return;
    try {
      await mkdir(lockDir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (await lockIsStale()) await rm(lockDir, { recursive: true, force: true });
      else await sleep(500);
      continue;
    }
    try {
      await writeFile(join(lockDir, 'pid'), String(process.pid));
      const stale = await staleDistSources();
      if (stale.length === 0) return;
      const started = Date.now();
      const build = await runBuild();
      // A file someone saved while tsc ran may be newer than its output; that is not the build's fault.
      const left = await staleDistSources({ editedBefore: started });
      if (left.length > 0 || build.timedOut) {
        throw new Error(
          `e2e: \`npm run build\` left dist/ stale (exit ${String(build.code)}, timed out: ${String(build.timedOut)}; ` +
            `stale: ${left.slice(0, 10).join(', ')}). Output:\n${build.output.slice(-8_000)}`,
        );
      }
      if (build.code !== 0) {
        console.warn(
          `e2e: \`npm run build\` reported errors but emitted dist/; running against it:\n${build.output.slice(-4_000)}`,
        );
      }
      return;
    } finally {
      await rm(lockDir, { recursive: true, force: true });
    }
  }
};
