/**
 * What the agents of a running bridge are grounded with, per live conversation: the workspace files as
 * they are on disk, the deny message, the prompt head and tail of the latest turn, and the host facts
 * they were rendered from. Built on request (`GET /debug/grounding`) from what {@link WorkspaceService}
 * keeps of each session's latest turn; it holds no conversation text, only those facts and renders.
 */

import { join } from 'node:path';
import { readFileIfPresent } from '../../lib/read-file-if-present.js';
import type { HostFacts } from './host-facts.js';
import { buildHookCommand, hookScriptPath } from './render-workspace-files.js';
import { buildTemplateContext } from './template-context.js';
import {
  groundingTemplates,
  type GroundingMode,
  type TemplateName,
  type TemplateProblem,
  type TemplateSource,
  type TemplateStore,
} from './template-store.js';
import type { SessionGrounding } from './workspace-service.js';

/** One grounding text and the template it comes from (`origin`: the template's file in effect now). */
export type GroundingText = { template: TemplateName; origin: TemplateSource['origin']; text: string };

/** A workspace file as it is on disk; `text` null when it is not there (the session just ended). */
export type GroundingFile = {
  path: string;
  template: TemplateName;
  origin: TemplateSource['origin'];
  text: string | null;
};

/** One live conversation's grounding. */
export type SessionGroundingPreview = {
  /** The bridge's own opaque key of the conversation (its workspace directory's name), not a client id. */
  session: string;
  mode: GroundingMode;
  /** When its latest turn was prepared (ISO 8601). */
  lastTurnAt: string;
  workspaceDir: string;
  /** The host facts of its latest turn; null when the client reported no environment. */
  facts: HostFacts | null;
  /** The workspace files of the mode (AGENTS.md and the deny-hooks in bridge mode; none otherwise). */
  files: GroundingFile[];
  /** The denial text baked into the hook script; null in modes without one. */
  denyMessage: GroundingText | null;
  /** The prompt head and tail as rendered for its latest turn. */
  prompt: { head: GroundingText; tail: GroundingText };
};

/** The body of `GET /debug/grounding`. */
export type GroundingPreview = {
  mode: GroundingMode;
  templates: { defaultDir: string; overrideDir: string | null; problems: TemplateProblem[] };
  /** Newest turn first. */
  sessions: SessionGroundingPreview[];
};

export type GroundingPreviewOptions = {
  /** The Node binary the deny-hook runs with, as the workspace manager renders it. Default `process.execPath`. */
  nodePath?: string;
  /** Default `process.platform`. */
  platform?: NodeJS.Platform;
};

/**
 * The grounding of every session in `sessions`, rendered with `templates` (the store the bridge renders
 * with). The deny message is rendered now, for the session's latest facts, exactly as the workspace's
 * hook script gets it; the files are read from the workspace.
 */
export const previewGrounding = async (
  templates: TemplateStore,
  sessions: readonly SessionGrounding[],
  options: GroundingPreviewOptions = {},
): Promise<GroundingPreview> => {
  const mode = templates.mode;
  const used = groundingTemplates[mode];
  const text = (template: TemplateName, value: string): GroundingText => ({
    template,
    origin: templates.source(template).origin,
    text: value,
  });
  const preview = async (session: SessionGrounding): Promise<SessionGroundingPreview> => {
    const { workspaceDir, facts } = session;
    const files = await Promise.all(
      used.workspaceFiles.map(async (name) => ({
        path: name,
        template: name,
        origin: templates.source(name).origin,
        text: await readFileIfPresent(join(workspaceDir, ...name.split('/'))),
      })),
    );
    let denyMessage: GroundingText | null = null;
    if (used.denyMessage !== undefined) {
      const hookCommand = buildHookCommand(
        options.nodePath ?? process.execPath,
        join(workspaceDir, ...hookScriptPath.split('/')),
        options.platform ?? process.platform,
      );
      const context = buildTemplateContext(facts, { scratchDir: workspaceDir, hookCommand });
      denyMessage = text(used.denyMessage, templates.render(used.denyMessage, context).trim());
    }
    return {
      session: session.sessionKey,
      mode,
      lastTurnAt: new Date(session.preparedAt).toISOString(),
      workspaceDir,
      facts: facts ?? null,
      files,
      denyMessage,
      prompt: {
        head: text(used.head, session.grounding.head),
        tail: text(used.tail, session.grounding.tail),
      },
    };
  };
  return {
    mode,
    templates: {
      defaultDir: templates.defaultDir,
      overrideDir: templates.overrideDir ?? null,
      problems: [...templates.problems],
    },
    sessions: await Promise.all(
      [...sessions].sort((left, right) => right.preparedAt - left.preparedAt).map(preview),
    ),
  };
};
