/**
 * `cursor-bridge ccr install` when the directory belongs to Claude Code Router 3: CCR 3 keeps its config in
 * SQLite behind its service, so the install goes through the service's admin RPC (never through a
 * config.json, which CCR 3 would import once and delete, and never with the 1.x/2.x transformer, which it
 * has no API for). Exit 0 (changed, or nothing to do), 1 (the service failed us), 2 (CCR 3 not running).
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { isRecord } from '../../lib/is-record.js';
import { defaultCcr3PluginPort } from '../hosts/ccr/ccr3-plugin-config.js';
import { exitCodes, type CliIo } from './cli-io.js';
import {
  existingCcr3Port,
  existingCcr3Secret,
  planCcr3Install,
  type Ccr3InstallTarget,
} from '../hosts/ccr/install/ccr3-install-plan.js';
import { createCcr3Admin, type Ccr3Setup } from '../hosts/ccr/install/ccr3-service.js';
import { errorMessage } from '../../lib/error-message.js';
import { sleep } from '../../lib/sleep.js';

export type Ccr3InstallOptions = {
  configDir: string;
  setup: Exclude<Ccr3Setup, { kind: 'none' }>;
  /** The plugin entry CCR should import; default: this package's `cursor-bridge/ccr3` export. */
  modulePath?: string;
  /** The backend port for a first install (default 3460; an earlier install's port is kept). */
  port?: number;
  /** Cursor's catalog (ids); undefined or a failure means `composer-2` only. */
  listModels?: () => Promise<string[]>;
  /** How long the plugin's backend gets to answer after the gateway restart (default 20 s). */
  backendWaitMs?: number;
};

/** The absolute path of the installed CCR 3 plugin entry, as `require.resolve('cursor-bridge/ccr3')` sees it. */
export const resolveInstalledCcr3Plugin = (): string =>
  createRequire(import.meta.url).resolve('cursor-bridge/ccr3');

const generateSecret = (): string => `cb-${randomBytes(24).toString('base64url')}`;

/** Polls the plugin's `/health` until it answers (a restarted gateway re-runs every plugin's setup). */
const waitForBackend = async (port: number, waitMs: number): Promise<boolean> => {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      const response = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(2_000) });
      await response.body?.cancel();
      if (response.status === 200) return true;
    } catch {
      // not up yet
    }
    if (Date.now() >= deadline) return false;
    await sleep(250);
  }
};

const catalogModels = async (io: CliIo, listModels: Ccr3InstallOptions['listModels']): Promise<string[]> => {
  if (listModels !== undefined) {
    try {
      const ids = await listModels();
      if (ids.length > 0) return ids;
      io.stderr('cursor-bridge: note: Cursor listed no models; offering composer-2\n');
    } catch (error) {
      io.stderr(
        `cursor-bridge: note: could not list Cursor's models (${errorMessage(error)}); offering composer-2 (add more later in CCR's UI)\n`,
      );
    }
  }
  return ['composer-2'];
};

export const runCcr3Install = async (io: CliIo, options: Ccr3InstallOptions): Promise<number> => {
  const { setup } = options;
  if (setup.kind === 'stopped') {
    io.stderr(
      `cursor-bridge: Claude Code Router 3 is installed here (${setup.evidence}) but its service is not running, ` +
        `and CCR 3 takes configuration only through it. Run:\n  ccr start\n  cursor-bridge ccr install\n`,
    );
    return exitCodes.usage;
  }
  let modulePath: string;
  try {
    modulePath = options.modulePath ?? resolveInstalledCcr3Plugin();
  } catch (error) {
    io.stderr(
      `cursor-bridge: cannot find the installed CCR 3 plugin (cursor-bridge/ccr3): ${errorMessage(error)}\n`,
    );
    return exitCodes.failure;
  }
  const admin = createCcr3Admin(setup);
  const info = await admin.call('getAppInfo');
  const version = isRecord(info) && typeof info['version'] === 'string' ? info['version'] : 'unknown';
  if (!version.startsWith('3.')) {
    io.stderr(
      `cursor-bridge: the Claude Code Router service at ${setup.origin} is version ${version}; this install knows CCR 3.x (and 1.x/2.x through config.json)\n`,
    );
    return exitCodes.usage;
  }
  const config = await admin.call('getConfig');
  if (!isRecord(config)) throw new Error(`CCR ${version} getConfig returned no config object`);

  const target: Ccr3InstallTarget = {
    modulePath,
    port: existingCcr3Port(config) ?? options.port ?? defaultCcr3PluginPort,
    secret: existingCcr3Secret(config) ?? generateSecret(),
    models: await catalogModels(io, options.listModels),
  };
  const plan = planCcr3Install(config, target);
  const where = `Claude Code Router ${version} (${setup.origin})`;
  if (plan.changes.length === 0) {
    io.stdout(`${where}: cursor-bridge is already installed; nothing to do.\n`);
    return exitCodes.ok;
  }

  const saved = await admin.call('saveConfig', [plan.config]);
  const plugins = isRecord(saved) && Array.isArray(saved['plugins']) ? saved['plugins'] : [];
  if (
    !plugins.some((entry) => isRecord(entry) && entry['id'] === 'cursor-bridge' && entry['enabled'] !== false)
  )
    throw new Error(`CCR ${version} saved the config without the cursor-bridge plugin entry`);
  // saveConfig restarts the gateway only when the config changed; a gateway still in "error" (no provider
  // before this install) gets an explicit restart.
  const status = await admin.call('getGatewayStatus');
  if (!isRecord(status) || status['state'] !== 'running') await admin.call('restartGateway');

  io.stdout(`${where}: updated:\n${plan.changes.map((change) => `  - ${change}\n`).join('')}`);
  if (!(await waitForBackend(target.port, options.backendWaitMs ?? 20_000))) {
    io.stderr(
      `cursor-bridge: the plugin's backend does not answer on http://127.0.0.1:${target.port}/health: see CCR's log ` +
        `and ${options.configDir}/app-data/plugins/cursor-bridge/cursor-bridge.log (is the port taken?)\n`,
    );
    return exitCodes.failure;
  }
  io.stdout(
    `The cursor-bridge plugin answers on http://127.0.0.1:${target.port}. Claude Code now runs on Cursor through CCR: claude (or ccr "Claude Code").\n`,
  );
  return exitCodes.ok;
};
