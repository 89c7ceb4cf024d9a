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
import { probeListener } from './probe-listener.js';
import { stopOnStdinEndEnv } from './session-serve.js';
import { resolveCursorApiKey } from '../config/cursor-auth.js';

/**
 * What `serve` prints on stderr when it starts without a usable Cursor key: it still starts (its `/health`
 * stays 200 for load balancers, and reports `"cursor":{"ready":false}`), but no turn can succeed.
 */
export const noCursorKeyNotice = (problem: string, configPath: string): string =>
  `cursor-bridge: serve is starting without a usable Cursor API key, so every turn fails (401) until it has ` +
  `one. ${problem} (Config: ${configPath}.) Then restart serve; GET /health shows "cursor":{"ready":true} once it has a key.`;

/** Where to ask what holds a port the bridge could not bind: the wildcard addresses are reached on loopback. */
const loopbackFor = (host: string): string =>
  host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;

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
 * closes everything, resolving 0. A second signal ends the drain at once. With
 * `CURSOR_BRIDGE_STOP_ON_STDIN_END=1` (a session's serve, see `session-serve.ts`) the end of stdin stops it too.
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
  const auth = resolveCursorApiKey(config.cursor.apiKeyConfigured, io.env);
  if (!auth.ok) io.stderr(`${noCursorKeyNotice(auth.error.message, path)}\n`);

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
  // Listening means ready: the first request after a start (a rolling restart's first traffic) should
  // not wait for the SDK's import.
  try {
    await bridge.upstream.load?.();
  } catch (error) {
    await bridge.close();
    io.stderr(`cursor-bridge: could not load @cursor/sdk: ${(error as Error).message}\n`);
    return exitCodes.failure;
  }

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
    const holder =
      (error as NodeJS.ErrnoException).code === 'EADDRINUSE'
        ? (await probeListener(loopbackFor(listenHost), port)).kind
        : undefined;
    io.stderr(
      `${describeListenFailure(error, { command: 'serve', host: listenHost, port, ...(holder === undefined ? {} : { holder }) })}\n`,
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

  const force = new AbortController();
  const forceStop = (signal: NodeJS.Signals): void => {
    logger.warn({ signal }, 'second signal: ending the drain now');
    force.abort();
  };
  // A session's serve (`cursor-bridge claude`) also stops when its parent's stdin pipe ends.
  const stdinEnds = io.env[stopOnStdinEndEnv] === '1';
  await new Promise<void>((resolveStop) => {
    const stop = (signal: NodeJS.Signals | 'stdin-end'): void => {
      logger.info({ signal, drainTimeoutMs }, 'shutting down');
      process.off('SIGINT', stop).off('SIGTERM', stop);
      if (stdinEnds) process.stdin.off('end', onStdinEnd).destroy();
      // The next signal cuts the drain short.
      process.once('SIGINT', forceStop).once('SIGTERM', forceStop);
      resolveStop();
    };
    const onStdinEnd = (): void => stop('stdin-end');
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    if (stdinEnds) process.stdin.on('end', onStdinEnd).resume();
  });
  try {
    const result = await bridge.drain(drainTimeoutMs, force.signal);
    logger.info(result, 'stopped');
  } finally {
    process.off('SIGINT', forceStop).off('SIGTERM', forceStop);
  }
  return exitCodes.ok;
};
