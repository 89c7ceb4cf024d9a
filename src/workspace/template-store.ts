/**
 * The workspace templates: the defaults shipped in `workspace-templates/` overlaid, file by file, by a
 * user directory (default `~/.claude-code-router/cursor-templates/`). Every template is compiled and
 * checked against the fixed placeholder set (`template-placeholders.ts`) when it is loaded, so rendering a loaded template cannot
 * fail. A template whose new version is broken keeps its last good version, and the problem is reported
 * (returned and logged) instead of reaching a workspace. Each `cursorMode` has its own grounding
 * templates ({@link groundingTemplates}); a store is loaded for the mode its bridge runs in.
 */

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isMissingFile } from '../../lib/read-file-if-present.js';
import type { Logger } from 'pino';
import { buildTemplateContext } from './template-context.js';
import { describeUnknownPlaceholder, templatePlaceholderNames } from './template-placeholders.js';
import {
  assertTemplateNames,
  compileTemplate,
  renderCompiledTemplate,
  type CompiledTemplate,
  type TemplateContext,
} from './template-renderer.js';
import { errorMessage } from '../../lib/error-message.js';

/** Templates rendered into every scratch workspace, under the same relative path. */
export const workspaceFileTemplates = [
  'AGENTS.md',
  '.cursor/hooks.json',
  '.cursor/hooks/deny-builtin.mjs',
] as const;

/** Every template the store knows; other files in the directories are ignored. */
export const templateNames = [
  ...workspaceFileTemplates,
  'deny-message.md',
  'prompt-head.md',
  'prompt-tail.md',
  'prompt-head.plan.md',
  'prompt-tail.plan.md',
  'prompt-head.agent.md',
  'prompt-tail.agent.md',
] as const;

export type TemplateName = (typeof templateNames)[number];

/** The bridge's `cursorMode`: which grounding is true for the agent (see {@link groundingTemplates}). */
export type GroundingMode = 'bridge' | 'plan' | 'agent';

/** The templates that ground one mode. */
export type GroundingTemplates = {
  /** Rendered into every scratch workspace, under the same relative path. */
  workspaceFiles: readonly TemplateName[];
  /** The denial text baked into the deny-hook script, when the mode has one. */
  denyMessage?: TemplateName;
  /** The block that opens every prompt, and the one that closes it. */
  head: TemplateName;
  tail: TemplateName;
};

/**
 * The lookup rule, one row per mode. Bridge mode (the default): the client hosts every tool, so the
 * workspace gets AGENTS.md and the deny-hooks (the SDK loads them: `settingSources: ['project']`) and
 * the prompt is framed by `prompt-head.md` / `prompt-tail.md`. Plan and agent modes: the prompt is
 * framed by `prompt-head.<mode>.md` / `prompt-tail.<mode>.md`, and no workspace template is written —
 * the SDK loads no project settings there, and Cursor's built-ins are not denied (plan mode has none,
 * agent mode runs its own).
 */
export const groundingTemplates: Readonly<Record<GroundingMode, GroundingTemplates>> = {
  bridge: {
    workspaceFiles: workspaceFileTemplates,
    denyMessage: 'deny-message.md',
    head: 'prompt-head.md',
    tail: 'prompt-tail.md',
  },
  plan: { workspaceFiles: [], head: 'prompt-head.plan.md', tail: 'prompt-tail.plan.md' },
  agent: { workspaceFiles: [], head: 'prompt-head.agent.md', tail: 'prompt-tail.agent.md' },
};

/** What renders the grounding: a store, or a preview's store with one template replaced. */
export type TemplateRendering = Pick<TemplateStore, 'mode' | 'render'>;

/** Where a template in use came from. */
export type TemplateSource = { origin: 'default' | 'override'; path: string };

/** A template file that could not be used, and why. */
export type TemplateProblem = { name: TemplateName; path: string; message: string };

/** What a (re)load did: the templates whose content in use changed, and the files that were rejected. */
export type TemplateReloadReport = { changed: TemplateName[]; problems: TemplateProblem[] };

export type TemplateStoreOptions = {
  /** The shipped defaults (see `resolveDefaultTemplateDir`). Every template must exist here. */
  defaultDir: string;
  /** The user's override directory; it may be missing. */
  overrideDir?: string;
  /** Problems are logged here at warn. */
  logger?: Logger;
  /** The mode whose grounding this store's users render. Default `bridge`. Every template is loaded regardless. */
  mode?: GroundingMode;
};

type Entry = { template: CompiledTemplate; source: TemplateSource };

/** hooks.json must still be what Cursor's loader accepts after rendering (it strips `//` and block comments). */
const checkHooksJson = (template: CompiledTemplate): void => {
  const probe = renderCompiledTemplate(
    template,
    buildTemplateContext(undefined, {
      hookCommand: "'/usr/bin/node' '/tmp/x/.cursor/hooks/deny-builtin.mjs'",
    }),
  );
  let parsed: unknown;
  try {
    parsed = JSON.parse(probe.replace(/\/\/.*$/gm, '').replace(/\/\*[\s\S]*?\*\//g, ''));
  } catch (error) {
    throw new Error(`renders to invalid JSON: ${errorMessage(error)}`, { cause: error });
  }
  const config = parsed as { version?: unknown; hooks?: unknown } | null;
  if (typeof config !== 'object' || config === null || typeof config.version !== 'number') {
    throw new Error('renders to a hooks config without a numeric "version"');
  }
  if (typeof config.hooks !== 'object' || config.hooks === null) {
    throw new Error('renders to a hooks config without a "hooks" object');
  }
};

/**
 * Compile and check one template file as the store loads it: its tags, its placeholders against the
 * fixed set, and (hooks.json) the config it renders to. Throws with the reason it is unusable (a
 * `TemplateRenderError` carries the line and column).
 */
export const checkTemplate = (name: TemplateName, path: string, text: string): CompiledTemplate => {
  const template = compileTemplate(path, text);
  assertTemplateNames(template, templatePlaceholderNames, describeUnknownPlaceholder);
  if (name === '.cursor/hooks.json') checkHooksJson(template);
  return template;
};

export class TemplateStore {
  readonly defaultDir: string;
  readonly overrideDir: string | undefined;
  /** The mode the workspace files and the prompt grounding are rendered for ({@link groundingTemplates}). */
  readonly mode: GroundingMode;
  readonly #logger: Logger | undefined;
  readonly #entries = new Map<TemplateName, Entry>();
  #problems: TemplateProblem[] = [];
  #reloading: Promise<TemplateReloadReport> | undefined;

  private constructor(options: TemplateStoreOptions) {
    this.defaultDir = options.defaultDir;
    this.overrideDir = options.overrideDir;
    this.mode = options.mode ?? 'bridge';
    this.#logger = options.logger;
  }

  /**
   * Load every template. Throws when a template has no usable version at all (its default is missing or
   * broken and there is no good override) — a broken installation. Override problems are only reported.
   */
  static async load(options: TemplateStoreOptions): Promise<TemplateStore> {
    const store = new TemplateStore(options);
    await store.reload();
    const unusable = templateNames.filter((name) => !store.#entries.has(name));
    if (unusable.length > 0) {
      const reasons = store.#problems.map((problem) => `${problem.path}: ${problem.message}`).join('; ');
      throw new Error(`unusable workspace templates (${unusable.join(', ')}): ${reasons}`);
    }
    return store;
  }

  /** The problems found by the latest (re)load; empty when every file in use is the newest version. */
  get problems(): readonly TemplateProblem[] {
    return this.#problems;
  }

  /** Which file a template currently comes from. */
  source(name: TemplateName): TemplateSource {
    return this.#entry(name).source;
  }

  /** The text of a template in use (the file it came from, as last loaded). */
  text(name: TemplateName): string {
    return this.#entry(name).template.source;
  }

  /**
   * Render a template. Cannot fail for contexts from `buildTemplateContext`: every template in use was
   * checked against the full placeholder set when it was loaded.
   */
  render(name: TemplateName, context: TemplateContext): string {
    return renderCompiledTemplate(this.#entry(name).template, context);
  }

  /**
   * Re-read both directories. Concurrent calls share one pass. A broken or unreadable newer file keeps
   * the template's last good version; on the first load it falls back to the default.
   */
  reload(): Promise<TemplateReloadReport> {
    this.#reloading ??= this.#reloadAll().finally(() => {
      this.#reloading = undefined;
    });
    return this.#reloading;
  }

  #entry(name: TemplateName): Entry {
    const entry = this.#entries.get(name);
    if (entry === undefined) throw new Error(`template ${name} is not loaded`);
    return entry;
  }

  async #reloadAll(): Promise<TemplateReloadReport> {
    const changed: TemplateName[] = [];
    const problems: TemplateProblem[] = [];
    for (const name of templateNames) {
      const previous = this.#entries.get(name);
      const next = await this.#resolve(name, previous, problems);
      if (next === undefined || next === previous) continue;
      if (previous?.template.source !== next.template.source || previous.source.path !== next.source.path) {
        changed.push(name);
      }
      this.#entries.set(name, next);
    }
    this.#problems = problems;
    for (const problem of problems) {
      this.#logger?.warn(
        { template: problem.name, path: problem.path, reason: problem.message },
        'workspace template rejected; keeping its last good version',
      );
    }
    return { changed, problems };
  }

  async #resolve(
    name: TemplateName,
    previous: Entry | undefined,
    problems: TemplateProblem[],
  ): Promise<Entry | undefined> {
    const candidates: TemplateSource[] = [];
    if (this.overrideDir !== undefined) {
      candidates.push({ origin: 'override', path: join(this.overrideDir, ...name.split('/')) });
    }
    candidates.push({ origin: 'default', path: join(this.defaultDir, ...name.split('/')) });
    for (const source of candidates) {
      let text: string;
      try {
        text = await readFile(source.path, 'utf8');
      } catch (error) {
        if (isMissingFile(error) && source.origin === 'override') continue;
        problems.push({ name, path: source.path, message: errorMessage(error) });
        if (previous !== undefined) return previous;
        continue;
      }
      if (previous?.source.path === source.path && previous.template.source === text) return previous;
      try {
        return { template: checkTemplate(name, source.path, text), source };
      } catch (error) {
        problems.push({ name, path: source.path, message: errorMessage(error) });
        if (previous !== undefined) return previous;
      }
    }
    return undefined;
  }
}
