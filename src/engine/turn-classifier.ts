/**
 * Classifies a request's trailing turn — the client's new input after the last assistant turn — once, at
 * the protocol boundary, from exact protocol markers: tool results, Claude Code's interrupt markers
 * (a user text exactly "[Request interrupted by user]" / "… for tool use]") and its tool-rejection text.
 * The result is request-local planning context; it is never serialised upstream.
 *
 * Works on the neutral {@link TurnRequest}, so it applies to every protocol (Claude Code's markers also
 * arrive over Chat Completions when a router converts its requests).
 */

import type { TurnRequest } from '../turn/turn-request.js';
import { hasInterruptMarker, markOfToolResult } from './identity/client-text.js';
import { transcriptShape } from './identity/transcript-shape.js';
import { summarizeUserMessage } from './identity/user-message-summary.js';

/**
 * - `opening`: no assistant turn and no tool result yet in the current context (a worker fork's context
 *   starts at its fork marker);
 * - `user-message`: new user text only;
 * - `tool-results`: tool results only (rejections without a replacement included), no steering text;
 * - `tool-results-with-steering`: tool results plus new user text;
 * - `rejected-tool-results-with-replacement`: the user rejected a tool call and said what to do instead
 *   (in a separate text or in the rejection itself);
 * - `interrupt`: an interrupt marker and nothing the user wrote;
 * - `empty`: nothing new (the request ends with an assistant turn, or only client bookkeeping follows it).
 */
export type TrailingTurnKind =
  | 'opening'
  | 'user-message'
  | 'tool-results'
  | 'tool-results-with-steering'
  | 'rejected-tool-results-with-replacement'
  | 'interrupt'
  | 'empty';

export type TrailingTurn = { readonly kind: TrailingTurnKind };

/**
 * What the trailing input holds: `tools` tool results, `rejected` of them rejected by the user,
 * `replacement` (a rejection says what to do instead), `interrupted` (an interrupt marker, as user text or
 * as a tool result), `steering` (user text beyond client bookkeeping: reminders, environment blocks,
 * markers).
 */
const kindOf = (seen: {
  tools: number;
  rejected: number;
  replacement: boolean;
  interrupted: boolean;
  steering: boolean;
}): TrailingTurnKind => {
  if (seen.rejected > 0 && (seen.steering || seen.replacement))
    return 'rejected-tool-results-with-replacement';
  if (seen.interrupted && !seen.steering) return 'interrupt';
  if (seen.tools > 0) return seen.steering ? 'tool-results-with-steering' : 'tool-results';
  return seen.steering ? 'user-message' : 'empty';
};

/** Classifies the trailing turn of `request`. Reads only the messages after the last assistant turn. */
export const classifyTrailingTurn = (request: TurnRequest): TrailingTurn => {
  const { messages } = request;
  const shape = transcriptShape(messages);
  if (shape.isOpening) return { kind: 'opening' };
  let tools = 0;
  let rejected = 0;
  let interrupted = false;
  let steering = false;
  let replacement = false;
  for (let index = shape.lastAssistant + 1; index < messages.length; index += 1) {
    const message = messages[index];
    if (message === undefined) continue;
    if (message.role === 'tool') {
      tools += 1;
      const mark = markOfToolResult(message.content);
      if (mark.kind === 'interrupted') interrupted = true;
      if (mark.kind === 'rejected') {
        rejected += 1;
        replacement ||= mark.replacement;
      }
    } else if (message.role === 'user') {
      interrupted ||= hasInterruptMarker(message.content);
      steering ||= summarizeUserMessage(message).textHash !== undefined;
    }
  }
  return { kind: kindOf({ tools, rejected, replacement, interrupted, steering }) };
};
