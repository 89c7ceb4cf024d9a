/**
 * Everything the CLI prints about how to call it, generated from the command table: `--help`, a command's
 * help, and the one usage-error report.
 */

import { editDistance } from '../../lib/edit-distance.js';
import { exitCodes, type CliIo } from './cli-io.js';
import { commonFlags, type Command } from './command.js';
import { errorMessage } from '../../lib/error-message.js';

const usageTrailer = '(cursor-bridge --help lists every command and the environment it reads)';

const environment = `Config: --config, else $CURSOR_BRIDGE_CONFIG, else ~/.claude-code-router/config.json, else
  ~/.config/cursor-bridge/config.json (the default once CCR 3 owns ~/.claude-code-router; missing = defaults).
Env: CURSOR_API_KEY, HOST and APIKEY (override the config), LOG_LEVEL, CURSOR_BACKEND_URL (read by @cursor/sdk),
  CURSOR_BRIDGE_MCP_TOKEN (mcp-host's bearer token; else config mcpHost.token),
  CURSOR_BRIDGE_DRAIN_TIMEOUT (serve: seconds a SIGTERM drain waits for live conversations; default 30).
Templates: the grounding text (AGENTS.md, prompt head/tail, deny-hook); overrides live in cursorTemplatesDir,
  default ~/.claude-code-router/cursor-templates/; \`cursor-bridge templates --help\` says more.
Exit codes: 0 ok, 1 runtime failure (templates: a template has a problem), 2 bad usage or config.
`;

/** `cursor-bridge --help | --version`: the flags every command takes, with no command. */
const commonFlagsLine = `  cursor-bridge ${Object.keys(commonFlags)
  .map((name) => `--${name}`)
  .join(' | ')}\n`;

const usageLines = (command: Command): string => command.usage.map((line) => `  ${line}\n`).join('');

/** The whole `--help` text: each command's usage lines and summary, in table order, then the environment. */
export const renderUsage = (commands: readonly Command[]): string =>
  `Usage:\n${commands.map((command) => `${usageLines(command)}      ${command.summary}\n`).join('')}` +
  `${commonFlagsLine}\n${environment}`;

const flagLines = (command: Command): string => {
  const names = Object.entries(command.flags).map(
    ([name, flag]) => `--${name}${flag.type === 'string' ? ` ${flag.value}` : ''}`,
  );
  const width = Math.max(...names.map((name) => name.length)) + 2;
  return Object.values(command.flags)
    .map((flag, index) => `  ${(names[index] ?? '').padEnd(width)}${flag.description}\n`)
    .join('');
};

/** `cursor-bridge help COMMAND` (and `COMMAND --help`): its summary, usage lines, flags and any details. */
export const renderCommandHelp = async (command: Command): Promise<string> => {
  const flags = Object.keys(command.flags).length === 0 ? '' : `\nFlags:\n${flagLines(command)}`;
  const details = command.details === undefined ? '' : `\n${await command.details()}`;
  return `cursor-bridge ${command.name}: ${command.summary}\n\nUsage:\n${usageLines(command)}${flags}${details}${usageTrailer}\n`;
};

/** Prints the help of `command`, or the whole usage without one; exit 0. */
export const showHelp = async (
  io: CliIo,
  commands: readonly Command[],
  command: Command | undefined,
): Promise<number> => {
  io.stdout(command === undefined ? renderUsage(commands) : await renderCommandHelp(command));
  return exitCodes.ok;
};

/** A command line that does not fit the table, or a handler's `UsageError`. */
export type UsageProblem = {
  /** What is wrong, in words. */
  message: string;
  /** The command it concerns (its usage follows); undefined for an unknown command (every command's follows). */
  command: Command | undefined;
  /** A malformed flag names the command before the colon: `cursor-bridge serve: unknown option --prot`. */
  namesCommand?: boolean;
};

/**
 * The one usage-error path: `cursor-bridge: <what is wrong>` and the usage of the command it concerns (every
 * command's for an unknown one) on stderr; exit 2.
 */
export const reportUsageError = (io: CliIo, commands: readonly Command[], problem: UsageProblem): number => {
  const { message, command } = problem;
  const where = problem.namesCommand === true && command !== undefined ? ` ${command.name}` : '';
  const usage =
    command === undefined ? `\n${renderUsage(commands)}` : `Usage:\n${usageLines(command)}${usageTrailer}\n`;
  io.stderr(`cursor-bridge${where}: ${message}\n${usage}`);
  return exitCodes.usage;
};

/** The known flag closest to `name` (at most two edits away), for "did you mean". */
export const suggestFlag = (name: string, known: readonly string[]): string | undefined => {
  let best: { flag: string; edits: number } | undefined;
  for (const flag of known) {
    const edits = editDistance(name, flag);
    if (edits <= 2 && (best === undefined || edits < best.edits)) best = { flag, edits };
  }
  return best?.flag;
};

/**
 * A `node:util` parseArgs error in words: which flag, and what is wrong with it (never Node's advice about
 * positionals starting with a dash). `known` are the long flag names, for "did you mean".
 */
export const describeParseError = (error: unknown, known: readonly string[]): string => {
  const message = errorMessage(error);
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const option = /'(-{1,2}[^' ]+)/.exec(message)?.[1] ?? '';
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const suggestion = suggestFlag(option.replace(/^-+/, ''), known);
    return `unknown option ${option}${suggestion === undefined ? '' : ` (did you mean --${suggestion}?)`}`;
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    if (/does not take an argument/.test(message)) return `${option} takes no value`;
    if (/ambiguous/.test(message))
      return `${option} needs a value, and the next argument is an option (write ${option}=VALUE for a value starting with "-")`;
    return `${option} needs a value`;
  }
  return message.split('\n')[0] ?? message;
};
