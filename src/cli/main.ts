/**
 * `cursor-bridge` command line: argv → config → run. The only place (with the other `cli/` modules)
 * that reads `process.env` or decides exit codes: 0 ok, 1 runtime failure, 2 bad usage or config.
 */

import { homedir } from 'node:os';
import { parseArgs } from 'node:util';
import { ConfigError } from '../config/config-error.js';
import { exitCodes, type CliIo } from './cli-io.js';
import { packageVersion } from './package-info.js';
import { commandUsage, describeParseError, usage, usageOf } from './usage.js';

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

/** `--port` as given: an integer from 0 to 65535, or the message that says it is not. */
const parsePort = (text: string | undefined): { port?: number } | { error: string } => {
  if (text === undefined) return {};
  const port = Number(text);
  return Number.isInteger(port) && port >= 0 && port <= 65_535
    ? { port }
    : { error: `--port must be an integer from 0 to 65535, got "${text}"` };
};

/** The options each command takes besides --config, --help and --version. */
const commandOptions: Readonly<Record<string, readonly (keyof typeof options)[]>> = {
  serve: ['host', 'port', 'drain-timeout'],
  'mcp-host': ['host', 'port', 'stdio'],
  templates: ['env', 'dir', 'url'],
  claude: ['port'],
  codex: ['port'],
};

/** The clients `cursor-bridge <client> [client args…]` runs. */
const clients = new Set(['claude', 'codex']);

/**
 * `[cursor-bridge options…] claude|codex [client args…]`: the client, cursor-bridge's own options (those
 * before the client's name) and the client's arguments, passed through untouched; undefined when argv does
 * not have that shape.
 */
const splitClientCommand = (
  argv: readonly string[],
): { client: 'claude' | 'codex'; values: Values; args: string[] } | undefined => {
  for (const [index, word] of argv.entries()) {
    if (!clients.has(word)) continue;
    try {
      const { values } = parseArgs({ args: argv.slice(0, index), options, allowPositionals: false });
      return { client: word as 'claude' | 'codex', values, args: argv.slice(index + 1) };
    } catch {
      // the word was an option's value, or a bad option precedes it: not a client command here
    }
  }
  return undefined;
};

/** The command a malformed argv was meant for (its first positional), for the usage that follows the error. */
const intendedCommand = (argv: readonly string[]): string => {
  const { positionals } = parseArgs({ args: [...argv], options, allowPositionals: true, strict: false });
  return positionals[0] ?? 'serve';
};

/**
 * The options `command` takes (others are refused naming the command's usage), and `--port` as a number;
 * `ok: false` once the problem is on stderr.
 */
const checkOptions = (
  io: CliIo,
  command: string,
  values: Values,
): { ok: true; port?: number } | { ok: false } => {
  const allowed = new Set<string>(['config', 'help', 'version', ...(commandOptions[command] ?? [])]);
  const misplaced = Object.entries(values)
    .filter(([name, value]) => !allowed.has(name) && value !== undefined)
    .map(([name]) => name);
  if (misplaced.length > 0) {
    io.stderr(
      `cursor-bridge: --${misplaced.join(', --')} does not apply to "${command}"\n${usageOf(command)}`,
    );
    return { ok: false };
  }
  const parsedPort = parsePort(values.port);
  if ('error' in parsedPort) {
    io.stderr(`cursor-bridge: ${parsedPort.error}\n`);
    return { ok: false };
  }
  return { ok: true, ...parsedPort };
};

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
  const checked = checkOptions(io, command, values);
  if (!checked.ok) return exitCodes.usage;
  const parsedPort = checked.port === undefined ? {} : { port: checked.port };
  if ((command === 'serve' || command === 'mcp-host') && rest.length === 0) {
    const listen = {
      ...(values.host === undefined ? {} : { host: values.host }),
      ...parsedPort,
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
  if (command === 'example' && rest.length <= 1) {
    const { runExample } = await import('./example-command.js');
    return runExample(io, rest[0]);
  }
  return undefined;
};

/** Runs `cursor-bridge claude|codex …` (see {@link splitClientCommand}). */
const dispatchClient = async (
  io: CliIo,
  { client, values, args }: { client: 'claude' | 'codex'; values: Values; args: string[] },
): Promise<number> => {
  const checked = checkOptions(io, client, values);
  if (!checked.ok) return exitCodes.usage;
  const { runClientCommand } = await import('./client-command.js');
  return runClientCommand(io, {
    client,
    args,
    ...(checked.port === undefined ? {} : { port: checked.port }),
    ...configOption(values),
  });
};

export const main = async (argv: readonly string[], io: CliIo = defaultIo()): Promise<number> => {
  const clientCommand = splitClientCommand(argv);
  let parsed;
  if (clientCommand === undefined) {
    try {
      parsed = parseArgs({ args: [...argv], allowPositionals: true, options });
    } catch (error) {
      const command = intendedCommand(argv);
      const known = command in commandOptions ? commandOptions[command]! : Object.keys(options);
      io.stderr(
        `cursor-bridge${command in commandUsage ? ` ${command}` : ''}: ${describeParseError(error, ['config', ...known])}\n${usageOf(command)}`,
      );
      return exitCodes.usage;
    }
  }
  const values = clientCommand?.values ?? parsed?.values ?? {};
  // `templates --help` is the templates command's own help.
  if (values.help === true && parsed?.positionals[0] !== 'templates') {
    io.stdout(usage);
    return exitCodes.ok;
  }
  if (values.version === true) {
    io.stdout(`${await packageVersion()}\n`);
    return exitCodes.ok;
  }
  const [command = 'serve', ...rest] = parsed?.positionals ?? [];
  try {
    if (clientCommand !== undefined) return await dispatchClient(io, clientCommand);
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
