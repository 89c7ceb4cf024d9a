/**
 * Which agent client sent a request, by its `user-agent` (and Codex's `originator`), for the operator's
 * view of the live conversations. A product name only: never anything a user typed.
 */

/** Known clients by the start of their user agent (Claude Code 2.x, Codex exec and TUI, OpenCode). */
const knownClients: ReadonlyArray<{ pattern: RegExp; name: string }> = [
  { pattern: /^claude-cli\//i, name: 'Claude Code' },
  { pattern: /^codex[_-]/i, name: 'Codex' },
  { pattern: /^opencode\//i, name: 'OpenCode' },
];

/** The longest product token kept for a client the list does not know. */
const maxProductLength = 40;

/**
 * The client's name: a known client's, else the first product token of its user agent (`curl`,
 * `ai-sdk`, `OpenAI`), else `unknown`. Headers are lower-cased names, as in `TurnRequest.headers`.
 */
export const clientName = (headers: Readonly<Record<string, string>>): string => {
  const agent = headers['user-agent']?.trim() ?? '';
  const originator = headers['originator']?.trim() ?? '';
  for (const { pattern, name } of knownClients) {
    if (pattern.test(agent) || pattern.test(originator)) return name;
  }
  const product = /^[A-Za-z0-9._-]+/.exec(agent)?.[0];
  return product === undefined ? 'unknown' : product.slice(0, maxProductLength);
};
