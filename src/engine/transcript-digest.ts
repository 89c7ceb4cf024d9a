/**
 * Per-message digests used to compare a client's transcript with what an agent already holds. Only
 * what the agent actually saw counts: text, tool-call ids and names, tool results. Cache markers,
 * thinking signatures and other client bookkeeping do not. Digests are exact (sha256 over every code
 * unit, see `identity/hash-fields.ts`) and are the one hash of a message: identity keys its cross-request
 * memo of user messages by them, so a request's texts are read once for both.
 */

import type { TurnMessage, TurnUserPart } from '../turn/turn-request.js';
import { hashFields } from './identity/hash-fields.js';

/** A user part's fields, each tagged with its kind. */
const userPartFields = (part: TurnUserPart): string[] =>
  part.type === 'text'
    ? ['t', part.text]
    : part.source.kind === 'url'
      ? ['u', part.source.url]
      : ['i', part.source.mediaType, part.source.data];

/** Digests by message object: a request's messages are digested once, however many callers ask. */
const digestCache = new WeakMap<TurnMessage, string>();

/**
 * The exact digest of what the agent saw of `message` (two messages share it only if everything the
 * agent saw of them is equal); computed once per message object.
 */
export const messageDigest = (message: TurnMessage): string => {
  const cached = digestCache.get(message);
  if (cached !== undefined) return cached;
  const value = computeDigest(message);
  digestCache.set(message, value);
  return value;
};

/** The fields of what the agent saw of `message`, its role first. */
const fieldsOf = (message: TurnMessage): string[] => {
  switch (message.role) {
    case 'system':
      return ['system', ...message.content.map((part) => part.text)];
    case 'user':
      return ['user', ...message.content.flatMap(userPartFields)];
    case 'assistant':
      return [
        'assistant',
        message.content
          .flatMap((part) => (part.type === 'text' ? [part.text] : []))
          .join('')
          .trim(),
        ...message.content.flatMap((part) =>
          part.type === 'tool-call' ? [part.toolCallId, part.toolName] : [],
        ),
      ];
    case 'tool':
      return [
        'tool',
        message.toolCallId,
        message.isError ? '1' : '0',
        ...message.content.flatMap(userPartFields),
      ];
    default: {
      const _exhaustive: never = message;
      return _exhaustive;
    }
  }
};

const computeDigest = (message: TurnMessage): string => hashFields('message', ...fieldsOf(message));

/** The assistant message a client will send back for a response we produced. */
export const assistantDigest = (
  text: string,
  toolCalls: ReadonlyArray<{ toolCallId: string; toolName: string }>,
): string =>
  messageDigest({
    role: 'assistant',
    content: [
      { type: 'text', text },
      ...toolCalls.map((call) => ({
        type: 'tool-call' as const,
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        input: {},
      })),
    ],
  });

/** True when `digests` starts with `prefix`. */
export const startsWith = (digests: readonly string[], prefix: readonly string[]): boolean =>
  prefix.length <= digests.length && prefix.every((digest, index) => digests[index] === digest);
