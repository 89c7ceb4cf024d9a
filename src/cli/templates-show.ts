import { readFile } from 'node:fs/promises';
import { TemplateStore, type TemplateName } from '../workspace/template-store.js';
import { exitCodes, type CliIo } from './cli-io.js';
import { formatTemplateProblem } from './templates-list.js';
import type { TemplateDirs } from './templates-setup.js';

/**
 * `cursor-bridge templates show NAME`: the source of the template in effect, verbatim on stdout (so it
 * can be redirected into an override file); where it comes from and any problem go to stderr. Exit 1
 * when the template has a problem (its override is broken, so the version printed is not that file).
 */
export const runTemplatesShow = async (
  io: CliIo,
  dirs: TemplateDirs,
  name: TemplateName,
): Promise<number> => {
  const store = await TemplateStore.load({ defaultDir: dirs.defaultDir, overrideDir: dirs.overrideDir });
  const source = store.source(name);
  const problems = store.problems.filter((entry) => entry.name === name);
  for (const problem of problems) {
    io.stderr(`cursor-bridge: PROBLEM: ${formatTemplateProblem(problem)}\n`);
  }
  io.stderr(`cursor-bridge: ${name} in effect: ${source.origin} ${source.path}\n`);
  io.stdout(await readFile(source.path, 'utf8'));
  return problems.length === 0 ? exitCodes.ok : exitCodes.failure;
};
