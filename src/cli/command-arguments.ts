/**
 * The shapes of the words after a command's name, as the command table declares them. Each returns the
 * handler's arguments or what is wrong, in the words the usage error prints.
 */

import type { Result } from '../../lib/result.js';

type ParseArguments<Arguments> = (words: readonly string[]) => Result<Arguments, string>;

const accept = <Value>(value: Value): Result<Value, string> => ({ ok: true, value });
const refuse = (error: string): Result<never, string> => ({ ok: false, error });

/** No words (`serve`). */
export const noArguments =
  (command: string): ParseArguments<undefined> =>
  (words) =>
    words.length === 0 ? accept(undefined) : refuse(`\`${command}\` takes no arguments`);

/** One word, or none (`example [NAME]`). */
export const optionalArgument =
  (command: string, noun: string): ParseArguments<string | undefined> =>
  (words) =>
    words.length <= 1 ? accept(words[0]) : refuse(`\`${command}\` takes at most one ${noun}`);

/** Exactly one word (`model get PROVIDER`). */
export const oneArgument =
  (command: string, noun: string): ParseArguments<string> =>
  (words) => {
    const [word] = words;
    return word !== undefined && words.length === 1
      ? accept(word)
      : refuse(`\`${command}\` takes one ${noun}`);
  };

/** Every word, untouched (a client's arguments; `templates`, which checks its own). */
export const everyWord: ParseArguments<readonly string[]> = (words) => accept(words);

/** The one subcommand `command` has (`ccr install`), then the words after it in `rest`'s shape. */
export const subcommand =
  <Arguments>(command: string, name: string, rest: ParseArguments<Arguments>): ParseArguments<Arguments> =>
  (words) => {
    const [first, ...others] = words;
    if (first === undefined) return refuse(`missing ${command} subcommand`);
    if (first !== name) return refuse(`unknown ${command} subcommand "${first}"`);
    return rest(others);
  };
