import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';
import { HeavyFirstSequencer } from './test/helpers/heavy-first-sequencer.js';

// Node's module compile cache (V8 code cache on disk, keyed by content) for the test workers and every
// process they spawn: each file runs in a fresh process that compiles the same large modules (the SDK's
// bundle among them) again, and CPU, not waiting, bounds the unit tier on 2 cores.
process.env['NODE_COMPILE_CACHE'] ??= join(tmpdir(), 'cursor-bridge-test-compile-cache');

/**
 * Files that share their workers (`isolate: false`): in-process logic over scripted upstreams and fakes,
 * none of which loads `@cursor/sdk` (it reads `CURSOR_BACKEND_URL` once, at import) or leaves process-wide
 * state behind (test/README.md). A fresh process per file costs more CPU than most of these files' tests.
 */
const sharedWorkerFiles = [
  'protocols',
  'config',
  'engine',
  'mcp',
  'lib',
  'hosts',
  'workspace',
  'bridge',
  'metrics',
  'examples',
].map((folder) => `test/${folder}/**/*.test.ts`);

export default defineConfig({
  test: {
    pool: 'forks',
    // Most of the suite's time is spent waiting on real processes (clients, routers, bridges, the SDK's
    // streams), not on the CPU: on 2 cores, four files at a time keep both busy. No test may depend on how
    // fast it runs (test/README.md), so the worker count changes only the wall time.
    maxWorkers: 4,
    sequence: { sequencer: HeavyFirstSequencer },
    // Safety nets, not speed claims: the suite must pass on a loaded machine (test/README.md).
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // `npm run test:unit` runs the two `unit*` projects; `npm test` those and `system`; `npm run test:ops`
    // the operations tier: a fleet restarted and killed under live conversations, the image built and run.
    projects: [
      {
        extends: true,
        test: { name: 'system', include: ['test/e2e/**/*.test.ts', 'test/reliability/**/*.test.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: [
            ...configDefaults.exclude,
            'test/e2e/**',
            'test/reliability/**',
            'test/ops/**',
            ...sharedWorkerFiles,
          ],
        },
      },
      { extends: true, test: { name: 'unit-shared', include: sharedWorkerFiles, isolate: false } },
      // Each file here runs a fleet or a Docker build that wants the machine to itself: one at a time.
      { extends: true, test: { name: 'ops', include: ['test/ops/**/*.test.ts'], fileParallelism: false } },
    ],
  },
});
