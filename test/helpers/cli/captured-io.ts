import type { CliIo } from '../../../src/cli/cli-io.js';

/** A {@link CliIo} that records what a command writes, for in-process `main(argv, io)` tests. */
export type CapturedIo = { io: CliIo; stdout: () => string; stderr: () => string };

export const createCapturedIo = (options: {
  homedir: string;
  cwd?: string;
  env?: Record<string, string>;
}): CapturedIo => {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: {
      stdout: (text) => out.push(text),
      stderr: (text) => err.push(text),
      env: options.env ?? {},
      cwd: options.cwd ?? options.homedir,
      homedir: options.homedir,
    },
    stdout: () => out.join(''),
    stderr: () => err.join(''),
  };
};
