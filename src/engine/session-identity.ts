/**
 * Conversation identity: which Cursor agent a request belongs to. {@link computeIdentity} derives hashed
 * keys from a request (pure); {@link IdentityIndex} is the registry's lookup structure that maps those
 * keys to session ids under the retry and first-assistant rules of the spec ("Sessions").
 *
 * Every key is a sha256 digest; neither the identity nor the index keeps conversation text.
 */

import type { TurnMessage, TurnRequest } from '../turn/turn-request.js';
import { substantiveUserText } from './identity/client-text.js';
import { hashFields } from './identity/hash-fields.js';
import { transcriptShape } from './identity/transcript-shape.js';

/** The hashed identity of one request. */
export type ConversationIdentity = {
  /**
   * The identity namespace: protocol plus the client's native session id (`nativeSessionId`, else
   * `promptCacheKey`) or the anonymous namespace, plus — inside a worker fork — the fork depth, the root
   * context's first user text and every ancestor fork's message, so nested contexts never share a
   * namespace with their parents (sibling workers do; their own messages separate their opening keys).
   */
  readonly namespace: string;
  /** The client sent a native session id (or `prompt_cache_key`). */
  readonly hasNativeId: boolean;
  /** How many fork boundaries the transcript crosses (0 outside worker forks). */
  readonly forkDepth: number;
  /** No assistant turn and no tool result in the current context yet. */
  readonly isOpening: boolean;
  /** Namespace + the first substantive user text of the current context (for a fork: its boundary message). */
  readonly openingKey: string;
  /**
   * Namespace + every substantive user text of the opening (the user messages before the context's first
   * assistant turn or tool result). Two requests repeat the same opening exactly when these are equal.
   */
  readonly openingDigest: string;
  /** The context's first assistant turn: its tool-call ids, else its text. Absent for an opening. */
  readonly firstAssistantKey?: string;
  /**
   * Without a native id: rolling hashes of the context's substantive user texts (`[h1, h2, …]`, each
   * covering all texts up to it). Empty when the client sent a native id.
   */
  readonly userTextPrefixHashes: readonly string[];
};

const nativeIdOf = (request: TurnRequest): string | undefined =>
  request.identity.nativeSessionId?.value ?? request.identity.promptCacheKey;

/** The first substantive user text in `messages[from, to)`, or `''`. */
const firstUserText = (messages: readonly TurnMessage[], from: number, to: number): string => {
  for (let index = from; index < to; index += 1) {
    const message = messages[index];
    if (message?.role !== 'user') continue;
    const text = substantiveUserText(message);
    if (text !== '') return text;
  }
  return '';
};

const assistantKey = (message: TurnMessage | undefined): string | undefined => {
  if (message?.role !== 'assistant') return undefined;
  const callIds = message.content.flatMap((part) => (part.type === 'tool-call' ? [part.toolCallId] : []));
  if (callIds.length > 0) return hashFields('assistant-calls', ...callIds);
  const text = message.content.flatMap((part) => (part.type === 'text' ? [part.text] : []));
  return hashFields('assistant-text', text.join('').trim());
};

/**
 * Derives the identity of a request. Reads only what identity needs: the fork boundaries (user text
 * scanned from the end), the first user texts of the current context and its first assistant turn;
 * without a native id, every substantive user text of the context once. Never changes the request.
 */
export const computeIdentity = (request: TurnRequest): ConversationIdentity => {
  const { messages } = request;
  const shape = transcriptShape(messages);
  const nativeId = nativeIdOf(request);
  const base =
    nativeId === undefined ? ['anonymous', request.protocol] : ['native', request.protocol, nativeId];
  // Inside a worker fork the namespace names the context it was forked from (the root's first text and
  // every ancestor fork's message) and its depth; the worker's own message keys its opening instead.
  const boundaries = shape.forkBoundaries;
  const forkChain =
    boundaries.length === 0
      ? []
      : [
          `depth ${boundaries.length}`,
          hashFields('root', firstUserText(messages, 0, boundaries[0] ?? 0)),
          ...boundaries.slice(0, -1).map((index) => {
            const message = messages[index];
            return hashFields('fork', message === undefined ? '' : substantiveUserText(message));
          }),
        ];
  const namespace = hashFields('namespace', ...base, ...forkChain);

  const start = shape.contextStart;
  let openingEnd = messages.length;
  for (let index = start; index < messages.length; index += 1) {
    const role = messages[index]?.role;
    if (role === 'assistant' || role === 'tool') {
      openingEnd = index;
      break;
    }
  }
  // With a native id only the opening's texts matter; without one, every user text of the context.
  const limit = nativeId === undefined ? messages.length : openingEnd;
  const openingTexts: string[] = [];
  const userTextPrefixHashes: string[] = [];
  let previous = namespace;
  for (let index = start; index < limit; index += 1) {
    const message = messages[index];
    if (message?.role !== 'user') continue;
    const text = substantiveUserText(message);
    if (text === '') continue;
    if (index < openingEnd) openingTexts.push(text);
    if (nativeId === undefined) {
      previous = hashFields('prefix', previous, text);
      userTextPrefixHashes.push(previous);
    }
  }

  const firstAssistantKey = assistantKey(messages[shape.firstAssistant]);
  return {
    namespace,
    hasNativeId: nativeId !== undefined,
    forkDepth: shape.forkBoundaries.length,
    isOpening: shape.isOpening,
    openingKey: hashFields('opening', namespace, openingTexts[0] ?? ''),
    openingDigest: hashFields('opening-segment', namespace, ...openingTexts),
    ...(firstAssistantKey === undefined ? {} : { firstAssistantKey }),
    userTextPrefixHashes,
  };
};

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
