/**
 * Editing the grounding templates of a running bridge (the console's editor): every template with the
 * text in use, its default and the user's override; a draft checked as the store would load it and
 * rendered as the bridge would render it, for a live conversation's host facts or an example
 * environment; saving a draft into the user's override directory and reverting to the default by
 * removing the override. The store itself is never changed here: the template watcher notices the file
 * and reloads it, as it does for an edit made in any editor.
 */

import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { readFileIfPresent } from '../../lib/read-file-if-present.js';
import { envBlockFormats } from './env-block-formats.js';
import { extractHostFacts, type HostFacts } from './host-facts.js';
import { PromptGrounding } from './prompt-grounding.js';
import { buildHookCommand, hookScriptPath, renderWorkspaceFiles } from './render-workspace-files.js';
import { buildTemplateContext } from './template-context.js';
import { renderCompiledTemplate, TemplateRenderError } from './template-renderer.js';
import {
  checkTemplate,
  groundingTemplates,
  templateNames,
  type GroundingMode,
  type TemplateName,
  type TemplateRendering,
  type TemplateSource,
  type TemplateStore,
} from './template-store.js';
import { errorMessage } from '../../lib/error-message.js';

/** What a template is for. */
export type TemplateRole = 'workspace-file' | 'deny-message' | 'prompt-head' | 'prompt-tail';

/** One template as the editor shows it. */
export type EditableTemplate = {
  name: TemplateName;
  role: TemplateRole;
  /** The modes (`cursorMode`) that use it. */
  modes: GroundingMode[];
  /** The file in use now, and its text as the store last loaded it. */
  source: TemplateSource;
  text: string;
  /** The shipped default. */
  defaultText: string;
  /** Where a save writes it; null when the bridge has no override directory. */
  overridePath: string | null;
  /** The override file's text, null when there is none (it may differ from `text` when it is broken). */
  overrideText: string | null;
};

/** Why a draft cannot be used; `line` and `column` (1-based) when the problem has a place. */
export type TemplateIssue = { message: string; line?: number; column?: number };

/** The host facts and workspace a preview renders for. */
export type PreviewTarget = { facts: HostFacts | undefined; workspaceDir: string };

export type TemplatePreview = { ok: true; text: string } | { ok: false; issues: TemplateIssue[] };

export type TemplateSave = { ok: true; path: string } | { ok: false; issues: TemplateIssue[] };

export type TemplateEditorOptions = {
  store: TemplateStore;
  /** `cursorCwd`, as the bridge's prompt grounding gets it (agent mode). */
  agentCwd?: string;
  /** The Node binary the deny-hook runs with. Default `process.execPath`. */
  nodePath?: string;
  platform?: NodeJS.Platform;
};

const roleOf = (name: TemplateName): { role: TemplateRole; modes: GroundingMode[] } => {
  const modes = (Object.keys(groundingTemplates) as GroundingMode[]).filter((mode) => {
    const used = groundingTemplates[mode];
    return (
      used.workspaceFiles.includes(name) ||
      used.denyMessage === name ||
      used.head === name ||
      used.tail === name
    );
  });
  const first = groundingTemplates[modes[0] ?? 'bridge'];
  const role: TemplateRole = first.workspaceFiles.includes(name)
    ? 'workspace-file'
    : first.denyMessage === name
      ? 'deny-message'
      : first.head === name
        ? 'prompt-head'
        : 'prompt-tail';
  return { role, modes };
};

const issueOf = (error: unknown): TemplateIssue => {
  if (error instanceof TemplateRenderError) {
    // The renderer's message starts with "name:line:column: "; the editor shows the place apart.
    const message = error.message.replace(/^[^:]*(?::\d+:\d+)?: /, '');
    return {
      message,
      ...(error.line === undefined ? {} : { line: error.line }),
      ...(error.column === undefined ? {} : { column: error.column }),
    };
  }
  return { message: errorMessage(error) };
};

/** The example environment a preview renders for when no live conversation is picked. */
export const exampleHostFacts = (): HostFacts | undefined =>
  extractHostFacts([envBlockFormats['claude-code'].example]);

/** Whether `name` is one of the templates (a console path segment, decoded). */
export const isTemplateName = (name: string): name is TemplateName =>
  (templateNames as readonly string[]).includes(name);

export class TemplateEditor {
  readonly #store: TemplateStore;
  readonly #options: TemplateEditorOptions;

  constructor(options: TemplateEditorOptions) {
    this.#store = options.store;
    this.#options = options;
  }

  /** The mode the bridge runs in. */
  get mode(): GroundingMode {
    return this.#store.mode;
  }

  /** Every template: the bridge's mode's first, in the order the agent meets them. */
  async list(): Promise<EditableTemplate[]> {
    const order = (name: TemplateName): number => (roleOf(name).modes.includes(this.mode) ? 0 : 1);
    const names = [...templateNames].sort((left, right) => order(left) - order(right));
    return Promise.all(
      names.map(async (name) => {
        const overridePath = this.#overridePath(name);
        return {
          name,
          ...roleOf(name),
          source: this.#store.source(name),
          text: this.#store.text(name),
          defaultText: (await readFileIfPresent(join(this.#store.defaultDir, ...name.split('/')))) ?? '',
          overridePath: overridePath ?? null,
          overrideText: overridePath === undefined ? null : await readFileIfPresent(overridePath),
        };
      }),
    );
  }

  /** The problems of `text` as template `name`; empty when the store would load it. */
  check(name: TemplateName, text: string): TemplateIssue[] {
    try {
      checkTemplate(name, name, text);
      return [];
    } catch (error) {
      return [issueOf(error)];
    }
  }

  /**
   * `text` as template `name`, rendered as the bridge renders it for `target`: a workspace file as the
   * workspace gets it, the deny message as the hook script bakes it in, a prompt head or tail as it opens
   * or closes a prompt (of the template's own mode).
   */
  preview(name: TemplateName, text: string, target: PreviewTarget): TemplatePreview {
    let draft;
    try {
      draft = checkTemplate(name, name, text);
    } catch (error) {
      return { ok: false, issues: [issueOf(error)] };
    }
    const { role, modes } = roleOf(name);
    const mode = modes.includes(this.mode) ? this.mode : (modes[0] ?? 'bridge');
    const rendering: TemplateRendering = {
      mode,
      render: (template, context) =>
        template === name ? renderCompiledTemplate(draft, context) : this.#store.render(template, context),
    };
    const { facts, workspaceDir } = target;
    const nodePath = this.#options.nodePath ?? process.execPath;
    const platform = this.#options.platform ?? process.platform;
    switch (role) {
      case 'workspace-file': {
        const files = renderWorkspaceFiles(rendering, facts, { workspaceDir, nodePath, platform });
        return { ok: true, text: files.find((file) => file.path === name)?.content ?? '' };
      }
      case 'deny-message': {
        const hookCommand = buildHookCommand(
          nodePath,
          join(workspaceDir, ...hookScriptPath.split('/')),
          platform,
        );
        const context = buildTemplateContext(facts, { scratchDir: workspaceDir, hookCommand });
        return { ok: true, text: rendering.render(name, context).trim() };
      }
      case 'prompt-head':
      case 'prompt-tail': {
        const grounding = new PromptGrounding(
          rendering,
          this.#options.agentCwd === undefined ? {} : { agentCwd: this.#options.agentCwd },
        );
        const options = { scratchDir: workspaceDir };
        const rendered =
          role === 'prompt-head'
            ? grounding.renderPromptHead(facts, options)
            : grounding.renderPromptTail(facts, options);
        return { ok: true, text: rendered };
      }
    }
  }

  /**
   * Write `text` as the user's override of `name`, whole (a temporary file renamed over it), after checking
   * it: a draft the store would reject is not written.
   */
  async save(name: TemplateName, text: string): Promise<TemplateSave> {
    const issues = this.check(name, text);
    if (issues.length > 0) return { ok: false, issues };
    const path = this.#writablePath(name);
    await mkdir(dirname(path), { recursive: true });
    const temporary = join(dirname(path), `.${randomBytes(6).toString('hex')}.tmp`);
    try {
      await writeFile(temporary, text, 'utf8');
      await rename(temporary, path);
    } finally {
      await rm(temporary, { force: true });
    }
    return { ok: true, path };
  }

  /** Remove the user's override of `name`, so the default applies again; false when there was none. */
  async revert(name: TemplateName): Promise<boolean> {
    const path = this.#writablePath(name);
    const present = (await readFileIfPresent(path)) !== null;
    await rm(path, { force: true });
    return present;
  }

  #overridePath(name: TemplateName): string | undefined {
    const dir = this.#store.overrideDir;
    return dir === undefined ? undefined : join(dir, ...name.split('/'));
  }

  /** The override file of `name`; throws when there is no override directory, or it lies in the package's. */
  #writablePath(name: TemplateName): string {
    const path = this.#overridePath(name);
    if (path === undefined) throw new Error('this bridge has no template override directory');
    const defaults = resolve(this.#store.defaultDir);
    if (resolve(path).startsWith(defaults + sep))
      throw new Error(
        `the template override directory lies inside the shipped defaults (${defaults}); edits are never written there`,
      );
    return path;
  }
}
