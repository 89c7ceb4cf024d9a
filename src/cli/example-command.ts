import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { exitCodes, type CliIo } from './cli-io.js';
import { findPackageRoot } from './package-info.js';

/** The examples the package ships: `examples/<name>.mjs`, plain JavaScript any supported Node runs. */
const listExamples = async (dir: string): Promise<string[]> =>
  (await readdir(dir))
    .filter((file) => file.endsWith('.mjs'))
    .map((file) => file.slice(0, -'.mjs'.length))
    .sort();

/**
 * `cursor-bridge example [NAME]`: without a name, lists the shipped examples on stdout; with one, runs
 * `examples/NAME.mjs` in this process (on the Node the CLI already checked), which then runs until it stops
 * itself (the example tool host: on SIGINT / SIGTERM). An unknown name is bad usage (2).
 */
export const runExample = async (io: CliIo, name: string | undefined): Promise<number> => {
  const dir = join(await findPackageRoot(), 'examples');
  const names = await listExamples(dir);
  if (name === undefined) {
    io.stdout(`${names.map((example) => `${example}   ${join(dir, `${example}.mjs`)}`).join('\n')}\n`);
    return exitCodes.ok;
  }
  if (!names.includes(name)) {
    io.stderr(`cursor-bridge: no example "${name}"; the examples are: ${names.join(', ')}\n`);
    return exitCodes.usage;
  }
  await import(pathToFileURL(join(dir, `${name}.mjs`)).href);
  return exitCodes.ok;
};
