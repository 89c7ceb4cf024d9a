/**
 * The one parser of `cursor-bridge`'s argv, driven by the command table: finds the command, parses its
 * flags (`node:util` parseArgs, strict) and its words, and says what runs — or what is wrong, for the one
 * usage-error path.
 */

import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import type { CliIo } from './cli-io.js';
import { commonFlags, type Command, type CommandTable, type Flag } from './command.js';
import { describeParseError, type UsageProblem } from './usage.js';

export type CommandLine =
  | { kind: 'run'; command: Command; run: (io: CliIo) => Promise<number> }
  /** `--help`: the named command's help, or the whole usage when argv names no known command. */
  | { kind: 'help'; command: Command | undefined }
  | { kind: 'version' }
  | { kind: 'usage-error'; problem: UsageProblem };

/**
 * Flags every command accepts besides the common ones: every command has always accepted `--config`, so
 * those that read no config (`example`, `help`) still accept it, and ignore it.
 */
const acceptedByEvery = ['config'];

/** The flags `command` accepts: --config, its own, then --help and --version (the order "did you mean" prefers). */
const knownFlags = (command: Command): string[] => [
  ...new Set([...acceptedByEvery, ...Object.keys(command.flags), ...Object.keys(commonFlags)]),
];

/**
 * Every flag of every command, for parseArgs: a flag another command takes is "does not apply" rather than
 * unknown. Throws when two commands give one flag name different types (a table mistake).
 */
const collectFlags = (commands: readonly Command[]): ParseArgsOptionsConfig => {
  const flags = new Map<string, Flag>(Object.entries(commonFlags));
  for (const command of commands) {
    for (const [name, flag] of Object.entries(command.flags)) {
      const seen = flags.get(name);
      if (seen !== undefined && seen.type !== flag.type)
        throw new Error(`--${name} is a ${seen.type} flag and, in "${command.name}", a ${flag.type} flag`);
      flags.set(name, flag);
    }
  }
  return Object.fromEntries(
    [...flags].map(([name, flag]) => [
      name,
      flag.type === 'boolean' && flag.short !== undefined
        ? { type: 'boolean', short: flag.short }
        : { type: flag.type },
    ]),
  );
};

/**
 * The first word of argv that is not a flag or a flag's value: the command's name (`--config FILE serve`,
 * `--port 5 claude -p hi`). A lenient pass, so a malformed flag elsewhere does not hide which command was meant.
 */
const locateCommandWord = (
  argv: readonly string[],
  options: ParseArgsOptionsConfig,
): { word: string; index: number } | undefined => {
  const { tokens } = parseArgs({
    args: [...argv],
    options,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  const token = tokens.find((candidate) => candidate.kind === 'positional');
  return token === undefined ? undefined : { word: token.value, index: token.index };
};

export const parseCommandLine = (table: CommandTable, argv: readonly string[]): CommandLine => {
  const options = collectFlags(table.commands);
  const located = locateCommandWord(argv, options);
  const command =
    located === undefined
      ? table.defaultCommand
      : table.commands.find((candidate) => candidate.name === located.word);
  const passThrough = located !== undefined && command?.passThrough === true;
  const usageError = (message: string, namesCommand = false): CommandLine => ({
    kind: 'usage-error',
    problem: { message, command, namesCommand },
  });

  let parsed;
  try {
    parsed = parseArgs({
      // A client launcher's flags come before its name; the words after it are the client's.
      args: passThrough ? argv.slice(0, located.index) : [...argv],
      options,
      allowPositionals: !passThrough,
      strict: true,
    });
  } catch (error) {
    const known = command === undefined ? Object.keys(options) : knownFlags(command);
    return usageError(describeParseError(error, known), true);
  }
  const values = parsed.values as Readonly<Record<string, string | boolean | undefined>>;
  if (values['help'] === true) return { kind: 'help', command: located === undefined ? undefined : command };
  if (values['version'] === true) return { kind: 'version' };
  if (command === undefined) return usageError(`unknown command "${parsed.positionals.join(' ')}"`);

  const accepted = new Set(knownFlags(command));
  const misplaced = Object.entries(values)
    .filter(([name, value]) => !accepted.has(name) && value !== undefined)
    .map(([name]) => name);
  if (misplaced.length > 0)
    return usageError(`--${misplaced.join(', --')} does not apply to "${command.name}"`);

  const words = passThrough
    ? argv.slice(located.index + 1)
    : parsed.positionals.slice(located === undefined ? 0 : 1);
  const prepared = command.prepare(values, words);
  return prepared.ok ? { kind: 'run', command, run: prepared.value } : usageError(prepared.error);
};
