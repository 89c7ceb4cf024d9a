/**
 * The suite runs its files on several workers; the run ends when the last worker does, so the long files
 * must start first. Vitest orders by the durations it cached on an earlier run of this checkout, which a
 * clean clone (CI) does not have, and falls back to file size, which puts short unit files with many
 * cases ahead of the files that wait on real processes and the SDK's own timers. This sequencer orders by
 * tier first, and within a tier keeps Vitest's own order (cached durations, else size).
 */

import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Tiers in start order; a file in none of them runs last. */
const tiers: ReadonlyArray<(path: string) => boolean> = [
  // Real clients, routers, HAProxy, and `serve` in child processes: tens of seconds a file.
  (path) => path.includes('/test/e2e/') || path.includes('/test/reliability/'),
  // The real `@cursor/sdk` against the fake backend: its retry back-offs and its 30 s stall detector run on
  // real time (nothing in the SDK lets a test shorten them).
  (path) => path.includes('/test/wire/') || path.endsWith('-sdk.test.ts'),
];

const tierOf = (specification: TestSpecification): number => {
  const tier = tiers.findIndex((matches) => matches(specification.moduleId));
  return tier === -1 ? tiers.length : tier;
};

export class HeavyFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const ordered = await super.sort(files);
    const position = new Map(ordered.map((specification, index) => [specification, index]));
    return ordered.sort((a, b) => tierOf(a) - tierOf(b) || (position.get(a) ?? 0) - (position.get(b) ?? 0));
  }
}
