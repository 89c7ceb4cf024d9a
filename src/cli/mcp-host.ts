import { createMcpHostServer } from '../../mcp/host.js';
import { createLogger } from '../logging/logger.js';
import { exitCodes, type CliIo } from './cli-io.js';
import { describeListenFailure } from './listen-error.js';
import { builtInDefaultsNotice, loadCommandConfig } from './load-command-config.js';
import { packageVersion } from './package-info.js';
import { routeConsoleToLogger } from './route-console.js';

export type McpHostOptions = { host?: string; port?: number; configPath?: string; stdio?: boolean };

/** The port `mcp-host` listens on by default (serve's is 3456). */
export const defaultMcpHostPort = 3457;

const loopbackHosts = new Set(['127.0.0.1', 'localhost', '::1']);

/**
 * `cursor-bridge mcp-host`: the standalone `custom-user-tools` MCP server. Runs until SIGINT/SIGTERM (or,
 * with `--stdio`, until the stdio agent closes stdin), then settles every parked call, closes and
 * resolves 0. Refuses (2) a non-loopback address without a token. With `--stdio`, stdout carries only
 * MCP: the log goes to stderr.
 */
export const runMcpHost = async (io: CliIo, options: McpHostOptions): Promise<number> => {
  const loaded = await loadCommandConfig(io, options.configPath);
  if (!loaded.ok) {
    io.stderr(`cursor-bridge: ${loaded.error}\n`);
    return exitCodes.usage;
  }
  const { path, config, level } = loaded.value;
  const envToken = io.env['CURSOR_BRIDGE_MCP_TOKEN'];
  const token = envToken !== undefined && envToken !== '' ? envToken : config.mcpHost.token;
  const host = options.host ?? config.mcpHost.host ?? '127.0.0.1';
  const port = options.port ?? config.mcpHost.port ?? defaultMcpHostPort;
  if (!loopbackHosts.has(host) && token === undefined) {
    io.stderr(
      `cursor-bridge: mcp-host refuses to listen on ${host} without a token: anyone who reaches it could ` +
        `register tools and call them. Set CURSOR_BRIDGE_MCP_TOKEN (or mcpHost.token in ${path}), or listen on 127.0.0.1.\n`,
    );
    return exitCodes.usage;
  }
  const stdio = options.stdio === true;
  const logger = createLogger({
    level: config.log ? level : 'silent',
    // With --stdio, stdout is the MCP channel.
    ...(stdio ? { destination: process.stderr } : {}),
  }).child({ component: 'mcp-host' });
  const restoreConsole = routeConsoleToLogger(logger);
  for (const warning of config.warnings) logger.warn(warning);
  if (!config.file.found) io.stderr(`${builtInDefaultsNotice(path)}\n`);
  if (token === undefined)
    logger.warn(
      'no token set (CURSOR_BRIDGE_MCP_TOKEN / mcpHost.token): any local process can attach and call tools',
    );

  const server = createMcpHostServer({
    logger,
    version: await packageVersion(),
    ...(token === undefined ? {} : { token }),
    ...(config.mcpHost.callDeadlineMs === undefined ? {} : { callDeadlineMs: config.mcpHost.callDeadlineMs }),
    ...(config.mcpHost.progressIntervalMs === undefined
      ? {}
      : { progressIntervalMs: config.mcpHost.progressIntervalMs }),
    ...(config.mcpHost.allowedHosts === undefined ? {} : { allowedHosts: config.mcpHost.allowedHosts }),
  });
  try {
    let address;
    try {
      address = await server.listen(port, host);
    } catch (error) {
      await server.close();
      io.stderr(`${describeListenFailure(error, { command: 'mcp-host', host, port })}\n`);
      return exitCodes.failure;
    }
    const base = `${address.host.includes(':') ? `[${address.host}]` : address.host}:${address.port}`;
    logger.info({ host: address.host, port: address.port, config: path, stdio }, 'mcp-host listening');
    io.stderr(
      `cursor-bridge mcp-host listening on http://${base} (agents: http://${base}/mcp, tool hosts: ws://${base}/host)\n`,
    );

    await new Promise<void>((resolveStop) => {
      const stop = (signal: NodeJS.Signals | 'stdio'): void => {
        logger.info({ signal }, 'shutting down');
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        resolveStop();
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
      if (stdio) {
        server.serveStdio(process.stdin, process.stdout).then(
          () => stop('stdio'),
          (error: unknown) => {
            logger.error({ err: error }, 'stdio agent failed');
            stop('stdio');
          },
        );
      }
    });
    await server.close();
    return exitCodes.ok;
  } finally {
    restoreConsole();
  }
};
