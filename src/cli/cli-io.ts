/** Where CLI commands write, injectable for tests. */
export type CliIo = {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  homedir: string;
};

export const exitCodes = { ok: 0, failure: 1, usage: 2 } as const;
