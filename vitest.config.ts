import { defineConfig } from 'vitest/config';
import { HeavyFirstSequencer } from './test/helpers/heavy-first-sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // Most of the suite's time is spent waiting on real processes (clients, routers, bridges, the SDK's
    // streams), not on the CPU: on 2 cores, four files at a time keep both busy. No test may depend on how
    // fast it runs (test/README.md), so the worker count changes only the wall time.
    maxWorkers: 4,
    sequence: { sequencer: HeavyFirstSequencer },
    // Safety nets, not speed claims: the suite must pass on a loaded machine (test/README.md).
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
