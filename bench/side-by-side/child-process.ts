/**
 * What the side-by-side bench, its stream probe and the concurrent-load bench share about their forked
 * workers: a request/answer channel over IPC and the figures read from `/proc` (Linux only, like the
 * benches).
 */

import type { ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';

/**
 * Requests to a forked worker over IPC: each request carries an `id`, the worker answers once with the
 * same `id` (and `error` if it failed); it sends `{ id: 0 }` once ready, which `ready` waits for. A
 * worker that dies fails what waits on it instead of leaving the caller hanging.
 */
export const ipc = <Request extends { id: number }, Answer extends { id: number; error?: string }>(
  child: ChildProcess,
): {
  ready: Promise<void>;
  call: (request: Omit<Request, 'id'>) => Promise<Answer>;
} => {
  const pending = new Map<number, (reply: Answer) => void>();
  child.on('message', (reply: Answer) => {
    pending.get(reply.id)?.(reply);
    pending.delete(reply.id);
  });
  child.once('exit', (code, signal) => {
    for (const [id, answer] of pending) answer({ id, error: `worker exited (${code ?? signal})` } as Answer);
    pending.clear();
  });
  const ready = new Promise<void>((resolve, reject) =>
    pending.set(0, (reply) => (reply.error === undefined ? resolve() : reject(new Error(reply.error)))),
  );
  let nextId = 1;
  const call = (request: Omit<Request, 'id'>): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, (reply) =>
        reply.error === undefined ? resolve(reply) : reject(new Error(reply.error)),
      );
      child.send({ ...request, id });
    });
  return { ready, call };
};

/** The child's resident set (MB), from `/proc/<pid>/status`. */
export const rssMb = async (child: ChildProcess): Promise<number> => {
  const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) / 1024;
};

/**
 * The child's `/proc/<pid>/stat` fields after its command name: index 11 is utime, 12 stime, 13 cutime,
 * 14 cstime.
 */
const statFields = async (child: ChildProcess): Promise<string[]> => {
  const stat = await readFile(`/proc/${child.pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
};

/** Sum of the stat fields `from` to `to` (exclusive), clock ticks of 10 ms, in ms. */
const ticksMs = (fields: string[], from: number, to: number): number =>
  fields.slice(from, to).reduce((sum, field) => sum + Number(field), 0) * 10;

/** The child's utime + stime in ms, from `/proc/<pid>/stat` (clock ticks of 10 ms). */
export const cpuMs = async (child: ChildProcess): Promise<number> => ticksMs(await statFields(child), 11, 13);

/**
 * A child's CPU from its spawn in ms, from `/proc/<pid>/stat` (10 ms ticks): utime + stime of every thread
 * it ever ran (ended ones included) plus cutime + cstime, the CPU of the child processes it reaped.
 */
export const lifetimeCpuMs = async (child: ChildProcess): Promise<number> =>
  ticksMs(await statFields(child), 11, 15);

/**
 * CPU time of all of a child's threads in ms, from each thread's `/proc/<pid>/task/<tid>/schedstat` (ns
 * on CPU): for figures where the 10 ms ticks of {@link cpuMs} are as coarse as the differences looked for.
 */
export const threadCpuMs = async (child: ChildProcess): Promise<number> => {
  let ns = 0;
  for (const task of await readdir(`/proc/${child.pid}/task`)) {
    try {
      ns += Number((await readFile(`/proc/${child.pid}/task/${task}/schedstat`, 'utf8')).split(' ')[0]);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return ns / 1e6;
};

/**
 * Waits until `child` spends under 60 ms of CPU in each of two consecutive 500 ms windows (at most 20 s):
 * the SDK's heartbeats for parked runs stay below that, an executor's start (a pool warm-up) goes above it.
 */
export const untilQuiet = async (child: ChildProcess): Promise<void> => {
  let quietWindows = 0;
  let before = await threadCpuMs(child);
  for (let waited = 0; quietWindows < 2 && waited < 20_000; waited += 500) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const now = await threadCpuMs(child);
    quietWindows = now - before < 60 ? quietWindows + 1 : 0;
    before = now;
  }
};
