import { createLogger } from '../logging/logger.js';
import { logLevels } from '../config/config-schema.js';
import { loadConfig, type BridgeConfig } from '../config/load-config.js';
import type { Logger } from '../logging/logger.js';
import { routeConsoleToLogger } from './route-console.js';
import { exitCodes, type CliIo } from './cli-io.js';
import { createBridge } from '../bridge/create-bridge.js';
import { detectContainer } from '../bridge/sandbox.js';
import { decideListenHost } from './listen-host.js';
import { resolveConfigPath } from './config-path.js';

export type ServeOptions = { host?: string; port?: number; configPath?: string };

/** `cursor-bridge serve`: runs until SIGINT/SIGTERM, then closes everything and resolves 0. */
export const runServe = async (io: CliIo, options: ServeOptions): Promise<number> => {
  const path = resolveConfigPath(io, options.configPath);
  const config = await loadConfig({ path, env: io.env, homedir: io.homedir });
  const envLevel = io.env['LOG_LEVEL']?.trim().toLowerCase();
  const level = logLevels.find((name) => name === envLevel) ?? config.logLevel;
  if (envLevel !== undefined && envLevel !== '' && level !== envLevel) {
    io.stderr(`cursor-bridge: LOG_LEVEL must be one of ${logLevels.join(', ')}, got "${envLevel}"\n`);
    return exitCodes.usage;
  }
  const keepaliveText = io.env['CURSOR_BRIDGE_KEEPALIVE_MS']?.trim();
  const keepaliveMs = keepaliveText === undefined || keepaliveText === '' ? undefined : Number(keepaliveText);
  if (keepaliveMs !== undefined && !(Number.isInteger(keepaliveMs) && keepaliveMs >= 0)) {
    io.stderr(
      `cursor-bridge: CURSOR_BRIDGE_KEEPALIVE_MS must be a whole number of milliseconds, got "${keepaliveText}"\n`,
    );
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
    return await serve(io, options, { path, config: effective, logger, keepaliveMs });
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
  }: { path: string; config: BridgeConfig; logger: Logger; keepaliveMs: number | undefined },
): Promise<number> => {
  for (const warning of config.warnings) logger.warn(warning);
  if (!config.file.found)
    logger.info({ path }, 'no config file; using built-in defaults (provider cursor, cursor,composer-2)');

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
    io.stderr(
      `cursor-bridge: cannot listen on ${listenHost}:${port}: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    return exitCodes.failure;
  }
  const address = bridge.server.address();
  const actualPort = typeof address === 'object' && address !== null ? address.port : port;
  logger.info(
    { host: listenHost, port: actualPort, mode: config.cursor.mode, config: path },
    'cursor-bridge listening',
  );
  io.stderr(`cursor-bridge listening on http://${listenHost}:${actualPort}\n`);

  await new Promise<void>((resolveStop) => {
    const stop = (signal: NodeJS.Signals): void => {
      logger.info({ signal }, 'shutting down');
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolveStop();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await bridge.close();
  return exitCodes.ok;
};
