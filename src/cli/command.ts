/**
 * One `cursor-bridge` command as the command table (`commands.ts`) holds it: name, one-line summary, usage
 * lines, typed flags, the shape of its arguments and its handler. {@link defineCommand} keeps each command's
 * flag and argument types for its handler and gives the parser (`parse-command-line.ts`) one interface
 * over all of them.
 */

import type { Result } from '../../lib/result.js';
import type { CliIo } from './cli-io.js';

/** A flag that is given or not (`--stdio`). */
export type BooleanFlag = { readonly type: 'boolean'; readonly short?: string; readonly description: string };

/** A flag with a value (`--port N`); `parse` turns the text into what the handler gets, or says what is wrong. */
export type StringFlag<Value> = {
  readonly type: 'string';
  /** The value's name in help: `N`, `FILE`. */
  readonly value: string;
  readonly description: string;
  /** The error is the whole message (it names the flag), printed as a usage error of the command. */
  readonly parse: (text: string) => Result<Value, string>;
};

export type Flag = BooleanFlag | StringFlag<unknown>;
export type Flags = Readonly<Record<string, Flag>>;

/** What a handler gets for its flags: those given on the command line, each parsed by its flag. */
export type FlagValues<F extends Flags> = {
  readonly [Name in keyof F]?: F[Name] extends StringFlag<infer Value> ? Value : boolean;
};

export const booleanFlag = (description: string, short?: string): BooleanFlag =>
  short === undefined ? { type: 'boolean', description } : { type: 'boolean', description, short };

export const parsedFlag = <Value>(
  value: string,
  description: string,
  parse: (text: string) => Result<Value, string>,
): StringFlag<Value> => ({ type: 'string', value, description, parse });

/** A flag whose value the handler takes as given. */
export const stringFlag = (value: string, description: string): StringFlag<string> =>
  parsedFlag(value, description, (text) => ({ ok: true, value: text }));

/** The flags every command takes, answered before any command runs. */
export const commonFlags = {
  help: booleanFlag("this text; after a command's name, that command's usage and flags", 'h'),
  version: booleanFlag('the package version', 'v'),
} as const;

export type CommandSpec<F extends Flags, Arguments> = {
  name: string;
  summary: string;
  /** Its usage lines, unindented; `--help` and its usage errors print them. */
  usage: readonly string[];
  /** Its own flags; a flag shared with other commands has the same type in each. */
  flags: F;
  /**
   * The client launchers (`claude`, `codex`): cursor-bridge's flags come before the name, and every word
   * after it is the client's, passed through untouched. Otherwise flags and words may mix after the name.
   */
  passThrough?: boolean;
  /** The words after the command's name → the handler's arguments, or what is wrong with them. */
  parseArguments: (words: readonly string[]) => Result<Arguments, string>;
  /** Help beyond the usage and flags (`templates`), loaded only when asked for. */
  details?: () => Promise<string>;
  /** Runs the command; resolves with the exit code. May throw `UsageError` (exit 2, with this usage). */
  run: (io: CliIo, input: { flags: FlagValues<F>; arguments: Arguments }) => Promise<number>;
};

/** A table entry: what the parser, the help and the usage errors see of a command. */
export type Command = {
  readonly name: string;
  readonly summary: string;
  readonly usage: readonly string[];
  readonly flags: Flags;
  readonly passThrough: boolean;
  readonly details?: () => Promise<string>;
  /**
   * The values of the flags the parser found (all of them ones this command accepts) and the words after
   * the name → the run, or what is wrong with them (a flag's value first, then the words).
   */
  readonly prepare: (
    values: Readonly<Record<string, string | boolean | undefined>>,
    words: readonly string[],
  ) => Result<(io: CliIo) => Promise<number>, string>;
};

/** The commands, in the order `--help` lists them, and the one that runs when argv names none. */
export type CommandTable = { readonly commands: readonly Command[]; readonly defaultCommand: Command };

const parseFlagValues = (
  flags: Flags,
  values: Readonly<Record<string, string | boolean | undefined>>,
): Result<Record<string, unknown>, string> => {
  const parsed: Record<string, unknown> = {};
  for (const [name, flag] of Object.entries(flags)) {
    const value = values[name];
    if (value === undefined) continue;
    if (flag.type === 'boolean') {
      parsed[name] = value;
      continue;
    }
    const result = flag.parse(String(value));
    if (!result.ok) return result;
    parsed[name] = result.value;
  }
  return { ok: true, value: parsed };
};

export const defineCommand = <F extends Flags, Arguments>(spec: CommandSpec<F, Arguments>): Command => ({
  name: spec.name,
  summary: spec.summary,
  usage: spec.usage,
  flags: spec.flags,
  passThrough: spec.passThrough === true,
  ...(spec.details === undefined ? {} : { details: spec.details }),
  prepare: (values, words) => {
    const flags = parseFlagValues(spec.flags, values);
    if (!flags.ok) return flags;
    const parsed = spec.parseArguments(words);
    if (!parsed.ok) return parsed;
    // parseFlagValues put exactly the given flags of spec.flags in, each parsed by its own flag.
    const input = { flags: flags.value as FlagValues<F>, arguments: parsed.value };
    return { ok: true, value: (io) => spec.run(io, input) };
  },
});
