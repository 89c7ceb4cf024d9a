/**
 * A client run in a terminal, as a person runs it: util-linux `script` gives the command a pseudo-terminal
 * of a fixed size (set with `stty` inside it, since `script`'s own stdin is a pipe), keystrokes are written
 * to it, and what the program draws is read back with the terminal's escape sequences removed. The run
 * gets the client sandbox's environment, cwd and network isolation (`network-isolation.ts`), and is killed
 * as a process group when it outlives its timeout or the test closes it.
 */

import { spawn } from 'node:child_process';
import type { ClientEndpoint } from './network-isolation.js';
import type { ClientSandbox } from './run-client.js';
import { sleep } from '../../../lib/sleep.js';

/** util-linux `script`: in every Debian (package bsdutils, essential). */
const scriptBinary = '/usr/bin/script';

export type PtySession = {
  /** Everything drawn so far, escape sequences removed and runs of blanks collapsed to one space. */
  screen(): string;
  /** The bytes drawn so far, as the terminal received them (for a failure report). */
  raw(): string;
  /** Types `text` (one write, as a fast typist or a paste). */
  type(text: string): void;
  /** Presses Enter. */
  enter(): void;
  /**
   * Resolves once {@link screen} matches `pattern` after `from` (a length of {@link screen} read earlier);
   * rejects, quoting the screen's tail, after `timeoutMs` or when the program exited.
   */
  waitFor(pattern: RegExp, options?: { from?: number; timeoutMs?: number }): Promise<RegExpMatchArray>;
  /**
   * Resolves once the program has drawn nothing for `quietMs` (it finished redrawing and waits for input);
   * rejects after `timeoutMs`.
   */
  waitForQuiet(quietMs: number, timeoutMs?: number): Promise<void>;
  /** Resolves with the exit status once the program ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Kills the session's process group (if still running) and waits for its end. */
  close(): Promise<void>;
};

export type StartPtySessionOptions = {
  command: string;
  args: readonly string[];
  sandbox: ClientSandbox;
  endpoint: ClientEndpoint;
  /** The whole environment of the program (HOME, PATH, TERM… included). */
  env: Record<string, string>;
  columns?: number;
  rows?: number;
  /** The session is killed after this long. */
  timeoutMs: number;
};

const quote = (word: string): string => `'${word.replaceAll("'", "'\\''")}'`;

/* eslint-disable no-control-regex -- terminal output is made of control characters */
/** CSI and OSC sequences, and the other single escapes a full-screen program draws with. */
const escapes =
  /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[()][0-9A-B]|\u001b[=>78DEHMc]/g;

export const plainScreen = (raw: string): string =>
  raw
    .replace(escapes, ' ')
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, ' ')
    .replace(/[ \t]+/g, ' ');
/* eslint-enable no-control-regex */

export const startPtySession = (options: StartPtySessionOptions): PtySession => {
  const columns = options.columns ?? 140;
  const rows = options.rows ?? 50;
  const inner = `stty cols ${columns} rows ${rows} && exec ${[options.command, ...options.args].map(quote).join(' ')}`;
  const wrapped = options.endpoint.wrap(scriptBinary, [
    '--quiet',
    '--flush',
    '--return',
    '--command',
    inner,
    '/dev/null',
  ]);
  const child = spawn(wrapped.command, wrapped.args, {
    cwd: options.sandbox.project,
    env: options.env,
    stdio: ['pipe', 'pipe', 'pipe'],
    // Its own process group: a timeout or close kills the client and everything it started.
    detached: true,
  });
  let raw = '';
  let screen = '';
  const listeners = new Set<() => void>();
  const onOutput = (chunk: Buffer): void => {
    raw += chunk.toString('utf8');
    screen = plainScreen(raw);
    for (const listener of listeners) listener();
  };
  child.stdout.on('data', onOutput);
  child.stderr.on('data', onOutput);
  child.stdin.on('error', () => {});
  const killGroup = (): void => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  let ended = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => {
      ended = true;
      clearTimeout(timer);
      killGroup();
      for (const listener of listeners) listener();
      resolve({ code, signal });
    }),
  );
  const timer = setTimeout(killGroup, options.timeoutMs);

  const waitFor: PtySession['waitFor'] = (pattern, { from = 0, timeoutMs = 60_000 } = {}) =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const match = pattern.exec(screen.slice(from));
        if (match !== null) return done(() => resolve(match));
        if (ended)
          done(() =>
            reject(
              new Error(
                `the program exited before the screen showed ${String(pattern)}:\n${screen.slice(-3_000)}`,
              ),
            ),
          );
      };
      const deadline = setTimeout(
        () =>
          done(() =>
            reject(
              new Error(
                `the screen did not show ${String(pattern)} within ${timeoutMs} ms:\n${screen.slice(-3_000)}`,
              ),
            ),
          ),
        timeoutMs,
      );
      function done(settle: () => void): void {
        clearTimeout(deadline);
        listeners.delete(check);
        settle();
      }
      listeners.add(check);
      check();
    });

  let lastOutputAt = Date.now();
  listeners.add(() => (lastOutputAt = Date.now()));
  const waitForQuiet: PtySession['waitForQuiet'] = async (quietMs, timeoutMs = 60_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const quietFor = Date.now() - lastOutputAt;
      if (quietFor >= quietMs) return;
      if (Date.now() > deadline) throw new Error(`the program kept drawing for ${timeoutMs} ms`);
      await sleep(quietMs - quietFor);
    }
  };

  return {
    screen: () => screen,
    waitForQuiet,
    raw: () => raw,
    type: (text) => void child.stdin.write(text),
    enter: () => void child.stdin.write('\r'),
    waitFor,
    exited,
    close: async () => {
      if (!ended) killGroup();
      await exited;
    },
  };
};
