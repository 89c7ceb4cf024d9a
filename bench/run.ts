/**
 * `npm run bench`: runs every `bench/*.bench.ts` in its own Node process (the Cursor SDK binds its backend
 * URL once per process) and prints their reports. Benchmarks measure; they never fail on a number.
 */

import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((name) => name.endsWith('.bench.ts'))
  .filter((name) => only.length === 0 || only.some((filter) => name.includes(filter)))
  .sort();

let failed = 0;
for (const file of files) {
  console.log(`\n=== ${file}`);
  const result = spawnSync(process.execPath, ['--import', 'tsx', join(dir, file)], { stdio: 'inherit' });
  if (result.status !== 0) {
    failed += 1;
    console.log(`${file} exited with ${result.status ?? result.signal}`);
  }
}
process.exitCode = failed === 0 ? 0 : 1;
