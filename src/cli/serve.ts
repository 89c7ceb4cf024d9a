import { createLogger } from '../logging/logger.js';
import type { BridgeConfig } from '../config/load-config.js';
import type { Logger } from '../logging/logger.js';
import { routeConsoleToLogger } from './route-console.js';
import { exitCodes, type CliIo } from './cli-io.js';
import { createBridge } from '../bridge/create-bridge.js';
import { detectContainer } from '../bridge/sandbox.js';
import { decideListenHost } from './listen-host.js';
import { describeListenFailure } from './listen-error.js';
import { builtInDefaultsNotice, loadCommandConfig } from './load-command-config.js';

export type ServeOptions = {
  host?: string;
  port?: number;
  configPath?: string;
  /** `--drain-timeout` as given (seconds); else `CURSOR_BRIDGE_DRAIN_TIMEOUT`, else 30. */
  drainTimeout?: string;
};

/** The default bound on a SIGTERM drain, in seconds. */
export const defaultDrainTimeoutSeconds = 30;

/** Seconds (a non-negative number, fractions allowed) → ms; undefined when not a valid duration. */
const parseDrainTimeout = (text: string): number | undefined => {
  const seconds = Number(text);
  return text.trim() !== '' && Number.isFinite(seconds) && seconds >= 0
    ? Math.round(seconds * 1000)
    : undefined;
};

/**
 * `cursor-bridge serve`: runs until SIGTERM or SIGINT, then drains — new conversations are refused
 * (retryable 503, `/health` 503 `draining`) while live ones finish, for at most the drain timeout — and
 * closes everything, resolving 0. A second signal ends the drain at once.
 */
export const runServe = async (io: CliIo, options: ServeOptions): Promise<number> => {
  const loaded = await loadCommandConfig(io, options.configPath);
  if (!loaded.ok) {
    io.stderr(`cursor-bridge: ${loaded.error}\n`);
    return exitCodes.usage;
  }
  const { path, config, level } = loaded.value;
  const keepaliveText = io.env['CURSOR_BRIDGE_KEEPALIVE_MS']?.trim();
  const keepaliveMs = keepaliveText === undefined || keepaliveText === '' ? undefined : Number(keepaliveText);
  if (keepaliveMs !== undefined && !(Number.isInteger(keepaliveMs) && keepaliveMs >= 0)) {
    io.stderr(
      `cursor-bridge: CURSOR_BRIDGE_KEEPALIVE_MS must be a whole number of milliseconds, got "${keepaliveText}"\n`,
    );
    return exitCodes.usage;
  }
  const drainText = options.drainTimeout ?? io.env['CURSOR_BRIDGE_DRAIN_TIMEOUT'];
  const drainTimeoutMs =
    drainText === undefined ? defaultDrainTimeoutSeconds * 1000 : parseDrainTimeout(drainText);
  if (drainTimeoutMs === undefined) {
    const source = options.drainTimeout === undefined ? 'CURSOR_BRIDGE_DRAIN_TIMEOUT' : '--drain-timeout';
    io.stderr(`cursor-bridge: ${source} must be a number of seconds (0 or more), got "${drainText}"\n`);
    return exitCodes.usage;
  }
  const listen = decideListenHost({
    ...(options.host === undefined ? {} : { flagHost: options.host }),
    env: io.env,
    config,
    inContainer: detectContainer(io.env),
  });
  if (!listen.ok) {
    io.stderr(`cursor-bridge: ${listen.message}\n`);
    return exitCodes.usage;
  }
  const { apiKey: _configApiKey, ...withoutApiKey } = config;
  const effective: BridgeConfig = {
    ...withoutApiKey,
    host: listen.host,
    ...(listen.apiKey === undefined ? {} : { apiKey: listen.apiKey }),
  };
  const logger = createLogger({ level: config.log ? level : 'silent' });
  const restoreConsole = routeConsoleToLogger(logger);
  try {
    return await serve(io, options, { path, config: effective, logger, keepaliveMs, drainTimeoutMs });
  } finally {
    restoreConsole();
  }
};

const serve = async (
  io: CliIo,
  options: Pick<ServeOptions, 'port'>,
  {
    path,
    config,
    logger,
    keepaliveMs,
    drainTimeoutMs,
  }: {
    path: string;
    config: BridgeConfig;
    logger: Logger;
    keepaliveMs: number | undefined;
    drainTimeoutMs: number;
  },
): Promise<number> => {
  for (const warning of config.warnings) logger.warn(warning);
  if (!config.file.found) {
    logger.info({ path }, 'no config file; using built-in defaults (provider cursor, cursor,composer-2)');
    io.stderr(`${builtInDefaultsNotice(path)}\n`);
  }

  const bridge = await createBridge({
    config,
    env: io.env,
    homedir: io.homedir,
    logger,
    watchTemplates: true,
    ...(keepaliveMs === undefined ? {} : { keepaliveMs }),
  });
  const port = options.port ?? config.port;
  const listenHost = config.host;

  try {
    await new Promise<void>((resolveListen, reject) => {
      bridge.server.once('error', reject);
      bridge.server.listen(port, listenHost, () => {
        bridge.server.off('error', reject);
        resolveListen();
      });
    });
  } catch (error) {
    await bridge.close();
    io.stderr(`${describeListenFailure(error, { command: 'serve', host: listenHost, port })}\n`);
    return exitCodes.failure;
  }
  const address = bridge.server.address();
  const actualPort = typeof address === 'object' && address !== null ? address.port : port;
  logger.info(
    { host: listenHost, port: actualPort, mode: config.cursor.mode, config: path },
    'cursor-bridge listening',
  );
  io.stderr(`cursor-bridge listening on http://${listenHost}:${actualPort}\n`);

  const force = new AbortController();
  const forceStop = (signal: NodeJS.Signals): void => {
    logger.warn({ signal }, 'second signal: ending the drain now');
    force.abort();
  };
  await new Promise<void>((resolveStop) => {
    const stop = (signal: NodeJS.Signals): void => {
      logger.info({ signal, drainTimeoutMs }, 'shutting down');
      process.off('SIGINT', stop).off('SIGTERM', stop);
      // The next signal cuts the drain short.
      process.once('SIGINT', forceStop).once('SIGTERM', forceStop);
      resolveStop();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  try {
    const result = await bridge.drain(drainTimeoutMs, force.signal);
    logger.info(result, 'stopped');
  } finally {
    process.off('SIGINT', forceStop).off('SIGTERM', forceStop);
  }
  return exitCodes.ok;
};
