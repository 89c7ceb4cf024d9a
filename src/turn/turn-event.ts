/**
 * The neutral output stream. The engine produces `AsyncIterable<TurnEvent>`; each protocol encoder turns
 * it into wire events. Ordering contract:
 * - blocks never interleave: a `*-start` is followed by its deltas and its `*-end` before the next block starts;
 * - `reasoning-*` blocks come before text and tool calls of the same step whenever the upstream allows;
 * - `tool-call` follows its `tool-input-end` and carries the complete JSON arguments;
 * - exactly one terminal event ends the stream: `turn-end`, or `error` (after which the encoder still
 *   emits the protocol's terminal events).
 */

import type { TurnError } from './turn-error.js';
import type { TurnUsage } from './turn-usage.js';

/** Why a turn ended. `tool-use`: the client must run the listed tools and post the results. */
export type TurnStopReason = 'end' | 'tool-use' | 'max-tokens' | 'refusal';

/** A page a hosted web search found or opened. `snippet`: an excerpt of the page when known. */
export type TurnWebSource = { url: string; title: string; snippet?: string; pageAge?: string };

/**
 * Why a hosted web search gave no sources: `unavailable` (the search failed or was refused upstream, e.g.
 * a team that turned web search off), `max-uses-exceeded` (more searches than the request's `maxUses`;
 * the bridge refused it), `not-performed` (the model answered a forced search without searching).
 */
export type TurnWebSearchErrorCode = 'unavailable' | 'max-uses-exceeded' | 'not-performed';

/**
 * One hosted web search (or page open), complete: the server ran it before the event is emitted.
 * `action`: what was searched for or opened; `outcome`: the sources found (already filtered by the
 * request's domain rules) or why there are none.
 */
export type TurnWebSearchCall = {
  type: 'web-search';
  id: string;
  action: { kind: 'search'; query: string } | { kind: 'open-page'; url: string };
  outcome:
    | { status: 'completed'; sources: TurnWebSource[] }
    | { status: 'failed'; code: TurnWebSearchErrorCode; message: string };
};

export type TurnEvent =
  | { type: 'text-start'; id: string }
  | { type: 'text-delta'; id: string; delta: string }
  | { type: 'text-end'; id: string }
  | { type: 'reasoning-start'; id: string }
  | { type: 'reasoning-delta'; id: string; delta: string }
  /** `signature` closes the block (Anthropic `signature_delta`); the engine always supplies one. */
  | { type: 'reasoning-end'; id: string; signature: string }
  | { type: 'tool-input-start'; id: string; toolName: string; kind: 'function' | 'custom' }
  | { type: 'tool-input-delta'; id: string; delta: string }
  | { type: 'tool-input-end'; id: string }
  /** `input` is the complete argument text: JSON for function tools, the raw string for custom tools. */
  | { type: 'tool-call'; toolCallId: string; toolName: string; kind: 'function' | 'custom'; input: string }
  /** A hosted web search the server ran; a block of its own, between other blocks. */
  | TurnWebSearchCall
  /** Latest cumulative usage for this response; encoders keep the last one. */
  | { type: 'usage'; usage: TurnUsage }
  | { type: 'turn-end'; stopReason: TurnStopReason; usage: TurnUsage }
  | { type: 'error'; error: TurnError };
