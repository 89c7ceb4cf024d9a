/**
 * What identity needs from one user message: the exact hash of its substantive text. Summaries are
 * memoised so a follow-up request does not strip and hash megabytes of old text again:
 * - per message object (one request is analysed by identity and classification alike);
 * - across requests, for large messages only, keyed by the message's exact transcript digest
 *   ({@link messageDigest}, which the engine computes for every message of every request anyway). Every
 *   request is a freshly parsed object graph, so object identity cannot carry over; the digest covers
 *   every character, so only an identical message finds a memoised summary.
 *
 * Only hashes are cached — never text.
 */

import type { TurnMessage } from '../../turn/turn-request.js';
import { messageDigest } from '../transcript-digest.js';
import { substantiveText } from './client-text.js';
import { hashFields } from './hash-fields.js';

export type UserMessageSummary = {
  /** Exact hash of the substantive text, or undefined when the message has none. */
  readonly textHash: string | undefined;
};

/** Messages with at least this much raw content are memoised across requests. */
const largeMessageChars = 32 * 1024;
const maxMemoised = 4_096;

const none: UserMessageSummary = { textHash: undefined };
const byMessage = new WeakMap<TurnMessage, UserMessageSummary>();
/** Least recently used first. */
const byDigest = new Map<string, UserMessageSummary>();

const summarize = (message: Extract<TurnMessage, { role: 'user' }>): UserMessageSummary => {
  const text = substantiveText(message.content);
  return { textHash: text === '' ? undefined : hashFields('user-text', text) };
};

const contentChars = (message: Extract<TurnMessage, { role: 'user' }>): number =>
  message.content.reduce(
    (size, part) =>
      size +
      (part.type === 'text'
        ? part.text.length
        : part.source.kind === 'url'
          ? part.source.url.length
          : part.source.data.length),
    0,
  );

/** The summary of a user message (other roles: no text). */
export const summarizeUserMessage = (message: TurnMessage): UserMessageSummary => {
  if (message.role !== 'user') return none;
  const known = byMessage.get(message);
  if (known !== undefined) return known;
  let summary: UserMessageSummary;
  if (contentChars(message) < largeMessageChars) {
    summary = summarize(message);
  } else {
    const key = messageDigest(message);
    summary = byDigest.get(key) ?? summarize(message);
    // Re-insert to keep the map in least-recently-used order.
    byDigest.delete(key);
    byDigest.set(key, summary);
    if (byDigest.size > maxMemoised) {
      const oldest = byDigest.keys().next();
      if (oldest.done !== true) byDigest.delete(oldest.value);
    }
  }
  byMessage.set(message, summary);
  return summary;
};
