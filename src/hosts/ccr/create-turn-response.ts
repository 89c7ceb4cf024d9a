/**
 * One turn's events → the `Response` the facade hands to CCR: CCR-dialect SSE (pulled, so the engine runs
 * at the reader's pace) or the JSON `chat.completion`, and errors before the stream as a Response with the
 * error's status and the Chat Completions error body.
 */
import { clipTurnError } from '../../logging/clip-turn-error.js';
import type { Logger } from 'pino';
import { createCcrErrorResponse } from './ccr-error.js';
import { CcrStreamEncoder, createCcrJsonResponse } from './turn-to-ccr-events.js';
import type { ResponseMeta } from '../../protocols/protocol-adapter.js';
import type { SseFrame } from '../../protocols/sse-frame.js';
import { serializeSseFrames } from '../../protocols/sse-serialize.js';
import { toTurnError, type TurnError } from '../../turn/turn-error.js';
import type { TurnEvent } from '../../turn/turn-event.js';
import type { TurnWriter } from '../turn-pipeline.js';

/** Idle time before a keepalive comment: undici's fetch gives up on a body silent for 300 s. */
const defaultKeepaliveMs = 10_000;

/** An error before any byte: status, headers (`x-should-retry`) and the Chat Completions error body. */
export const createErrorTurnResponse = (error: TurnError): Response => {
  const answer = createCcrErrorResponse(error);
  return new Response(JSON.stringify(answer.body), {
    status: answer.status,
    headers: { 'content-type': 'application/json', ...answer.headers },
  });
};

export type StreamTurnOptions = {
  meta: ResponseMeta;
  events: AsyncIterable<TurnEvent>;
  /** Aborted when the reader cancels (CCR's fetch or Claude Code went away). */
  abort: AbortController;
  log: Logger;
  keepaliveMs?: number;
  /** Called once when the stream finished or was cancelled. */
  onEnd?: () => void;
};

/**
 * The streaming Response. Frames are produced on demand (`pull`): one upstream event per pull, or a
 * keepalive comment when none arrived for `keepaliveMs`. Cancelling the body aborts the turn.
 */
export const createStreamTurnResponse = (options: StreamTurnOptions): Response => {
  const { meta, abort, log } = options;
  const keepaliveMs = options.keepaliveMs ?? defaultKeepaliveMs;
  const encoder = new CcrStreamEncoder(meta);
  const iterator = options.events[Symbol.asyncIterator]();
  const bytes = new TextEncoder();
  let pending: Promise<IteratorResult<TurnEvent>> | undefined;
  let done = false;

  const finish = (controller: ReadableStreamDefaultController<Uint8Array>, frames: SseFrame[]): void => {
    done = true;
    options.onEnd?.();
    if (frames.length > 0) controller.enqueue(bytes.encode(serializeSseFrames(frames)));
    controller.close();
    if (encoder.droppedReasoningChars > 0) {
      log.debug(
        { droppedReasoningChars: encoder.droppedReasoningChars },
        'reasoning after the answer started is not representable through CCR; dropped',
      );
    }
  };

  const body = new ReadableStream<Uint8Array>(
    {
      start: (controller) => {
        controller.enqueue(bytes.encode(serializeSseFrames(encoder.start())));
      },
      // A pull must enqueue something (or close): the stream does not pull again on its own after a pull
      // that only consumed frameless events, so this loops until a frame, a keepalive or the end.
      pull: async (controller) => {
        while (!done) {
          pending ??= iterator.next();
          let timer: NodeJS.Timeout | undefined;
          const idle = new Promise<'idle'>((resolve) => {
            timer = setTimeout(() => resolve('idle'), keepaliveMs);
            timer.unref();
          });
          let next: IteratorResult<TurnEvent> | 'idle';
          try {
            next = await Promise.race([pending, idle]);
          } catch (error) {
            pending = undefined;
            log.error({ err: error }, 'turn failed in-stream');
            finish(controller, [
              ...encoder.push({ type: 'error', error: toTurnError(error) }),
              ...encoder.end(),
            ]);
            return;
          } finally {
            clearTimeout(timer);
          }
          if (done) return;
          if (next === 'idle') {
            controller.enqueue(bytes.encode(serializeSseFrames([encoder.keepalive()])));
            return;
          }
          pending = undefined;
          if (next.done === true) {
            finish(controller, encoder.end());
            return;
          }
          if (next.value.type === 'error')
            log.warn({ error: clipTurnError(next.value.error) }, 'turn failed in-stream');
          const frames = encoder.push(next.value);
          if (encoder.ended) {
            void iterator.return?.();
            finish(controller, frames);
            return;
          }
          if (frames.length > 0) {
            controller.enqueue(bytes.encode(serializeSseFrames(frames)));
            return;
          }
        }
      },
      cancel: (reason) => {
        done = true;
        options.onEnd?.();
        abort.abort(reason instanceof Error ? reason : new Error('client disconnected'));
        void iterator.return?.();
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, {
    status: 200,
    headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
  });
};

/** The non-streaming Response for every event of a turn, its `turn-end` last. */
export const createJsonTurnResponse = (meta: ResponseMeta, events: readonly TurnEvent[]): Response =>
  new Response(JSON.stringify(createCcrJsonResponse(meta, events)), {
    status: 200,
    headers: { 'content-type': 'application/json' },
  });

/** The facade's {@link TurnWriter}: every answer is a `Response` for llms. */
export const createCcrTurnWriter = (log: () => Logger): TurnWriter<Response> => ({
  error: createErrorTurnResponse,
  stream: ({ meta, events, abort, release }) =>
    createStreamTurnResponse({ meta, events, abort, log: log(), onEnd: release }),
  json: ({ meta }, events) => createJsonTurnResponse(meta, events),
});
