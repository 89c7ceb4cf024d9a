/**
 * The grounding head and tail of every prompt sent to the agent. Cursor loads workspace rules once per
 * agent session, so a live turn learns the current host facts from these two blocks, rendered from
 * `prompt-head.md` / `prompt-tail.md` for each turn.
 */

import type { HostFacts } from './host-facts.js';
import { buildTemplateContext } from './template-context.js';
import type { TemplateStore } from './template-store.js';

export type PromptGroundingOptions = {
  /** The session's scratch workspace, named so the model can recognise (and avoid) its path. */
  scratchDir?: string;
};

export class PromptGrounding {
  readonly #templates: TemplateStore;

  constructor(templates: TemplateStore) {
    this.#templates = templates;
  }

  /** The block that opens the prompt, trimmed. `facts` undefined: no environment reported. */
  renderPromptHead(facts: HostFacts | undefined, options: PromptGroundingOptions = {}): string {
    return this.#templates.render('prompt-head.md', buildTemplateContext(facts, options)).trim();
  }

  /** The block that closes the prompt, trimmed. */
  renderPromptTail(facts: HostFacts | undefined, options: PromptGroundingOptions = {}): string {
    return this.#templates.render('prompt-tail.md', buildTemplateContext(facts, options)).trim();
  }
}
