/**
 * Loaded with `--import` into BOTH processes of `side-by-side.bench.ts` (the bridge and the bare-SDK
 * worker), so their memory is read the same way. Plain JavaScript: the bridge runs without a
 * TypeScript loader, and this must not add one to it.
 *
 * - counts garbage collections by kind (a `PerformanceObserver` on `gc` entries, the same events
 *   `--trace-gc` prints) and their total pause time;
 * - on `SIGUSR2`, writes `<BENCH_PROBE_DIR>/<pid>.json`: `process.memoryUsage()`,
 *   `v8.getHeapStatistics()`, the heap spaces, and the GC counts so far (written to a temporary name,
 *   then renamed, so the driver never reads half a file). `BENCH_HEAP_SNAPSHOT=<n>[,<n>…]` also writes
 *   a heap snapshot at those reports (1: before the soak, 2: at its end, 3: after the idle period) as
 *   `<pid>-<n>.heapsnapshot`; a snapshot forces a full GC, so this is for investigations only.
 * - with `BENCH_HEAP_PROFILE=1`, runs V8's sampling heap profiler from load on, keeping samples of
 *   objects later freed by a major GC but not those freed by a scavenge: the allocation sites of what
 *   reaches the old space, live or garbage. Each report also writes the profile since the previous
 *   report to `<pid>-<n>.heapprofile` (DevTools reads it) and starts the next one. For investigations.
 *
 * Nothing here runs a collection or changes a V8 setting; it only reads.
 */

import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Session } from 'node:inspector/promises';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import process from 'node:process';
import v8 from 'node:v8';

const dir = process.env.BENCH_PROBE_DIR;
const kinds = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};
const gc = { minor: 0, major: 0, incremental: 0, weakcb: 0, pauseMs: 0 };
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const kind = kinds[entry.detail?.kind ?? -1];
    if (kind !== undefined) gc[kind] += 1;
    gc.pauseMs += entry.duration;
  }
}).observe({ entryTypes: ['gc'] });

const profiler = process.env.BENCH_HEAP_PROFILE === '1' ? new Session() : undefined;
const startProfile = () =>
  profiler?.post('HeapProfiler.startSampling', {
    samplingInterval: 16_384,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: false,
  });
if (profiler !== undefined) {
  profiler.connect();
  await profiler.post('HeapProfiler.enable');
  await startProfile();
}
let reports = 0;

const snapshotAt = new Set((process.env.BENCH_HEAP_SNAPSHOT ?? '').split(',').map(Number));
if (dir !== undefined) {
  process.on('SIGUSR2', async () => {
    reports += 1;
    if (profiler !== undefined) {
      const { profile } = await profiler.post('HeapProfiler.stopSampling');
      writeFileSync(join(dir, `${process.pid}-${reports}.heapprofile`), JSON.stringify(profile));
      await startProfile();
    }
    const file = join(dir, `${process.pid}.json`);
    const report = {
      memoryUsage: process.memoryUsage(),
      heap: v8.getHeapStatistics(),
      spaces: Object.fromEntries(
        v8
          .getHeapSpaceStatistics()
          .map((space) => [space.space_name, { size: space.space_size, used: space.space_used_size }]),
      ),
      gc: { ...gc },
    };
    if (snapshotAt.has(reports)) {
      report.snapshot = v8.writeHeapSnapshot(join(dir, `${process.pid}-${reports}.heapsnapshot`));
    }
    writeFileSync(`${file}.tmp`, JSON.stringify(report));
    renameSync(`${file}.tmp`, file);
  });
}
