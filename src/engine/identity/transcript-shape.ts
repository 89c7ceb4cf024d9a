/**
 * The structural landmarks of a transcript that identity and trailing-turn classification share: the
 * worker-fork boundaries, the first assistant turn of the current context and the last assistant turn.
 * A fork boundary is a user message with a text part that starts with a fork marker, where Claude Code
 * puts it (`opensFork`); tool results, assistant text and markers inside ordinary user text can quote
 * anything. The result is cached per `messages` array so one request is analysed once.
 */

import type { TurnMessage } from '../../turn/turn-request.js';
import { opensFork } from './client-text.js';

export type TranscriptShape = {
  /** Indexes of user messages that open a worker fork, oldest first; each opens a nested context. */
  readonly forkBoundaries: readonly number[];
  /** Where the current context starts: the latest fork boundary, else 0. */
  readonly contextStart: number;
  /** The first assistant message at or after `contextStart`, or -1. */
  readonly firstAssistant: number;
  /** The last assistant message of the whole transcript, or -1. */
  readonly lastAssistant: number;
  /** No assistant turn and no tool result in the current context yet. */
  readonly isOpening: boolean;
};

const cache = new WeakMap<readonly TurnMessage[], { length: number; shape: TranscriptShape }>();

const computeShape = (messages: readonly TurnMessage[]): TranscriptShape => {
  const forkBoundaries: number[] = [];
  let lastAssistant = -1;
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index];
    if (message === undefined) continue;
    if (message.role === 'assistant' && lastAssistant === -1) lastAssistant = index;
    else if (message.role === 'user' && opensFork(message.content)) forkBoundaries.push(index);
  }
  forkBoundaries.reverse();
  const contextStart = forkBoundaries.at(-1) ?? 0;
  let firstAssistant = -1;
  let toolResult = false;
  for (let index = contextStart; index < messages.length; index += 1) {
    const role = messages[index]?.role;
    if (role === 'tool') toolResult = true;
    if (role === 'assistant') {
      firstAssistant = index;
      break;
    }
  }
  return {
    forkBoundaries,
    contextStart,
    firstAssistant,
    lastAssistant,
    isOpening: firstAssistant === -1 && !toolResult,
  };
};

/** The shape of `messages`, computed once per array (recomputed if the array's length changed). */
export const transcriptShape = (messages: readonly TurnMessage[]): TranscriptShape => {
  const cached = cache.get(messages);
  if (cached !== undefined && cached.length === messages.length) return cached.shape;
  const shape = computeShape(messages);
  cache.set(messages, { length: messages.length, shape });
  return shape;
};
