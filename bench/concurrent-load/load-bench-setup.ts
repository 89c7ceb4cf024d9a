/**
 * What the load benches share (`concurrent-load.bench.ts`, `console-cpu.bench.ts`): their settings from the
 * environment, one fake Cursor backend playing the round-trips scenario in the bench's process, the built
 * bridge, a temporary root with the side-by-side bench's config file, and the error of a side that cannot run.
 */

import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  startFakeCursorBackend,
  type FakeCursorBackend,
} from '../../test/fakes/cursor-backend/fake-cursor-backend.js';
import { ensureBuilt } from '../../test/helpers/ensure-built.js';
import { bridgeSettingsFromEnv, writeBenchConfig, type BenchServe } from '../side-by-side/bench-serve.js';
import type { LoadReport } from './load-client-worker.js';
import { roundTripsScenario } from './round-trips-scenario.js';

const positiveFromEnv = (name: string, fallback: number): number => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) {
    throw new Error(`${name} must be a positive integer, not ${process.env[name]}`);
  }
  return value;
};

/** `BENCH_CONVERSATIONS` (30), `BENCH_TRIPS` (10), `BENCH_RUNS` (3), `BENCH_REQUEST_TIMEOUT_MS` (120000). */
export const loadSettingsFromEnv = () => ({
  conversations: positiveFromEnv('BENCH_CONVERSATIONS', 30),
  trips: positiveFromEnv('BENCH_TRIPS', 10),
  runs: positiveFromEnv('BENCH_RUNS', 3),
  requestTimeoutMs: positiveFromEnv('BENCH_REQUEST_TIMEOUT_MS', 120_000),
});

export type LoadBench = {
  backend: FakeCursorBackend;
  /** The temporary directory every side's HOME goes in. */
  root: string;
  configPath: string;
  /** The `CURSOR_BRIDGE_*` settings of this environment, passed to every side. */
  bridgeSettings: Record<string, string>;
  /** The environment every `serve` starts with. */
  baseEnv: Record<string, string>;
  close: () => Promise<void>;
};

/** The backend, the build and the config file; `name` names the temporary root (`cb-bench-<name>-`). */
export const startLoadBench = async (name: string): Promise<LoadBench> => {
  const backend = await startFakeCursorBackend({ scenario: roundTripsScenario });
  await ensureBuilt();
  const root = await realpath(await mkdtemp(join(tmpdir(), `cb-bench-${name}-`)));
  const configPath = join(root, 'config.json');
  await writeBenchConfig(configPath);
  return {
    backend,
    root,
    configPath,
    bridgeSettings: bridgeSettingsFromEnv(),
    baseEnv: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      CURSOR_API_KEY: 'crsr_bench',
      CURSOR_BACKEND_URL: backend.url,
      LOG_LEVEL: 'warn',
    },
    close: async () => {
      await backend.close();
      await rm(root, { recursive: true, force: true });
    },
  };
};

/** The error of a side that cannot run, with what its client saw and what its `serve` printed last. */
export const cannotRun = (side: string, what: string, serve: BenchServe, report?: LoadReport): Error =>
  new Error(
    [
      `${side} cannot run: ${what}`,
      ...(report?.failureSamples.map((sample) => `  ${sample}`) ?? []),
      `serve's stderr (its end):`,
      serve.stderrTail() || '(nothing)',
    ].join('\n'),
  );
