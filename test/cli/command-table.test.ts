/**
 * The command table (`src/cli/commands.ts`) is the one source of `--help`, `help COMMAND` and every usage
 * error: each entry shows up in them as the table states it, and each command's mistakes print that
 * command's usage through the one error path.
 */

import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Command } from '../../src/cli/command.js';
import { commandTable } from '../../src/cli/commands.js';
import { main } from '../../src/cli/main.js';
import { createCapturedIo } from '../helpers/cli/captured-io.js';

const { commands } = commandTable;
const trailer = '(cursor-bridge --help lists every command and the environment it reads)\n';

let home: string;
beforeAll(async () => {
  home = await realpath(await mkdtemp(join(tmpdir(), 'cursor-bridge-command-table-')));
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

const run = async (...argv: string[]) => {
  const captured = createCapturedIo({ homedir: home });
  const code = await main(argv, captured.io);
  return { code, stdout: captured.stdout(), stderr: captured.stderr() };
};

/** argv with `flags` given to `command`: before a client launcher's name, after any other's. */
const argvFor = (command: Command, flags: readonly string[], words: readonly string[] = []): string[] =>
  command.passThrough ? [...flags, command.name, ...words] : [command.name, ...words, ...flags];

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const usageOf = (command: Command): string =>
  `Usage:\n${command.usage.map((line) => `  ${line}\n`).join('')}${trailer}`;

/** `--name` with a value when the flag takes one. */
const flagArgs = (command: Command, name: string): string[] =>
  command.flags[name]?.type === 'string' ? [`--${name}`, 'x'] : [`--${name}`];

const allFlags = new Map(commands.flatMap((command) => Object.entries(command.flags)));
const byName = (name: string): Command => {
  const command = commands.find((candidate) => candidate.name === name);
  if (command === undefined) throw new Error(`no command ${name}`);
  return command;
};

describe('the command table', () => {
  it('--help lists every entry, its usage lines and its summary, and no command line the table lacks', async () => {
    const result = await run('--help');
    expect(result.code).toBe(0);
    for (const command of commands) {
      const lines = command.usage.map((line) => `  ${line}\n`).join('');
      expect(result.stdout, command.name).toContain(`${lines}      ${command.summary}\n`);
    }
    const tableLines = new Set(commands.flatMap((command) => command.usage));
    const listed = result.stdout
      .split('\n')
      .filter((line) => line.startsWith('  cursor-bridge '))
      .map((line) => line.slice(2));
    expect(listed.filter((line) => !tableLines.has(line))).toEqual(['cursor-bridge --help | --version']);
  });

  it('names in its usage lines exactly the flags each command takes', () => {
    for (const command of commands) {
      const named = new Set(command.usage.join(' ').match(/--[a-z-]+/g) ?? []);
      named.delete('--help');
      expect([...named].sort(), command.name).toEqual(
        Object.keys(command.flags)
          .map((name) => `--${name}`)
          .sort(),
      );
    }
  });

  it.each(commands.map((command) => [command.name, command] as const))(
    '`help %s` and its --help print its summary, usage and flags',
    async (_name, command) => {
      const help = await run('help', command.name);
      expect(help.code).toBe(0);
      expect(help.stderr).toBe('');
      expect(help.stdout).toMatch(
        new RegExp(`^cursor-bridge ${command.name}: ${escape(command.summary)}\n\nUsage:\n`),
      );
      for (const line of command.usage) expect(help.stdout).toContain(`\n  ${line}\n`);
      for (const [name, flag] of Object.entries(command.flags)) {
        const shown = `--${name}${flag.type === 'string' ? ` ${flag.value}` : ''}`;
        expect(help.stdout).toMatch(new RegExp(`\n  ${escape(shown)} +${escape(flag.description)}\n`));
      }
      expect(await run(...argvFor(command, ['--help']))).toEqual(help);
    },
  );

  it('`help` without a name and --help print the same text; `help` of an unknown command is its usage error', async () => {
    expect(await run('help')).toEqual(await run('--help'));
    expect(await run('help', 'frob')).toEqual({
      code: 2,
      stdout: '',
      stderr: `cursor-bridge: unknown command "frob"\n${usageOf(byName('help'))}`,
    });
  });
});

describe('the one usage-error path', () => {
  it.each(commands.map((command) => [command.name, command] as const))(
    'an unknown flag of %s prints that command’s usage, exit 2',
    async (_name, command) => {
      expect(await run(...argvFor(command, ['--bogus']))).toEqual({
        code: 2,
        stdout: '',
        stderr: `cursor-bridge ${command.name}: unknown option --bogus\n${usageOf(command)}`,
      });
    },
  );

  it.each(commands.map((command) => [command.name, command] as const))(
    'a flag only other commands take, given to %s, prints that command’s usage, exit 2',
    async (_name, command) => {
      const foreign = [...allFlags.keys()].find((name) => !(name in command.flags) && name !== 'config');
      if (foreign === undefined) throw new Error(`every flag applies to ${command.name}`);
      const owner = commands.find((candidate) => foreign in candidate.flags) ?? command;
      expect(await run(...argvFor(command, flagArgs(owner, foreign)))).toEqual({
        code: 2,
        stdout: '',
        stderr: `cursor-bridge: --${foreign} does not apply to "${command.name}"\n${usageOf(command)}`,
      });
    },
  );

  it.each(
    commands.flatMap((command) => Object.keys(command.flags).map((flag) => [command.name, flag] as const)),
  )('%s: a misspelt --%s is suggested from the command’s own flags', async (name, flag) => {
    const command = byName(name);
    const result = await run(...argvFor(command, [`--${flag.slice(0, -1)}`]));
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `cursor-bridge ${name}: unknown option --${flag.slice(0, -1)} (did you mean --${flag}?)\n${usageOf(command)}`,
    );
  });

  it.each(
    commands.filter((command) => 'port' in command.flags).map((command) => [command.name, command] as const),
  )('a bad --port value given to %s prints that command’s usage, exit 2', async (_name, command) => {
    expect(await run(...argvFor(command, ['--port', '70000']))).toEqual({
      code: 2,
      stdout: '',
      stderr: `cursor-bridge: --port must be an integer from 0 to 65535, got "70000"\n${usageOf(command)}`,
    });
  });

  const wrongWords: ReadonlyArray<readonly [readonly string[], string]> = [
    [['serve', 'extra'], '`serve` takes no arguments'],
    [['mcp-host', 'extra'], '`mcp-host` takes no arguments'],
    [['model'], 'missing model subcommand'],
    [['model', 'list'], 'unknown model subcommand "list"'],
    [['model', 'get'], '`model get` takes one PROVIDER'],
    [['model', 'get', 'cursor', 'extra'], '`model get` takes one PROVIDER'],
    [['ccr'], 'missing ccr subcommand'],
    [['ccr', 'uninstall'], 'unknown ccr subcommand "uninstall"'],
    [['ccr', 'install', 'extra'], '`ccr install` takes no arguments'],
    // `templates` checks its own words: a UsageError from its handler takes the same path.
    [['templates'], 'missing templates subcommand'],
    [['templates', 'list', 'extra'], '`templates list` takes no arguments'],
    [['console', 'extra'], '`console` takes no arguments'],
    [['example', 'one', 'two'], '`example` takes at most one NAME'],
    [['help', 'serve', 'extra'], '`help` takes at most one COMMAND'],
  ];

  it.each(wrongWords)('%j: %s, and that command’s usage, exit 2', async (argv, message) => {
    expect(await run(...argv)).toEqual({
      code: 2,
      stdout: '',
      stderr: `cursor-bridge: ${message}\n${usageOf(byName(argv[0] ?? ''))}`,
    });
  });

  it('covers the words of every command that checks them (the client launchers pass theirs through)', () => {
    const covered = new Set(wrongWords.map(([argv]) => argv[0]));
    expect(commands.filter((command) => !command.passThrough && !covered.has(command.name))).toEqual([]);
  });

  it('an unknown command prints every command’s usage (the --help text), exit 2', async () => {
    const { stdout: everyUsage } = await run('--help');
    expect(await run('frobnicate', 'now')).toEqual({
      code: 2,
      stdout: '',
      stderr: `cursor-bridge: unknown command "frobnicate now"\n\n${everyUsage}`,
    });
  });
});
