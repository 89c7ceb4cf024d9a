/**
 * The HTTP server's {@link TurnWriter}: a turn's answer written to the client's response in the protocol of
 * its route — SSE through {@link SseWriter} (backpressure, keepalive, stall deadline), or one JSON body.
 */
import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { clipTurnError } from '../../logging/clip-turn-error.js';
import type { ProtocolAdapter } from '../../protocols/protocol-adapter.js';
import { createTurnError, toTurnError } from '../../turn/turn-error.js';
import type { TurnEvent } from '../../turn/turn-event.js';
import type { AcceptedTurn, TurnWriter } from '../turn-pipeline.js';
import { sendJson } from './send-json.js';
import { SseWriter } from './sse-writer.js';

export type HttpTurnWriterOptions = {
  adapter: ProtocolAdapter;
  response: ServerResponse;
  log: () => Logger;
  /** Idle time before an SSE keepalive frame. */
  keepaliveMs: number;
  /** A stream blocked this long on a client that does not read is cancelled and closed (0: never). */
  stallTimeoutMs: number;
  /** Records the time to first byte: called after every event written, and after the JSON answer. */
  firstByte: () => void;
};

/**
 * `events` with its first `next()` already called: iterating the result goes on from there (`return()`
 * reaches `events`). A rejection of that first call is left to whoever iterates.
 */
const startIterating = <T>(events: AsyncIterable<T>): AsyncIterable<T> => {
  const iterator = events[Symbol.asyncIterator]();
  let first: Promise<IteratorResult<T>> | undefined = iterator.next();
  first.catch(() => undefined);
  return {
    [Symbol.asyncIterator]: () => ({
      next: () => {
        const next = first ?? iterator.next();
        first = undefined;
        return next;
      },
      return: () => iterator.return?.() ?? Promise.resolve({ done: true, value: undefined }),
    }),
  };
};

/** Resolves once the microtasks queued so far, and those they queue, have all run. */
const afterMicrotasks = (): Promise<void> => new Promise((resolve) => process.nextTick(resolve));

/** A block's first event: nothing a client shows until the block's content follows. */
const opensBlock = (event: TurnEvent): boolean =>
  event.type === 'text-start' || event.type === 'reasoning-start' || event.type === 'tool-input-start';

export const createHttpTurnWriter = (options: HttpTurnWriterOptions): TurnWriter<void> => {
  const { adapter, response, log, firstByte, stallTimeoutMs } = options;

  const stream = async ({ turn, meta, events, abort, release }: AcceptedTurn): Promise<void> => {
    // The turn's first steps run before the response's setup: resuming a parked run hands the client's
    // tool results to the upstream before anything here (encoder, headers, message_start) is built. They
    // run up to their first wait (the upstream's answer, a workspace's files), so the stream still opens
    // before the upstream produced anything.
    const started = startIterating(events);
    await afterMicrotasks();
    const encoder = adapter.createStreamEncoder(turn, meta);
    const writer = new SseWriter(response, {
      keepaliveMs: options.keepaliveMs,
      keepalive: () => encoder.keepalive(),
      stallTimeoutMs,
      onStall: () => log().warn({ stallTimeoutMs }, 'client stopped reading; cancelling'),
    });
    writer.hold(encoder.start());
    try {
      // Leaving the loop stops this subscriber, which cancels the run (unless a tool call committed it).
      for await (const event of started) {
        if (abort.signal.aborted || writer.stalled) break;
        if (event.type === 'error')
          log().warn({ error: clipTurnError(event.error) }, 'turn failed in-stream');
        // A block's start leaves with what follows it. Otherwise awaited only when the socket is full:
        // no promise per event while the client keeps up.
        if (opensBlock(event)) writer.hold(encoder.push(event));
        else {
          const blocked = writer.write(encoder.push(event));
          if (blocked !== undefined) await blocked;
        }
        firstByte();
        if (encoder.ended) break;
      }
    } catch (error) {
      const turnError = toTurnError(error);
      log().error({ err: error }, 'turn failed in-stream');
      await writer.write(encoder.push({ type: 'error', error: turnError }));
    } finally {
      release();
    }
    if (writer.stalled && !encoder.ended) {
      const message = `The client did not read the response for ${stallTimeoutMs} ms; the turn was cancelled.`;
      await writer.write(encoder.push({ type: 'error', error: createTurnError('timeout', message) }));
    }
    await writer.end(encoder.end());
  };

  return {
    error: (error) => {
      if (response.headersSent || response.destroyed) return;
      const answer = adapter.createErrorResponse(error);
      sendJson(response, answer.status, answer.body, answer.headers);
    },
    stream,
    json: ({ turn, meta, abort }, events) => {
      if (abort.signal.aborted || response.destroyed) return;
      sendJson(response, 200, adapter.createJsonResponse(turn, meta, events));
      firstByte();
    },
  };
};
