/**
 * The grounding head and tail of every prompt sent to the agent. Cursor loads workspace rules once per
 * agent session (and in plan and agent modes not at all), so a live turn learns the current host facts
 * from these two blocks, rendered for each turn from the templates of the store's mode: `prompt-head.md`
 * / `prompt-tail.md` in bridge mode, `prompt-head.<mode>.md` / `prompt-tail.<mode>.md` otherwise (see
 * `groundingTemplates`).
 */

import type { HostFacts } from './host-facts.js';
import { buildTemplateContext, type TemplateContextExtras } from './template-context.js';
import { groundingTemplates, type TemplateRendering } from './template-store.js';

export type PromptGroundingOptions = {
  /** The session's scratch workspace, named so the model can recognise (and avoid) its path. */
  scratchDir?: string;
};

export type PromptGroundingSetup = {
  /**
   * `cursorCwd`: the agent's working directory in agent mode, as the Cursor upstream sets it. Ignored in
   * the other modes, whose agent runs in the scratch workspace; absent, agent mode runs there too.
   */
  agentCwd?: string;
};

export class PromptGrounding {
  readonly #templates: TemplateRendering;
  readonly #agentCwd: string | undefined;

  constructor(templates: TemplateRendering, setup: PromptGroundingSetup = {}) {
    this.#templates = templates;
    this.#agentCwd = templates.mode === 'agent' ? setup.agentCwd : undefined;
  }

  /** The block that opens the prompt, trimmed. `facts` undefined: no environment reported. */
  renderPromptHead(facts: HostFacts | undefined, options: PromptGroundingOptions = {}): string {
    const { head } = groundingTemplates[this.#templates.mode];
    return this.#templates.render(head, this.#context(facts, options)).trim();
  }

  /** The block that closes the prompt, trimmed. */
  renderPromptTail(facts: HostFacts | undefined, options: PromptGroundingOptions = {}): string {
    const { tail } = groundingTemplates[this.#templates.mode];
    return this.#templates.render(tail, this.#context(facts, options)).trim();
  }

  #context(facts: HostFacts | undefined, options: PromptGroundingOptions) {
    const extras: TemplateContextExtras = {
      ...options,
      ...(this.#agentCwd === undefined ? {} : { agentCwd: this.#agentCwd }),
    };
    return buildTemplateContext(facts, extras);
  }
}
