/**
 * The command table: every `cursor-bridge` command, the one source of the parser, `--help`, `help COMMAND`
 * and the usage errors. Handlers import their command's module when run, so `--version`, `--help` and
 * usage errors never load the bridge; each is a thin call into that module.
 */

import type { Result } from '../../lib/result.js';
import { everyWord, noArguments, oneArgument, optionalArgument, subcommand } from './command-arguments.js';
import {
  booleanFlag,
  defineCommand,
  parsedFlag,
  stringFlag,
  type Command,
  type CommandTable,
} from './command.js';
import { showHelp } from './usage.js';

/** `--port` as given: an integer from 0 to 65535, or the message that says it is not. */
const parsePort = (text: string): Result<number, string> => {
  const port = Number(text);
  return Number.isInteger(port) && port >= 0 && port <= 65_535
    ? { ok: true, value: port }
    : { ok: false, error: `--port must be an integer from 0 to 65535, got "${text}"` };
};

const configFlag = stringFlag('FILE', 'the config file (default: see Config in cursor-bridge --help)');
const portFlag = (description: string) => parsedFlag('N', description, parsePort);

/** `{ [key]: value }`, or nothing for a flag not given (the options types are exact: no `key: undefined`). */
const given = <Key extends string, Value>(key: Key, value: Value | undefined): Partial<Record<Key, Value>> =>
  (value === undefined ? {} : { [key]: value }) as Partial<Record<Key, Value>>;

const clientCommand = (client: 'claude' | 'codex', summary: string): Command =>
  defineCommand({
    name: client,
    summary,
    usage: [`cursor-bridge [--port 3456] [--config FILE] ${client} [${client} args…]`],
    flags: {
      port: portFlag("where to find a running serve, or start one (default: the config's PORT, else 3456)"),
      config: configFlag,
    },
    passThrough: true,
    parseArguments: everyWord,
    run: async (io, { flags, arguments: args }) => {
      const { runClientCommand } = await import('./client-command.js');
      return runClientCommand(io, {
        client,
        args,
        ...given('port', flags.port),
        ...given('configPath', flags.config),
      });
    },
  });

const serve = defineCommand({
  name: 'serve',
  summary: "the gateway (the default command): the Anthropic and OpenAI APIs on Cursor's models",
  usage: ['cursor-bridge serve [--host 127.0.0.1] [--port 3456] [--config FILE] [--drain-timeout SECONDS]'],
  flags: {
    host: stringFlag(
      'HOST',
      "where to listen (default: $HOST, else the config's HOST); non-loopback needs APIKEY",
    ),
    port: portFlag("the port (default: the config's PORT, else 3456; 0: any free port)"),
    config: configFlag,
    'drain-timeout': stringFlag(
      'SECONDS',
      'seconds a SIGTERM drain waits (default: $CURSOR_BRIDGE_DRAIN_TIMEOUT, else 30)',
    ),
  },
  parseArguments: noArguments('serve'),
  run: async (io, { flags }) => {
    const { runServe } = await import('./serve.js');
    return runServe(io, {
      ...given('host', flags.host),
      ...given('port', flags.port),
      ...given('configPath', flags.config),
      ...given('drainTimeout', flags['drain-timeout']),
    });
  },
});

const mcpHost = defineCommand({
  name: 'mcp-host',
  summary: 'the standalone MCP tool host: agents at /mcp, tool hosts attach at /host (WebSocket)',
  usage: ['cursor-bridge mcp-host [--stdio] [--host 127.0.0.1] [--port 3457] [--config FILE]'],
  flags: {
    stdio: booleanFlag(
      'also serve MCP on stdin/stdout, for the agent that started it (the log goes to stderr)',
    ),
    host: stringFlag(
      'HOST',
      "where to listen (default: the config's mcpHost.host); non-loopback needs a token",
    ),
    port: portFlag("the port (default: the config's mcpHost.port, else 3457)"),
    config: configFlag,
  },
  parseArguments: noArguments('mcp-host'),
  run: async (io, { flags }) => {
    const { runMcpHost } = await import('./mcp-host.js');
    return runMcpHost(io, {
      ...given('host', flags.host),
      ...given('port', flags.port),
      ...given('configPath', flags.config),
      stdio: flags.stdio === true,
    });
  },
});

const model = defineCommand({
  name: 'model',
  summary: "add the ids of Cursor's model catalog to the cursor provider's models in the config",
  usage: ['cursor-bridge model get cursor [--config FILE]'],
  flags: { config: configFlag },
  parseArguments: subcommand<string>('model', 'get', oneArgument('model get', 'PROVIDER')),
  run: async (io, { flags, arguments: provider }) => {
    const { runModelGet } = await import('./model-get-command.js');
    return runModelGet(io, { provider, ...given('configPath', flags.config) });
  },
});

const ccr = defineCommand({
  name: 'ccr',
  summary: 'CCR 3: add the plugin through the running service; CCR 1/2: the transformer in config.json',
  usage: ['cursor-bridge ccr install [--config FILE]'],
  flags: { config: configFlag },
  parseArguments: subcommand<undefined>('ccr', 'install', noArguments('ccr install')),
  run: async (io, { flags }) => {
    const { runCcrInstall } = await import('./ccr-install-command.js');
    return runCcrInstall(io, given('configPath', flags.config));
  },
});

const templates: Command = defineCommand({
  name: 'templates',
  summary: 'see, check and edit the grounding text the agent is given (the workspace templates)',
  usage: [
    'cursor-bridge templates list [--config FILE]',
    'cursor-bridge templates show NAME [--config FILE]',
    'cursor-bridge templates render [--env FILE] [--config FILE]',
    'cursor-bridge templates eject [NAME] [--dir DIR] [--config FILE]',
    'cursor-bridge templates placeholders',
    'cursor-bridge templates live [--url URL] [--config FILE]',
    'cursor-bridge templates --help              what each does, the --env FILE formats, exit codes',
  ],
  flags: {
    env: stringFlag('FILE', "render: a file holding a client's environment block (the formats are below)"),
    dir: stringFlag('DIR', 'eject: copy into DIR instead of the override directory'),
    url: stringFlag('URL', "live: the running serve's address (default http://127.0.0.1:PORT)"),
    config: configFlag,
  },
  // `templates` checks its subcommands' words itself (a problem is a UsageError).
  parseArguments: everyWord,
  details: async () => (await import('./templates-help.js')).templatesHelpDetails,
  run: async (io, { flags, arguments: words }) => {
    if (words[0] === 'help') return showHelp(io, commands, templates);
    const { runTemplates } = await import('./templates-command.js');
    return runTemplates(io, {
      args: words,
      ...given('configPath', flags.config),
      ...given('envFile', flags.env),
      ...given('dir', flags.dir),
      ...given('url', flags.url),
    });
  },
});

const consoleCommand = defineCommand({
  name: 'console',
  summary: "the web console's address on the running serve: live conversations, usage, the grounding editor",
  usage: ['cursor-bridge console [--url URL] [--config FILE]'],
  flags: {
    url: stringFlag('URL', "the running serve's address (default http://127.0.0.1:PORT)"),
    config: configFlag,
  },
  parseArguments: noArguments('console'),
  run: async (io, { flags }) => {
    const { runConsoleCommand } = await import('./console-command.js');
    return runConsoleCommand(io, { ...given('configPath', flags.config), ...given('url', flags.url) });
  },
});

const example = defineCommand({
  name: 'example',
  summary: 'list the examples the package ships, or run one (mcp-tool-host: a tool host for mcp-host)',
  usage: ['cursor-bridge example [NAME]'],
  flags: {},
  parseArguments: optionalArgument('example', 'NAME'),
  run: async (io, { arguments: name }) => {
    const { runExample } = await import('./example-command.js');
    return runExample(io, name);
  },
});

const findCommand = (name: string): Command | undefined => commands.find((command) => command.name === name);

const help = defineCommand({
  name: 'help',
  summary: "every command's usage (this text), or one command's usage and flags; also COMMAND --help",
  usage: ['cursor-bridge help [COMMAND]'],
  flags: {},
  parseArguments: (words): Result<Command | undefined, string> => {
    if (words.length > 1) return { ok: false, error: '`help` takes at most one COMMAND' };
    const [name] = words;
    const command = name === undefined ? undefined : findCommand(name);
    return name !== undefined && command === undefined
      ? { ok: false, error: `unknown command "${name}"` }
      : { ok: true, value: command };
  },
  run: (io, { arguments: command }) => showHelp(io, commands, command),
});

const commands: readonly Command[] = [
  clientCommand(
    'claude',
    "Claude Code on Cursor's models: uses the running serve, or starts one for the session",
  ),
  clientCommand('codex', "Codex on Cursor's models: uses the running serve, or starts one for the session"),
  serve,
  mcpHost,
  model,
  ccr,
  templates,
  consoleCommand,
  example,
  help,
];

export const commandTable: CommandTable = { commands, defaultCommand: serve };
