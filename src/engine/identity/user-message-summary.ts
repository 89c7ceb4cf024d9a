/**
 * What identity needs from one user message: the hash of its substantive text. Summaries are memoised
 * so a follow-up request does not re-read megabytes of old text:
 * - per message object (one request is analysed by identity and classification alike);
 * - across requests, for large messages only, by a fingerprint of each part (length plus evenly spaced
 *   samples). Every request is a freshly parsed object graph, so object identity cannot carry over.
 *
 * The fingerprint trades exactness for speed on large texts only: an edit to a ≥ 32 KB message that keeps
 * its length and every sampled slice reads as unchanged. The worst outcome is that such a branch keeps
 * its session; the planner's per-message transcript digests still see the divergence and replay. Only
 * hashes are cached — never text.
 */

import type { TurnMessage, TurnUserPart } from '../../turn/turn-request.js';
import { substantiveText } from './client-text.js';
import { hashFields } from './hash-fields.js';

export type UserMessageSummary = {
  /** sha256 of the substantive text, or undefined when the message has none. */
  readonly textHash: string | undefined;
};

/** Messages with at least this much raw text are memoised across requests by fingerprint. */
const largeMessageChars = 32 * 1024;
const sampleCount = 32;
const sampleChars = 16;
const maxFingerprints = 4_096;

const none: UserMessageSummary = { textHash: undefined };
const byMessage = new WeakMap<TurnMessage, UserMessageSummary>();
const byFingerprint = new Map<string, UserMessageSummary>();

const summarize = (parts: readonly TurnUserPart[]): UserMessageSummary => {
  const text = substantiveText(parts);
  return {
    textHash: text === '' ? undefined : hashFields('user-text', text),
  };
};

const partSize = (part: TurnUserPart): number =>
  part.type === 'text'
    ? part.text.length
    : part.source.kind === 'url'
      ? part.source.url.length
      : part.source.data.length;

const sampled = (text: string): string => {
  if (text.length <= sampleCount * sampleChars) return text;
  const step = Math.floor((text.length - sampleChars) / (sampleCount - 1));
  let samples = '';
  for (let index = 0; index < sampleCount; index += 1) {
    const at = index === sampleCount - 1 ? text.length - sampleChars : index * step;
    samples += text.slice(at, at + sampleChars);
  }
  return samples;
};

const fingerprint = (parts: readonly TurnUserPart[]): string =>
  hashFields(
    'user-message-fingerprint',
    ...parts.flatMap((part) =>
      part.type === 'text'
        ? ['text', String(part.text.length), sampled(part.text)]
        : part.source.kind === 'url'
          ? ['image-url', part.source.url]
          : ['image', part.source.mediaType, String(part.source.data.length), sampled(part.source.data)],
    ),
  );

/** The summary of a user message (other roles: no text). */
export const summarizeUserMessage = (message: TurnMessage): UserMessageSummary => {
  if (message.role !== 'user') return none;
  const known = byMessage.get(message);
  if (known !== undefined) return known;
  let summary: UserMessageSummary;
  if (message.content.reduce((size, part) => size + partSize(part), 0) < largeMessageChars) {
    summary = summarize(message.content);
  } else {
    const key = fingerprint(message.content);
    const cached = byFingerprint.get(key);
    summary = cached ?? summarize(message.content);
    // Re-insert to keep the map in least-recently-used order.
    byFingerprint.delete(key);
    byFingerprint.set(key, summary);
    if (byFingerprint.size > maxFingerprints) {
      const oldest = byFingerprint.keys().next();
      if (oldest.done !== true) byFingerprint.delete(oldest.value);
    }
  }
  byMessage.set(message, summary);
  return summary;
};
