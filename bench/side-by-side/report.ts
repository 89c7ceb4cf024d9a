/** What the benches print: medians, a table of aligned columns, and the load the run saw. */

import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';

/** The median of `values` (NaN when there are none). */
export const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? sorted[middle]!
    : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2;
};

/** Prints `header` and `rows` as columns: the first left-aligned, the others right-aligned. */
export const printTable = (header: readonly string[], rows: readonly (readonly string[])[]): void => {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length)),
  );
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)))
      .join('  ');
  console.log(line(header));
  console.log(widths.map((width) => '-'.repeat(width)).join('  '));
  for (const row of rows) console.log(line(row));
};

/** Call at a run's start; the returned function prints the load average then and now, and the run's time. */
export const startRunClock = (): (() => void) => {
  const startedAt = performance.now();
  const loadBefore = loadavg();
  const format = (load: number[]): string => load.map((value) => value.toFixed(2)).join(' ');
  return () =>
    console.log(
      `\nload average ${format(loadBefore)} → ${format(loadavg())}; ${((performance.now() - startedAt) / 1000).toFixed(0)} s`,
    );
};
