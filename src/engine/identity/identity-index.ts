/**
 * The session registry's identity lookup: maps hashed {@link ConversationIdentity} keys to session ids
 * under these rules — opening retries within the running turn or the retry window and before any
 * later turn, later turns keyed by the first assistant turn, prefix extension without a native id, and a
 * fresh replay when identical openings cannot be told apart. Stores hashes only, never text.
 */

import type { ConversationIdentity } from './conversation-identity.js';

/**
 * How a request maps onto the known sessions:
 * - `existing`: continue `sessionId` — an opening retry (its turn is running or finished within the
 *   retry window, and no later turn came yet) or a later turn of the same conversation;
 * - `new`: create a session — a first opening, an opening that repeats a known one but is not a retry
 *   (so a stateless client never sees an earlier run's history), or a later turn of an unknown conversation;
 * - `fresh-replay`: create a session and replay the full transcript — the later turn belongs to one of
 *   several identical openings that cannot be told apart. `ambiguousSessionIds` are those openings'
 *   sessions; later turns will never reach them again (only an opening retry still can).
 */
export type IdentityResolution =
  | { kind: 'existing'; sessionId: string; reason: 'opening-retry' | 'same-conversation' }
  | { kind: 'new'; reason: 'new-opening' | 'repeated-opening' | 'unknown-conversation' }
  | {
      kind: 'fresh-replay';
      reason: 'indistinguishable-openings';
      ambiguousSessionIds: readonly string[];
    };

export type IdentityIndexOptions = {
  /** How long after an opening's turn finished an identical opening still counts as its retry. Default 60 s. */
  retryWindowMs?: number;
};

type Entry = {
  readonly sessionId: string;
  openingKey: string;
  openingDigest: string;
  /** Bound by the first later turn admitted to the session. */
  firstAssistantKey: string | undefined;
  /** Without a native id: how many user-text prefix hashes the session has seen, and the last one. */
  prefix: { count: number; hash: string } | undefined;
  /** Admitted turns that have not finished yet. */
  running: number;
  finishedAt: number | undefined;
  /** Admission order, for "the most recent session wins". */
  sequence: number;
  /** Admitted as an opening identical to another that had no later turn: its later turns are ambiguous. */
  ambiguous: boolean;
};

const extendsPrefix = (entry: Entry, identity: ConversationIdentity): boolean => {
  if (entry.prefix === undefined || entry.prefix.count === 0) return true;
  return identity.userTextPrefixHashes[entry.prefix.count - 1] === entry.prefix.hash;
};

const latest = (entries: readonly Entry[]): Entry | undefined =>
  entries.reduce<Entry | undefined>(
    (best, entry) =>
      best === undefined ||
      (entry.prefix?.count ?? 0) > (best.prefix?.count ?? 0) ||
      ((entry.prefix?.count ?? 0) === (best.prefix?.count ?? 0) && entry.sequence > best.sequence)
        ? entry
        : best,
    undefined,
  );

/**
 * The session registry's identity lookup. Stores only hashed keys per session id.
 *
 * Protocol, per request: `const identity = computeIdentity(request)`, then `resolve(identity, now)`, then —
 * synchronously, before any await (catalog lookup, agent creation) — `admit(sessionId, identity)` for the
 * session chosen or created; `turnFinished(sessionId, now)` exactly once per admit when that response
 * ends (however it ends); `forget(sessionId)` when the session is disposed.
 */
export class IdentityIndex {
  readonly #retryWindowMs: number;
  readonly #entries = new Map<string, Entry>();
  readonly #byOpening = new Map<string, Set<Entry>>();
  #sequence = 0;

  constructor(options: IdentityIndexOptions = {}) {
    this.#retryWindowMs = options.retryWindowMs ?? 60_000;
  }

  /** Number of sessions indexed. */
  get size(): number {
    return this.#entries.size;
  }

  /** Where `identity` belongs at time `now` (ms). Pure lookup; records nothing. */
  resolve(identity: ConversationIdentity, now: number): IdentityResolution {
    const candidates = this.#candidates(identity);
    const unbound = candidates.filter((entry) => entry.firstAssistantKey === undefined);
    if (identity.isOpening) {
      if (candidates.length === 0) return { kind: 'new', reason: 'new-opening' };
      const previous = latest(unbound);
      const retry =
        previous !== undefined &&
        (previous.running > 0 ||
          (previous.finishedAt !== undefined && now - previous.finishedAt <= this.#retryWindowMs));
      return retry
        ? { kind: 'existing', sessionId: previous.sessionId, reason: 'opening-retry' }
        : { kind: 'new', reason: 'repeated-opening' };
    }
    const bound = latest(
      candidates.filter(
        (entry) =>
          entry.firstAssistantKey !== undefined &&
          entry.firstAssistantKey === identity.firstAssistantKey &&
          extendsPrefix(entry, identity),
      ),
    );
    if (bound !== undefined)
      return { kind: 'existing', sessionId: bound.sessionId, reason: 'same-conversation' };
    const open = unbound.filter((entry) => extendsPrefix(entry, identity));
    const only = open[0];
    if (open.length === 1 && only !== undefined && !only.ambiguous) {
      return { kind: 'existing', sessionId: only.sessionId, reason: 'same-conversation' };
    }
    if (open.length > 0) {
      return {
        kind: 'fresh-replay',
        reason: 'indistinguishable-openings',
        ambiguousSessionIds: open.map((entry) => entry.sessionId),
      };
    }
    return { kind: 'new', reason: 'unknown-conversation' };
  }

  /**
   * Record that `sessionId` now serves `identity` and that one of its turns started. A later turn binds
   * the session to its first assistant turn; a new session admitted with an opening identical to one
   * that had no later turn yet is marked ambiguous (its later turns get a fresh replay).
   */
  admit(sessionId: string, identity: ConversationIdentity): void {
    let entry = this.#entries.get(sessionId);
    if (entry === undefined) {
      entry = {
        sessionId,
        openingKey: identity.openingKey,
        openingDigest: identity.openingDigest,
        firstAssistantKey: undefined,
        prefix: undefined,
        running: 0,
        finishedAt: undefined,
        sequence: 0,
        ambiguous:
          identity.isOpening &&
          this.#candidates(identity).some((other) => other.firstAssistantKey === undefined),
      };
      this.#entries.set(sessionId, entry);
      this.#group(entry.openingKey).add(entry);
    } else if (entry.openingKey !== identity.openingKey || entry.openingDigest !== identity.openingDigest) {
      this.#byOpening.get(entry.openingKey)?.delete(entry);
      this.#dropEmptyGroup(entry.openingKey);
      entry.openingKey = identity.openingKey;
      entry.openingDigest = identity.openingDigest;
      entry.firstAssistantKey = undefined;
      entry.ambiguous = false;
      this.#group(entry.openingKey).add(entry);
    }
    if (!identity.isOpening && identity.firstAssistantKey !== undefined) {
      entry.firstAssistantKey = identity.firstAssistantKey;
    }
    if (!identity.hasNativeId) {
      const hashes = identity.userTextPrefixHashes;
      entry.prefix = { count: hashes.length, hash: hashes.at(-1) ?? '' };
    }
    entry.running += 1;
    this.#sequence += 1;
    entry.sequence = this.#sequence;
  }

  /** One admitted turn of `sessionId` ended at `now` (ms); starts the opening's retry window. */
  turnFinished(sessionId: string, now: number): void {
    const entry = this.#entries.get(sessionId);
    if (entry === undefined) return;
    entry.running = Math.max(0, entry.running - 1);
    entry.finishedAt = now;
  }

  /** Drop a disposed session. */
  forget(sessionId: string): void {
    const entry = this.#entries.get(sessionId);
    if (entry === undefined) return;
    this.#entries.delete(sessionId);
    this.#byOpening.get(entry.openingKey)?.delete(entry);
    this.#dropEmptyGroup(entry.openingKey);
  }

  /** Sessions with the same opening (same key and the same opening texts). */
  #candidates(identity: ConversationIdentity): Entry[] {
    const group = this.#byOpening.get(identity.openingKey);
    if (group === undefined) return [];
    return [...group].filter((entry) => entry.openingDigest === identity.openingDigest);
  }

  #group(openingKey: string): Set<Entry> {
    let group = this.#byOpening.get(openingKey);
    if (group === undefined) {
      group = new Set();
      this.#byOpening.set(openingKey, group);
    }
    return group;
  }

  #dropEmptyGroup(openingKey: string): void {
    if (this.#byOpening.get(openingKey)?.size === 0) this.#byOpening.delete(openingKey);
  }
}
