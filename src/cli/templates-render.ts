import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { extractHostFacts, type HostFacts } from '../workspace/host-facts.js';
import { PromptGrounding } from '../workspace/prompt-grounding.js';
import {
  buildHookCommand,
  hookScriptPath,
  renderWorkspaceFiles,
} from '../workspace/render-workspace-files.js';
import { buildTemplateContext } from '../workspace/template-context.js';
import { groundingTemplates, TemplateStore, type TemplateName } from '../workspace/template-store.js';
import { exitCodes, type CliIo } from './cli-io.js';
import { envBlockFormats } from '../workspace/env-block-formats.js';
import { describeFacts, formatSection as section } from './templates-format.js';
import { formatTemplateProblem } from './templates-list.js';
import { findTemplateName, type TemplateDirs } from './templates-setup.js';
import { errorMessage } from '../../lib/error-message.js';

const blockShapes = Object.values(envBlockFormats)
  .map(({ label }) => label)
  .join(', ');

/**
 * `cursor-bridge templates render [--env FILE]`: finds the newest environment block in FILE (the
 * shapes `extractHostFacts` knows) and prints, for the config's `cursorMode`, every file a scratch
 * workspace would get for those facts, the hook's denial text (bridge mode), and the prompt head and
 * tail. No file or no block: renders for "no environment reported" and says so, since then the
 * templates' no-root wording applies. Exit 1 when a template has a problem (named on stderr; the default
 * is rendered in its place, as the bridge does).
 */
export const runTemplatesRender = async (
  io: CliIo,
  dirs: TemplateDirs,
  envFile: string | undefined,
): Promise<number> => {
  let facts: HostFacts | undefined;
  if (envFile === undefined) {
    io.stdout(`No --env FILE: rendering for a client that reported no environment.\n`);
  } else {
    const path = resolve(io.cwd, envFile);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      io.stderr(`cursor-bridge: cannot read ${path}: ${errorMessage(error)}\n`);
      return exitCodes.failure;
    }
    facts = extractHostFacts([text]);
    io.stdout(
      facts === undefined
        ? `No environment block found in ${path} (looked for ${blockShapes}; \`cursor-bridge templates --help\` shows an example of each).\n`
        : `Environment block in ${path} (${envBlockFormats[facts.source].label}):\n${describeFacts(facts)}`,
    );
  }
  if (facts?.root === undefined) {
    io.stdout(
      'No project root is known, so the no-root wording applies (hasRoot is false): the model is not told where the project is.\n',
    );
  }

  const { mode, cwd } = dirs.config.cursor;
  const used = groundingTemplates[mode];
  const store = await TemplateStore.load({
    defaultDir: dirs.defaultDir,
    overrideDir: dirs.overrideDir,
    mode,
  });
  for (const problem of store.problems)
    io.stderr(`cursor-bridge: PROBLEM: ${formatTemplateProblem(problem)}\n`);
  const workspaceDir = join(dirs.config.workspacesDir, '<session-key>');
  const options = { workspaceDir, nodePath: process.execPath, platform: process.platform };
  io.stdout(`Mode: ${mode} (cursorMode): prompt from ${used.head} and ${used.tail}\n`);
  io.stdout(`Scratch workspace (example): ${workspaceDir}\n`);

  const title = (name: TemplateName, what: string = name): string => `${what} (${store.source(name).origin})`;
  for (const file of renderWorkspaceFiles(store, facts, options)) {
    const name = findTemplateName(file.path);
    io.stdout(
      section(name === undefined ? `${file.path} (fixed, not a template)` : title(name), file.content),
    );
  }
  if (used.denyMessage !== undefined) {
    const hookCommand = buildHookCommand(
      options.nodePath,
      join(workspaceDir, ...hookScriptPath.split('/')),
      options.platform,
    );
    const denyContext = buildTemplateContext(facts, { scratchDir: workspaceDir, hookCommand });
    io.stdout(
      section(
        title(used.denyMessage, `${used.denyMessage}, baked into the hook script`),
        store.render(used.denyMessage, denyContext),
      ),
    );
  }
  const grounding = new PromptGrounding(store, cwd === undefined ? {} : { agentCwd: cwd });
  const context = { scratchDir: workspaceDir };
  const what = (part: string, name: TemplateName): string =>
    mode === 'bridge' ? part : `${part} from ${name}`;
  io.stdout(
    section(title(used.head, what('prompt head', used.head)), grounding.renderPromptHead(facts, context)),
  );
  io.stdout(
    section(title(used.tail, what('prompt tail', used.tail)), grounding.renderPromptTail(facts, context)),
  );
  return store.problems.length === 0 ? exitCodes.ok : exitCodes.failure;
};
