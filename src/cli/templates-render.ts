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
import { formatTemplateProblem } from './templates-list.js';
import { findTemplateName, type TemplateDirs } from './templates-setup.js';

const blockShapes =
  'Claude Code "# Environment" (Primary working directory: …), OpenCode <env>…</env>, Codex <environment_context>…</environment_context>';

const sourceLabels: Record<HostFacts['source'], string> = {
  'claude-code': 'Claude Code "# Environment"',
  opencode: 'OpenCode <env>',
  codex: 'Codex <environment_context>',
  'env-block': 'generic <env>',
};

const describeFacts = (facts: HostFacts): string => {
  const normalised = [
    ['root', facts.root],
    ['platform', facts.platform],
    ['shell', facts.shell],
    ['OS version', facts.osVersion],
    ['git repo', facts.isGitRepo === undefined ? undefined : facts.isGitRepo ? 'yes' : 'no'],
  ]
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .map(([key, value]) => `  ${key}: ${value}\n`)
    .join('');
  const reported = facts.facts.map(({ key, value }) => `    ${key}: ${value}\n`).join('');
  return `${normalised}  as reported:\n${reported}`;
};

const section = (title: string, content: string): string =>
  `\n==> ${title} <==\n${content.endsWith('\n') ? content : `${content}\n`}`;

/**
 * `cursor-bridge templates render [--env FILE]`: finds the newest environment block in FILE (the
 * shapes `extractHostFacts` knows) and prints, for the config's `cursorMode`, every file a scratch
 * workspace would get for those facts, the hook's denial text (bridge mode), and the prompt head and
 * tail. No file or no block: renders for "no environment reported" and says so, since then the
 * templates' no-root wording applies.
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
      io.stderr(
        `cursor-bridge: cannot read ${path}: ${error instanceof Error ? error.message : String(error)}\n`,
      );
      return exitCodes.failure;
    }
    facts = extractHostFacts([text]);
    io.stdout(
      facts === undefined
        ? `No environment block found in ${path} (looked for ${blockShapes}).\n`
        : `Environment block in ${path} (${sourceLabels[facts.source]}):\n${describeFacts(facts)}`,
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
  return exitCodes.ok;
};
