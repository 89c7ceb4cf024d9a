/**
 * Builds the text the SDK agent receives. A fresh agent gets the grounding head, the client's system
 * prompt as context, the earlier transcript and the current request, then the grounding tail. A live
 * agent that already holds the history gets only what is new, between the same head and tail.
 */

import type { TurnMessage, TurnRequest } from '../turn/turn-request.js';
import type { UpstreamPrompt } from '../upstream/upstream-port.js';
import { joinText, messagesToText, type PromptImage } from './transcript-text.js';

export type Grounding = { head: string; tail: string };

/** Index of the first message of the trailing "current request": the last user message and what follows it. */
export const currentRequestStart = (messages: readonly TurnMessage[]): number => {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    if (messages[index]?.role === 'user') return index;
  }
  return messages.length;
};

const section = (tag: string, body: string): string =>
  body.trim() === '' ? '' : `<${tag}>\n${body}\n</${tag}>`;

const assemble = (parts: string[], images: PromptImage[]): UpstreamPrompt => ({
  text: parts.filter((part) => part.trim() !== '').join('\n\n'),
  images,
});

/** The first prompt of a fresh agent: everything the client sent, flattened. */
export const buildFullPrompt = (request: TurnRequest, grounding: Grounding): UpstreamPrompt => {
  const images: PromptImage[] = [];
  const start = currentRequestStart(request.messages);
  const earlier = request.messages.slice(0, start);
  const current = request.messages.slice(start);
  const system = joinText(request.system);
  return assemble(
    [
      grounding.head,
      section(
        'client_system_prompt',
        system === ''
          ? ''
          : `The client application's system prompt (context for you, from the user's side):\n${system}`,
      ),
      section(
        'conversation_so_far',
        earlier.length === 0
          ? ''
          : `Earlier turns of this conversation:\n\n${messagesToText(earlier, images)}`,
      ),
      section('current_request', messagesToText(current, images)),
      grounding.tail,
    ],
    images,
  );
};

/** A follow-up for an agent that already holds the conversation: only the new messages. */
export const buildSlimPrompt = (
  newMessages: readonly TurnMessage[],
  grounding: Grounding,
): UpstreamPrompt => {
  const images: PromptImage[] = [];
  return assemble(
    [grounding.head, section('current_request', messagesToText(newMessages, images)), grounding.tail],
    images,
  );
};
