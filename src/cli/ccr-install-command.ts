import { readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, resolve, sep } from 'node:path';
import { createTwoFilesPatch } from 'diff';

import { ConfigError } from '../config/config-error.js';
import { defaultConfigPath } from '../config/load-config.js';
import { exitCodes, type CliIo } from './cli-io.js';
import { planCcrInstall } from '../hosts/ccr/install/ccr-install-plan.js';
import { runCcr3Install } from './ccr3-install-command.js';
import { detectCcr3 } from '../hosts/ccr/install/ccr3-service.js';
import { listCursorCatalog } from './cursor-catalog.js';
import { resolveWriteTarget, writeConfigFile } from './write-config-file.js';
import { errorMessage } from '../../lib/error-message.js';

export type CcrInstallOptions = {
  configPath?: string;
  /** The transformer file CCR should load; default: this package's `cursor-bridge/ccr` export. */
  transformerPath?: string;
};

/** The absolute path of the installed transformer, as `require.resolve('cursor-bridge/ccr')` sees it. */
export const resolveInstalledTransformer = (): string =>
  // A package may require itself by name through its own `exports` map.
  createRequire(import.meta.url).resolve('cursor-bridge/ccr');

/**
 * `cursor-bridge ccr install`. Under Claude Code Router 3 (`config.sqlite` / `service.json` in CCR's
 * directory) it configures the running service through its admin RPC: see `ccr3-install-command.ts`.
 * Under CCR 1.x/2.x it adds (or updates) the cursor-sdk transformer entry, a `cursor`
 * provider and `Router.default` in CCR's config.json, prints the unified diff it made, and writes
 * only when something changed. A symlinked config is written through the link; the file's mode is
 * kept. Exit 0 (changed or already installed), 1 (cannot read/write), 2 (unusable config).
 */
export const runCcrInstall = async (io: CliIo, options: CcrInstallOptions): Promise<number> => {
  // CCR 3 first: its directory must never get a config.json with the 1.x/2.x transformer (CCR 3 imports
  // such a file once, mistranslates it, and deletes it).
  const ccrDir =
    options.configPath === undefined
      ? join(io.homedir, '.claude-code-router')
      : dirname(resolve(io.cwd, options.configPath));
  const ccr3 = await detectCcr3(ccrDir);
  if (ccr3.kind !== 'none')
    return runCcr3Install(io, {
      configDir: ccrDir,
      setup: ccr3,
      listModels: () => listCursorCatalog(io.env),
    });

  // CCR 1/2's own config.json, never cursor-bridge's file (resolveConfigPath's later lookup steps).
  const path =
    options.configPath === undefined
      ? defaultConfigPath(io.env, io.homedir)
      : resolve(io.cwd, options.configPath);
  let transformerPath: string;
  try {
    transformerPath = options.transformerPath ?? resolveInstalledTransformer();
    await stat(transformerPath);
  } catch (error) {
    io.stderr(
      `cursor-bridge: cannot find the installed CCR transformer (cursor-bridge/ccr): ${errorMessage(error)}\n`,
    );
    return exitCodes.failure;
  }

  const target = await resolveWriteTarget(path);
  let before: string | undefined;
  try {
    before = await readFile(target, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const plan = planCcrInstall(before, transformerPath);
  if (!plan.ok) {
    throw new ConfigError(
      plan.line === undefined ? { file: path } : { file: path, line: plan.line, column: plan.column ?? 1 },
      plan.error,
    );
  }
  for (const note of plan.notes) io.stderr(`cursor-bridge: ${path}: note: ${note}\n`);
  if (isTransient(transformerPath)) {
    io.stderr(
      `cursor-bridge: warning: ${transformerPath} is in npx's temporary cache and may disappear; install cursor-bridge (npm install -g cursor-bridge) and run this again\n`,
    );
  }
  if (plan.changes.length === 0 && before !== undefined) {
    io.stdout(`${path}: the cursor-sdk transformer is already installed; nothing changed.\n`);
    return exitCodes.ok;
  }

  await writeConfigFile(target, plan.text);
  io.stdout(
    createTwoFilesPatch(
      before === undefined ? '/dev/null' : path,
      path,
      before ?? '',
      plan.text,
      undefined,
      undefined,
      { context: 3 },
    ),
  );
  io.stdout(
    `${path}: ${before === undefined ? 'created' : 'updated'}:\n${plan.changes.map((change) => `  - ${change}\n`).join('')}` +
      `Restart CCR to load it: ccr restart\n`,
  );
  return exitCodes.ok;
};

export const isTransient = (path: string): boolean => path.split(sep).includes('_npx');
