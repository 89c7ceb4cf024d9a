/**
 * Conversation identity: which Cursor agent a request belongs to. {@link computeIdentity} derives hashed
 * keys from a request (pure); `IdentityIndex` (`identity-index.ts`) is the registry's lookup structure that
 * maps those keys to session ids: a repeated opening reuses an agent only as a retry, and later turns are
 * keyed by the conversation's first assistant turn.
 *
 * Every key is a sha256 digest; neither the identity nor the index keeps conversation text.
 */

import type { TurnMessage, TurnRequest } from '../../turn/turn-request.js';
import { hashFields } from './hash-fields.js';
import { transcriptShape } from './transcript-shape.js';
import { summarizeUserMessage } from './user-message-summary.js';

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
  /** The context's first assistant turn: its tool-call ids, else its text, else its reasoning. Absent for an opening. */
  readonly firstAssistantKey?: string;
  /**
   * Without a native id: rolling hashes of the context's substantive user texts (`[h1, h2, …]`, each
   * covering all texts up to it). Empty when the client sent a native id.
   */
  readonly userTextPrefixHashes: readonly string[];
};

const nativeIdOf = (request: TurnRequest): string | undefined =>
  request.identity.nativeSessionId?.value ?? request.identity.promptCacheKey;

const textHashOf = (message: TurnMessage | undefined): string | undefined =>
  message === undefined ? undefined : summarizeUserMessage(message).textHash;

/** The hash of the first substantive user text in `messages[from, to)`, or `''`. */
const firstTextHash = (messages: readonly TurnMessage[], from: number, to: number): string => {
  for (let index = from; index < to; index += 1) {
    const hash = textHashOf(messages[index]);
    if (hash !== undefined) return hash;
  }
  return '';
};

/**
 * The first assistant turn's key: its tool-call ids, else its text, else its reasoning (signatures are
 * unique per response; a thinking-only turn must not share the empty key with every other one).
 */
const assistantKey = (message: TurnMessage | undefined): string | undefined => {
  if (message?.role !== 'assistant') return undefined;
  const callIds = message.content.flatMap((part) => (part.type === 'tool-call' ? [part.toolCallId] : []));
  if (callIds.length > 0) return hashFields('assistant-calls', ...callIds);
  const text = message.content
    .flatMap((part) => (part.type === 'text' ? [part.text] : []))
    .join('')
    .trim();
  if (text !== '') return hashFields('assistant-text', text);
  const reasoning = message.content.flatMap((part) =>
    part.type === 'reasoning' ? [part.signature ?? '', part.text] : [],
  );
  return hashFields('assistant-reasoning', ...reasoning);
};

/**
 * Derives the identity of a request. Reads only what identity needs: the fork boundaries, the opening
 * user texts of the current context and its first assistant turn; without a native id, every
 * substantive user text of the context (large ones memoised across requests, see
 * `identity/user-message-summary.ts`). Never changes the request.
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
          firstTextHash(messages, 0, boundaries[0] ?? 0),
          ...boundaries.slice(0, -1).map((index) => textHashOf(messages[index]) ?? ''),
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
    const hash = textHashOf(messages[index]);
    if (hash === undefined) continue;
    if (index < openingEnd) openingTexts.push(hash);
    if (nativeId === undefined) {
      previous = hashFields('prefix', previous, hash);
      userTextPrefixHashes.push(previous);
    }
  }

  const firstAssistantKey = assistantKey(messages[shape.firstAssistant]);
  return {
    namespace,
    hasNativeId: nativeId !== undefined,
    forkDepth: boundaries.length,
    isOpening: shape.isOpening,
    openingKey: hashFields('opening', namespace, openingTexts[0] ?? ''),
    openingDigest: hashFields('opening-segment', namespace, ...openingTexts),
    ...(firstAssistantKey === undefined ? {} : { firstAssistantKey }),
    userTextPrefixHashes,
  };
};
