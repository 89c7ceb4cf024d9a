/**
 * Installs the pinned real clients from npm into the git-ignored `test/.cache/clients/` on first use.
 *
 * Each client lands in `test/.cache/clients/<name>-<version>/` (the version is in the directory name so
 * a new pin never reuses an old tree). Installing is idempotent and safe to race: a `mkdir` lock keeps
 * two processes from downloading the same client at once, and the tree is built in a staging directory
 * that is renamed into place only after its binary answered `--version` with the pinned version.
 */

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isProcessAlive } from '../../../lib/is-process-alive.js';
import { sleep } from '../../../lib/sleep.js';

export type ClientName = 'claude-code' | 'codex' | 'opencode' | 'ccr-1' | 'ccr-2' | 'node-20';

/** What `npm install` must bring, and where the runnable binary ends up in the install prefix. */
export type PinnedClient = {
  name: ClientName;
  packageName: string;
  version: string;
  /** The binary, relative to the install prefix. */
  binary: string;
  /** `<binary> --version` must print a line containing this. */
  versionOutput: string;
  /** The version flag when it is not `--version`. */
  versionArgs?: string[];
};

/** The clients of the acceptance suite, pinned. */
export const pinnedClients: Readonly<Record<ClientName, PinnedClient>> = {
  'claude-code': {
    name: 'claude-code',
    packageName: '@anthropic-ai/claude-code',
    version: '2.1.332',
    // The native Bun binary; the wrapper's postinstall hard-links it over this 500-byte stub.
    binary: 'node_modules/@anthropic-ai/claude-code/bin/claude.exe',
    versionOutput: '2.1.332',
  },
  codex: {
    name: 'codex',
    packageName: '@openai/codex',
    version: '0.171.0',
    binary: 'node_modules/@openai/codex/bin/codex.js',
    versionOutput: 'codex-cli 0.171.0',
  },
  opencode: {
    name: 'opencode',
    packageName: 'opencode-ai',
    version: '1.18.33',
    binary: 'node_modules/opencode-ai/bin/opencode.exe',
    versionOutput: '1.18.33',
  },
  // Claude Code Router, which loads the `cursor-sdk` transformer. 1.0.73 depends on
  // `@musistudio/llms@1.0.53`, installed beside it (2.0.0 bundles the same llms into its cli.js).
  'ccr-1': {
    name: 'ccr-1',
    packageName: '@musistudio/claude-code-router',
    version: '1.0.73',
    binary: 'node_modules/@musistudio/claude-code-router/dist/cli.js',
    versionOutput: 'claude-code-router version: 1.0.73',
    versionArgs: ['-v'],
  },
  'ccr-2': {
    name: 'ccr-2',
    packageName: '@musistudio/claude-code-router',
    version: '2.0.0',
    binary: 'node_modules/@musistudio/claude-code-router/dist/cli.js',
    versionOutput: 'claude-code-router version: 2.0.0',
    versionArgs: ['-v'],
  },
  // A Node too old for `@cursor/sdk`, to start CCR on: the transformer must refuse it with one clear line.
  'node-20': {
    name: 'node-20',
    packageName: 'node',
    version: '20.20.2',
    binary: 'node_modules/node/bin/node',
    versionOutput: 'v20.20.2',
  },
};

export type InstalledClient = PinnedClient & { prefix: string; binaryPath: string };

/** `test/.cache/clients/`, git-ignored. */
export const clientCacheDir = fileURLToPath(new URL('../../.cache/clients/', import.meta.url));

const stampFile = '.e2e-installed.json';
const lockStaleMs = 10 * 60_000;
const installTimeoutMs = 8 * 60_000;
/** Bun-compiled binaries are hundreds of MB; the unlinked stub is a few hundred bytes. */
const stubMaxBytes = 64 * 1024;

export type Outcome = { code: number | null; stdout: string; stderr: string; timedOut: boolean };

/** Run a host command (never a client under test) outside any sandbox, with a timeout. */
export const runCommand = (
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<Outcome> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
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
      resolve({ code, stdout, stderr, timedOut });
    });
  });

/** The environment for `npm`: ours minus the `npm_*` variables an enclosing `npm test` sets. */
export const npmEnv = (): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith('npm_')));

const exists = async (path: string): Promise<boolean> => {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
};

const isInstalled = async (client: PinnedClient, prefix: string): Promise<boolean> => {
  try {
    const stamp = JSON.parse(await readFile(join(prefix, stampFile), 'utf8')) as { version?: unknown };
    return stamp.version === client.version && (await exists(join(prefix, client.binary)));
  } catch {
    return false;
  }
};

const unreachablePattern = /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|network/i;

const installError = (client: PinnedClient, outcome: Outcome): Error => {
  const spec = `${client.packageName}@${client.version}`;
  const tail = `${outcome.stderr}\n${outcome.stdout}`.trim().split('\n').slice(-25).join('\n');
  if (outcome.timedOut) {
    return new Error(
      `e2e: installing ${spec} timed out after ${installTimeoutMs / 1000} s. npm said:\n${tail}`,
    );
  }
  if (unreachablePattern.test(outcome.stderr)) {
    return new Error(
      `e2e: cannot install ${spec}: the npm registry is unreachable from this machine, and the client is ` +
        `not cached in ${clientCacheDir}. Restore registry access (or copy a cached install there) and rerun. ` +
        `npm said:\n${tail}`,
    );
  }
  return new Error(`e2e: \`npm install ${spec}\` failed (exit ${String(outcome.code)}). npm said:\n${tail}`);
};

/** Build the client in `staging` and check that its binary is the pinned version. */
const installInto = async (client: PinnedClient, staging: string): Promise<void> => {
  await mkdir(staging, { recursive: true });
  await writeFile(join(staging, 'package.json'), `${JSON.stringify({ private: true }, null, 2)}\n`);
  const spec = `${client.packageName}@${client.version}`;
  const outcome = await runCommand(
    'npm',
    // Scripts on: Claude Code and OpenCode link their native binaries in postinstall.
    ['install', '--prefix', staging, '--no-audit', '--no-fund', '--ignore-scripts=false', spec],
    { cwd: staging, env: npmEnv(), timeoutMs: installTimeoutMs },
  );
  if (outcome.code !== 0) throw installError(client, outcome);

  const binaryPath = join(staging, client.binary);
  if (client.name === 'claude-code' && (await stat(binaryPath)).size < stubMaxBytes) {
    // The postinstall did not run (scripts disabled by a user config): link the native binary ourselves.
    const linked = await runCommand('node', ['install.cjs'], {
      cwd: join(staging, 'node_modules', client.packageName),
      timeoutMs: 60_000,
    });
    if (linked.code !== 0) throw new Error(`e2e: claude-code install.cjs failed:\n${linked.stderr}`);
  }
  const version = await runCommand(binaryPath, client.versionArgs ?? ['--version'], {
    cwd: staging,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: staging },
    timeoutMs: 60_000,
  });
  if (!`${version.stdout}${version.stderr}`.includes(client.versionOutput)) {
    throw new Error(
      `e2e: ${binaryPath} --version printed ${JSON.stringify(version.stdout + version.stderr)}, ` +
        `expected ${client.versionOutput} (exit ${String(version.code)})`,
    );
  }
  await writeFile(join(staging, stampFile), `${JSON.stringify({ version: client.version })}\n`);
};

/** Take the per-client lock, breaking one left behind by a dead process. */
const acquireLock = async (lockDir: string, ready: () => Promise<boolean>): Promise<boolean> => {
  for (;;) {
    try {
      await mkdir(lockDir);
      await writeFile(join(lockDir, 'pid'), String(process.pid));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (await ready()) return false;
    if (await isStale(lockDir)) {
      await rm(lockDir, { recursive: true, force: true });
      continue;
    }
    await sleep(500);
  }
};

/** A lock is stale when its owner died, or it is older than any install could take. */
const isStale = async (lockDir: string): Promise<boolean> => {
  const info = await stat(lockDir).catch(() => undefined);
  if (info === undefined) return false;
  const age = Date.now() - info.mtimeMs;
  if (age > lockStaleMs) return true;
  const owner = Number(await readFile(join(lockDir, 'pid'), 'utf8').catch(() => ''));
  // No pid yet: the owner is between mkdir and writeFile, unless that was long ago.
  if (!Number.isInteger(owner) || owner <= 0) return age > 5_000;
  return !isProcessAlive(owner);
};

/**
 * Make sure the pinned client is installed and return where its binary is. The first call downloads it
 * (~15 s per client); later calls only read a stamp file. Rejects with an explanation when the npm
 * registry cannot be reached and nothing is cached.
 */
/**
 * Installs into `prefix` once per machine: `install` fills a staging directory, which replaces `prefix`
 * when it succeeded. Parallel callers (other test files) wait on a lock and take the finished install; a
 * lock left behind by a dead process is broken.
 */
export const installOnce = async (options: {
  prefix: string;
  isInstalled: () => Promise<boolean>;
  install: (staging: string) => Promise<void>;
}): Promise<void> => {
  const { prefix, isInstalled: ready } = options;
  if (await ready()) return;
  await mkdir(clientCacheDir, { recursive: true });
  const lockDir = `${prefix}.lock`;
  if (!(await acquireLock(lockDir, ready))) return;
  const staging = join(
    clientCacheDir,
    `.staging-${basename(prefix)}-${process.pid}-${randomBytes(4).toString('hex')}`,
  );
  try {
    if (await ready()) return;
    await options.install(staging);
    // A half-built tree from an older crash may sit at `prefix` without a stamp: replace it.
    await rm(prefix, { recursive: true, force: true });
    await rename(staging, prefix);
  } finally {
    await rm(staging, { recursive: true, force: true });
    await rm(lockDir, { recursive: true, force: true });
  }
};

export const ensureClient = async (name: ClientName): Promise<InstalledClient> => {
  const client = pinnedClients[name];
  const prefix = join(clientCacheDir, `${name}-${client.version}`);
  await installOnce({
    prefix,
    isInstalled: () => isInstalled(client, prefix),
    install: (staging) => installInto(client, staging),
  });
  return { ...client, prefix, binaryPath: join(prefix, client.binary) };
};
