/**
 * Per-message digests used to compare a client's transcript with what an agent already holds. Only
 * what the agent actually saw counts: text, tool-call ids and names, tool results. Cache markers,
 * thinking signatures and other client bookkeeping do not.
 */

import { createHash, hash } from 'node:crypto';
import type { TurnMessage, TurnUserPart } from '../turn/turn-request.js';

/** Texts longer than this are fed to the digest as their native sha256 (one call, no per-char JS loop). */
const nativeHashFrom = 256;

const surrogate = /[\uD800-\uDFFF]/;

/**
 * sha256 of every UTF-16 code unit of `text`: UTF-8 (the fast one-shot path) unless the text has
 * surrogates, which UTF-8 would merge when unpaired.
 */
const nativeHash = (text: string): string =>
  surrogate.test(text)
    ? createHash('sha256').update(text, 'utf16le').digest('base64')
    : hash('sha256', text, 'base64');

/**
 * A 53-bit streaming string hash (cyrb53 mixing) in plain JS, fed ranges of the message's texts without
 * building strings. Every character counts: a long text is fed as its length and its native sha256, so an
 * edit anywhere (even one that keeps the length) changes the digest. Each message object is hashed once
 * (see {@link messageDigest}); a 2 MB transcript costs a few milliseconds per request. Digests are
 * compared for equality only and never leave the process.
 */
class Digest {
  #h1 = 0xdeadbeef;
  #h2 = 0x41c6ce57;

  /** Feed `text` (its native hash when long), then a separator. */
  text(text: string): this {
    if (text.length <= nativeHashFrom) return this.#range(text, 0, text.length).#code(0);
    const digest = nativeHash(text);
    return this.#number(text.length).#range(digest, 0, digest.length).#code(0);
  }

  value(): string {
    const h1 =
      Math.imul(this.#h1 ^ (this.#h1 >>> 16), 2246822507) ^
      Math.imul(this.#h2 ^ (this.#h2 >>> 13), 3266489909);
    const h2 = Math.imul(this.#h2 ^ (this.#h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
    return String(4294967296 * (2097151 & h2) + (h1 >>> 0));
  }

  #range(text: string, start: number, end: number): this {
    let h1 = this.#h1;
    let h2 = this.#h2;
    for (let index = start; index < end; index += 1) {
      const code = text.charCodeAt(index);
      h1 = Math.imul(h1 ^ code, 2654435761);
      h2 = Math.imul(h2 ^ code, 1597334677);
    }
    this.#h1 = h1;
    this.#h2 = h2;
    return this;
  }

  #number(value: number): this {
    return this.#code(value & 0xffff).#code(value >>> 16);
  }

  #code(code: number): this {
    this.#h1 = Math.imul(this.#h1 ^ code, 2654435761);
    this.#h2 = Math.imul(this.#h2 ^ code, 1597334677);
    return this;
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
