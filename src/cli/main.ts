/**
 * `cursor-bridge` command line: argv → config → run. The only place (with the other `cli/` modules)
 * that reads `process.env` or decides exit codes: 0 ok, 1 runtime failure, 2 bad usage or config.
 * The commands are the table in `commands.ts`; this finds the command, parses its flags and runs it.
 */

import { homedir } from 'node:os';
import { ConfigError } from '../config/config-error.js';
import { exitCodes, type CliIo } from './cli-io.js';
import { commandTable } from './commands.js';
import { packageVersion } from './package-info.js';
import { parseCommandLine } from './parse-command-line.js';
import { UsageError } from './usage-error.js';
import { reportUsageError, showHelp } from './usage.js';
import { errorMessage } from '../../lib/error-message.js';

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

/** Runs the command argv names and resolves with the exit code; never throws what a command throws. */
export const main = async (argv: readonly string[], io: CliIo = defaultIo()): Promise<number> => {
  const line = parseCommandLine(commandTable, argv);
  const { commands } = commandTable;
  switch (line.kind) {
    case 'usage-error':
      return reportUsageError(io, commands, line.problem);
    case 'help':
      return showHelp(io, commands, line.command);
    case 'version':
      io.stdout(`${await packageVersion()}\n`);
      return exitCodes.ok;
    case 'run':
      try {
        return await line.run(io);
      } catch (error) {
        if (error instanceof UsageError)
          return reportUsageError(io, commands, { message: error.message, command: line.command });
        if (error instanceof ConfigError) {
          io.stderr(`cursor-bridge: ${error.message}\n`);
          return exitCodes.usage;
        }
        io.stderr(`cursor-bridge: ${errorMessage(error)}\n`);
        return exitCodes.failure;
      }
    default: {
      const _exhaustive: never = line;
      return _exhaustive;
    }
  }
};
