/**
 * The contract every client protocol folder (`anthropic/`, `openai-chat/`, `openai-responses/`) implements.
 * The server picks an adapter by route and never looks inside the wire formats.
 */

import type { TurnError } from '../turn/turn-error.js';
import type { TurnEvent } from '../turn/turn-event.js';
import type { TurnProtocol, TurnRequest } from '../turn/turn-request.js';
import type { Result } from '../../lib/result.js';
import type { SseFrame } from './sse-frame.js';

/** Identity of the response being produced, fixed before the first byte. */
export type ResponseMeta = {
  /** Protocol-shaped id (`msg_…`, `chatcmpl-…`, `resp_…`). */
  id: string;
  /** The model the answer names: the Cursor model that ran (else, with no route known, the one asked for). */
  model: string;
  /** Unix seconds. */
  createdAt: number;
};

/** A parsed request, or the `invalid-request` error naming what is wrong. */
export type ParseResult = Result<TurnRequest, TurnError>;

/** An HTTP error answer in the protocol's own envelope. */
export type ErrorResponse = { status: number; headers: Record<string, string>; body: unknown };

/**
 * A stateful stream encoder. `push` returns the frames for one event (possibly none); after a `turn-end`
 * or `error` event it emits the protocol's terminal frames. `end()` is idempotent and guarantees the
 * terminal frames exist even when the upstream vanished without a terminal event: it closes open blocks
 * and emits one terminal event (treating a missing end as an `api` error).
 */
export interface StreamEncoder {
  /** Frames to send as soon as the response starts (before any upstream event), e.g. `message_start`. */
  start(): SseFrame[];
  push(event: TurnEvent): SseFrame[];
  end(): SseFrame[];
  /** A frame that keeps idle clients and proxies from timing out. */
  keepalive(): SseFrame;
  /** True once terminal frames have been produced. */
  readonly ended: boolean;
}

export interface ProtocolAdapter {
  readonly protocol: TurnProtocol;
  /** Request prefix for response ids, e.g. `msg_`. */
  readonly idPrefix: string;
  /** Parse a JSON body (already `JSON.parse`d) plus lower-cased headers into a TurnRequest. */
  parseRequest(body: unknown, headers: Record<string, string>): ParseResult;
  createStreamEncoder(request: TurnRequest, meta: ResponseMeta): StreamEncoder;
  /**
   * The non-streaming JSON body for a complete event list ending in `turn-end` (errors go to
   * createErrorResponse): the events run through this protocol's stream encoder, then its snapshot is
   * read (`createJsonResponseFromEvents`), so the body and the stream never disagree.
   */
  createJsonResponse(request: TurnRequest, meta: ResponseMeta, events: TurnEvent[]): unknown;
  /** An error before any byte was sent: status, headers and body in the protocol's envelope. */
  createErrorResponse(error: TurnError): ErrorResponse;
}
