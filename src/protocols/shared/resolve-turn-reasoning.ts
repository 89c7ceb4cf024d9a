import type { TurnReasoning, TurnReasoningEffort } from '../../turn/turn-request.js';

/** What a request says about reasoning, read from its protocol's own fields. */
export type ReasoningFields = {
  /** The effort it names, as `readReasoningEffort` reads it; `undefined` when it names none. */
  effort: TurnReasoningEffort | 'none' | undefined;
  /**
   * Its reasoning setting apart from the effort: `off` when the setting turns reasoning off (Anthropic
   * `thinking.type: "disabled"`, Chat `reasoning.enabled: false`); `on` for any other setting (Anthropic
   * `thinking` of another type; a Chat or Responses `reasoning` object, whatever else it holds: Codex's
   * `{summary: "auto"}`, `{}`); `absent` when the request carries none.
   */
  setting: 'on' | 'off' | 'absent';
};

/**
 * The one reasoning rule of every protocol, onto three cases (no reasoning, reasoning with an effort,
 * reasoning without an effort):
 * 1. an `off` setting or effort `none` → no reasoning, whatever else the request says;
 * 2. an effort → reasoning with that effort;
 * 3. an `on` setting without an effort → reasoning without an effort (the catalog default variant's
 *    effort): a client that sends a reasoning setting wants reasoning, and one that names no level leaves
 *    the level to the model, as OpenAI and Anthropic do for an omitted effort;
 * 4. nothing → no reasoning (a request with no thinking, effort or reasoning field).
 */
export const resolveTurnReasoning = ({ effort, setting }: ReasoningFields): TurnReasoning => {
  if (setting === 'off' || effort === 'none') return { requested: false };
  if (effort !== undefined) return { requested: true, effort };
  return { requested: setting === 'on' };
};
