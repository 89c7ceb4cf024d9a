/**
 * `cursor-bridge` command line: argv → config → run. The only place (with the other `cli/` modules)
 * that reads `process.env` or decides exit codes: 0 ok, 1 runtime failure, 2 bad usage or config.
 */

import { homedir } from 'node:os';
import { parseArgs } from 'node:util';
import { ConfigError } from '../config/config-error.js';
import { exitCodes, type CliIo } from './cli-io.js';
import { packageVersion } from './package-info.js';
import { templatesUsage } from './templates-usage.js';

const usage = `Usage:
  cursor-bridge serve [--host 127.0.0.1] [--port 3456] [--config FILE] [--drain-timeout SECONDS]
  cursor-bridge mcp-host [--stdio] [--host 127.0.0.1] [--port 3457] [--config FILE]
  cursor-bridge model get cursor [--config FILE]
  cursor-bridge ccr install [--config FILE]   CCR 3: add the cursor-bridge plugin through the running
                                              service; CCR 1/2: the cursor-sdk transformer in config.json
${templatesUsage}
  cursor-bridge --help | --version

Config: --config, else $CURSOR_BRIDGE_CONFIG, else ~/.claude-code-router/config.json, else
  ~/.config/cursor-bridge/config.json (the default once CCR 3 owns ~/.claude-code-router; missing = defaults).
Env: CURSOR_API_KEY, HOST and APIKEY (override the config), LOG_LEVEL, CURSOR_BACKEND_URL (read by @cursor/sdk),
  CURSOR_BRIDGE_MCP_TOKEN (mcp-host's bearer token; else config mcpHost.token),
  CURSOR_BRIDGE_DRAIN_TIMEOUT (serve: seconds a SIGTERM drain waits for live conversations; default 30).
Templates: the grounding text (AGENTS.md, prompt head/tail, deny-hook); overrides live in cursorTemplatesDir,
  default ~/.claude-code-router/cursor-templates/; \`cursor-bridge templates --help\` says more.
Exit codes: 0 ok, 1 runtime failure (templates: a template has a problem), 2 bad usage or config.
`;

const options = {
  host: { type: 'string' },
  port: { type: 'string' },
  config: { type: 'string' },
  'drain-timeout': { type: 'string' },
  env: { type: 'string' },
  dir: { type: 'string' },
  url: { type: 'string' },
  stdio: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>['values'];

/** `cursor-bridge templates render | head` closes stdout early: stop writing instead of crashing. */
const writeTo = (stream: NodeJS.WriteStream): ((text: string) => void) => {
  let closed = false;
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    closed = true;
  });
  return (text) => {
    if (!closed) stream.write(text);
  };
};

const defaultIo = (): CliIo => ({
  stdout: writeTo(process.stdout),
  stderr: writeTo(process.stderr),
  env: process.env,
  cwd: process.cwd(),
  homedir: homedir(),
});

const configOption = (values: Values): { configPath?: string } =>
  values.config === undefined ? {} : { configPath: values.config };

/**
 * Runs one command; undefined when argv names none. Throws what the command throws. Commands are
 * imported when run, so `--version`, `--help` and usage errors do not load the whole bridge.
 */
const dispatch = async (
  io: CliIo,
  command: string,
  rest: string[],
  values: Values,
): Promise<number | undefined> => {
  const misplaced = [
    ...(command === 'serve' || command === 'mcp-host' ? [] : (['host', 'port'] as const)),
    ...(command === 'templates' ? [] : (['env', 'dir', 'url'] as const)),
    ...(command === 'mcp-host' ? [] : (['stdio'] as const)),
    ...(command === 'serve' ? [] : (['drain-timeout'] as const)),
  ].filter((name) => values[name] !== undefined);
  if (misplaced.length > 0) {
    io.stderr(`cursor-bridge: --${misplaced.join(', --')} does not apply to "${command}"\n\n${usage}`);
    return exitCodes.usage;
  }
  if ((command === 'serve' || command === 'mcp-host') && rest.length === 0) {
    let port: number | undefined;
    if (values.port !== undefined) {
      port = Number(values.port);
      if (!Number.isInteger(port) || port < 0 || port > 65_535) {
        io.stderr(`cursor-bridge: --port must be an integer from 0 to 65535, got "${values.port}"\n`);
        return exitCodes.usage;
      }
    }
    const listen = {
      ...(values.host === undefined ? {} : { host: values.host }),
      ...(port === undefined ? {} : { port }),
      ...configOption(values),
    };
    if (command === 'mcp-host') {
      const { runMcpHost } = await import('./mcp-host.js');
      return runMcpHost(io, { ...listen, stdio: values.stdio === true });
    }
    const { runServe } = await import('./serve.js');
    const drainTimeout = values['drain-timeout'];
    return runServe(io, { ...listen, ...(drainTimeout === undefined ? {} : { drainTimeout }) });
  }
  if (command === 'model' && rest[0] === 'get' && rest.length === 2) {
    const { runModelGet } = await import('./model-get-command.js');
    return runModelGet(io, { provider: rest[1] ?? '', ...configOption(values) });
  }
  if (command === 'ccr' && rest[0] === 'install' && rest.length === 1) {
    const { runCcrInstall } = await import('./ccr-install-command.js');
    return runCcrInstall(io, configOption(values));
  }
  if (command === 'templates') {
    const { runTemplates } = await import('./templates-command.js');
    return runTemplates(io, {
      args: rest,
      ...configOption(values),
      ...(values.env === undefined ? {} : { envFile: values.env }),
      ...(values.dir === undefined ? {} : { dir: values.dir }),
      ...(values.url === undefined ? {} : { url: values.url }),
      ...(values.help === true ? { help: true } : {}),
    });
  }
  return undefined;
};

export const main = async (argv: readonly string[], io: CliIo = defaultIo()): Promise<number> => {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], allowPositionals: true, options });
  } catch (error) {
    io.stderr(`cursor-bridge: ${error instanceof Error ? error.message : String(error)}\n\n${usage}`);
    return exitCodes.usage;
  }
  const { values, positionals } = parsed;
  // `templates --help` is the templates command's own help.
  if (values.help === true && positionals[0] !== 'templates') {
    io.stdout(usage);
    return exitCodes.ok;
  }
  if (values.version === true) {
    io.stdout(`${await packageVersion()}\n`);
    return exitCodes.ok;
  }
  const [command = 'serve', ...rest] = positionals;
  try {
    const code = await dispatch(io, command, rest, values);
    if (code !== undefined) return code;
  } catch (error) {
    if (error instanceof ConfigError) {
      io.stderr(`cursor-bridge: ${error.message}\n`);
      return exitCodes.usage;
    }
    io.stderr(`cursor-bridge: ${error instanceof Error ? error.message : String(error)}\n`);
    return exitCodes.failure;
  }
  io.stderr(`cursor-bridge: unknown command "${[command, ...rest].join(' ')}"\n\n${usage}`);
  return exitCodes.usage;
};
