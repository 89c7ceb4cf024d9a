/**
 * Per-message digests used to compare a client's transcript with what an agent already holds. Only
 * what the agent actually saw counts: text, tool-call ids and names, tool results. Cache markers,
 * thinking signatures and other client bookkeeping do not.
 */

import { createHash } from 'node:crypto';
import type { TurnMessage, TurnUserPart } from '../turn/turn-request.js';

const sampleLength = 512;
const slices = 12;
const sliceLength = 32;

/**
 * The text as compared: whole when short; for long text its length plus evenly spread slices, so a 2 MB
 * transcript costs a few hundred KB of hashing per request instead of all of it. An edit that keeps a
 * long text's length and misses every slice reads as unchanged; the only effect is a slim follow-up where
 * a replay would have been more faithful.
 */
const sampled = (text: string): string => {
  if (text.length <= sampleLength) return text;
  let sample = `${text.length}:`;
  const step = (text.length - sliceLength) / (slices - 1);
  for (let index = 0; index < slices; index += 1) {
    const offset = Math.floor(index * step);
    sample += text.slice(offset, offset + sliceLength);
  }
  return sample;
};

const userPartKey = (part: TurnUserPart): string =>
  part.type === 'text'
    ? `t:${sampled(part.text)}`
    : part.source.kind === 'url'
      ? `u:${part.source.url}`
      : `i:${part.source.mediaType}:${part.source.data.length}:${part.source.data.slice(0, 64)}`;

const messageKey = (message: TurnMessage): string => {
  switch (message.role) {
    case 'system':
      return `system\0${message.content.map((part) => sampled(part.text)).join('\0')}`;
    case 'user':
      return `user\0${message.content.map(userPartKey).join('\0')}`;
    case 'assistant': {
      const text = sampled(
        message.content
          .flatMap((part) => (part.type === 'text' ? [part.text] : []))
          .join('')
          .trim(),
      );
      const calls = message.content.flatMap((part) =>
        part.type === 'tool-call' ? [`${part.toolCallId}:${part.toolName}`] : [],
      );
      return `assistant\0${text}\0${calls.join('\0')}`;
    }
    case 'tool':
      return `tool\0${message.toolCallId}\0${message.isError ? 1 : 0}\0${message.content.map(userPartKey).join('\0')}`;
    default: {
      const _exhaustive: never = message;
      return _exhaustive;
    }
  }
};

export const messageDigest = (message: TurnMessage): string =>
  createHash('sha1').update(messageKey(message)).digest('base64url');

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
