import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { resolveDefaultTemplateDir } from '../../src/workspace/workspace-paths.js';
import { sleep } from '../../lib/sleep.js';

/** A pino logger whose JSON lines are collected in `records`. */
export const createCapturingLogger = (): { logger: Logger; records: Array<Record<string, unknown>> } => {
  const records: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() !== '') records.push(JSON.parse(line) as Record<string, unknown>);
      }
      callback();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), records };
};

/**
 * Wait until `condition` holds (polling), or fail after `timeoutMs`: a generous safety net against a
 * hang, never a speed claim (file watchers and child processes are slow on a loaded machine).
 */
export const waitFor = async (
  condition: () => Promise<boolean> | boolean,
  timeoutMs = 30_000,
): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(25);
  }
};

/** Temp directories for one test file; `cleanup()` removes them all. */
export const createTempDirs = () => {
  const created: string[] = [];
  return {
    make: async (prefix = 'cb-ws-'): Promise<string> => {
      const dir = await mkdtemp(join(tmpdir(), prefix));
      created.push(dir);
      return dir;
    },
    /** A writable copy of the shipped workspace-templates/. */
    copyDefaults: async (): Promise<string> => {
      const dir = await mkdtemp(join(tmpdir(), 'cb-tpl-'));
      created.push(dir);
      await cp(resolveDefaultTemplateDir(), dir, { recursive: true });
      return dir;
    },
    cleanup: async (): Promise<void> => {
      await Promise.all(created.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
    },
  };
};
