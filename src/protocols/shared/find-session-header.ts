/**
 * Headers that carry an OpenAI-protocol client's own session id (OpenCode, Kilo Code, Grok CLI, Codex,
 * AI SDK based clients), in order of precedence: the first one present wins.
 */
export const sessionHeaderNames: readonly string[] = [
  'x-opencode-session',
  'x-kilocode-taskid',
  'x-kilo-session',
  'x-grok-session-id',
  'x-grok-conv-id',
  'x-conversation-id',
  'session-id',
  'x-session-id',
  'x-session-affinity',
];

/**
 * The client's native session id from lower-cased headers: the first of {@link sessionHeaderNames} whose
 * value is not blank, with the header name as its `source`; `undefined` when none is set.
 */
export const findSessionHeader = (
  headers: Record<string, string>,
): { value: string; source: string } | undefined => {
  for (const source of sessionHeaderNames) {
    const value = headers[source];
    if (value !== undefined && value.trim() !== '') return { value, source };
  }
  return undefined;
};
