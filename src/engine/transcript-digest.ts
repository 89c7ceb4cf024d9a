/**
 * Per-message digests used to compare a client's transcript with what an agent already holds. Only
 * what the agent actually saw counts: text, tool-call ids and names, tool results. Cache markers,
 * thinking signatures and other client bookkeeping do not.
 */

import { createHash, hash } from 'node:crypto';
import type { TurnMessage, TurnUserPart } from '../turn/turn-request.js';

const surrogate = /[\uD800-\uDFFF]/;

/**
 * The sha256 of length-prefixed texts (`<length>:<text>` each, so no two lists share an input), fed to one
 * native one-shot hash: in a cold process (a few dozen requests between SDK runs) a per-character JS hash
 * loop cost more than the native call. Every UTF-16 code unit counts: UTF-8 (the fast path) unless the
 * input has surrogates, which UTF-8 would merge when unpaired. Digests are compared for equality only and
 * never leave the process.
 */
class Digest {
  #input = '';

  /** Feed `text`. */
  text(text: string): this {
    this.#input += `${text.length}:${text}`;
    return this;
  }

  value(): string {
    const input = this.#input;
    // The two encodings' digests are told apart, so their byte strings cannot coincide.
    return surrogate.test(input)
      ? `w${createHash('sha256').update(input, 'utf16le').digest('base64')}`
      : hash('sha256', input, 'base64');
  }
}

const userPart = (digest: Digest, part: TurnUserPart): Digest =>
  part.type === 'text'
    ? digest.text('t').text(part.text)
    : part.source.kind === 'url'
      ? digest.text('u').text(part.source.url)
      : digest.text('i').text(part.source.mediaType).text(part.source.data);

/** Digests by message object: a request's messages are digested once, however many callers ask. */
const digestCache = new WeakMap<TurnMessage, string>();

/** The exact digest of what the agent saw of `message`; computed once per message object. */
export const messageDigest = (message: TurnMessage): string => {
  const cached = digestCache.get(message);
  if (cached !== undefined) return cached;
  const value = computeDigest(message);
  digestCache.set(message, value);
  return value;
};

const computeDigest = (message: TurnMessage): string => {
  const digest = new Digest().text(message.role);
  switch (message.role) {
    case 'system':
      for (const part of message.content) digest.text(part.text);
      break;
    case 'user':
      for (const part of message.content) userPart(digest, part);
      break;
    case 'assistant':
      digest.text(
        message.content
          .flatMap((part) => (part.type === 'text' ? [part.text] : []))
          .join('')
          .trim(),
      );
      for (const part of message.content) {
        if (part.type === 'tool-call') digest.text(part.toolCallId).text(part.toolName);
      }
      break;
    case 'tool':
      digest.text(message.toolCallId).text(message.isError ? '1' : '0');
      for (const part of message.content) userPart(digest, part);
      break;
    default: {
      const _exhaustive: never = message;
      return _exhaustive;
    }
  }
  return digest.value();
};

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
