/**
 * One turn, the same in every host (the HTTP server; the CCR 1/2 transformer facade; the CCR 3 plugin, which
 * serves through the HTTP server's routes): the parsed request, or its rejection → the warnings it carries,
 * rate-limited → the client's connection watched → the engine's handler → a refusal answered as the
 * protocol's error → the answer's identity → the events streamed, or collected into one JSON body → the
 * connection released. A host reads its request, watches its client and writes its answers
 * ({@link TurnWriter}); everything between is here.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { clipText } from '../../lib/clip-text.js';
import { clipTurnError } from '../logging/clip-turn-error.js';
import { RepeatLimiter, REPEATED_WARNINGS_MESSAGE } from '../logging/repeat-limiter.js';
import { collectTurnEvents } from '../protocols/collect-turn-events.js';
import type { ParseResult, ResponseMeta } from '../protocols/protocol-adapter.js';
import { toTurnError, type TurnError } from '../turn/turn-error.js';
import type { TurnEvent } from '../turn/turn-event.js';
import type { TurnEvents } from '../turn/turn-model-route.js';
import type { TurnRequest } from '../turn/turn-request.js';

/**
 * Runs one turn. Resolves once everything that can fail as a plain HTTP error (auth, model routing)
 * has been checked — fast when cached — and rejects with a BridgeError otherwise. The iterable then
 * yields the turn's events; the host stops consuming (calling `return()`) when the client goes away,
 * and `signal` aborts at the same moment. The iterable's `modelRoute`, when set, names the model that runs
 * and the route that chose it; the answer names that model.
 */
export type TurnHandler = (request: TurnRequest, signal: AbortSignal) => Promise<TurnEvents>;

/** A turn the handler accepted, as a host's writer answers it. */
export type AcceptedTurn = {
  turn: TurnRequest;
  meta: ResponseMeta;
  events: TurnEvents;
  /** Aborted when the client goes away: by the host's connection watcher, or by the writer itself. */
  abort: AbortController;
  /** Stops watching the client. Idempotent; a stream's writer calls it once the events ended. */
  release: () => void;
};

/**
 * How a host answers. `Answer` is what an answer is to the host: nothing for a socket written in place (the
 * HTTP server, done when the answer is), a `Response` handed back (the CCR facade). A writer whose client is
 * gone writes nothing.
 */
export interface TurnWriter<Answer> {
  /** An error before any byte: a rejected request, a refused turn, a non-streaming turn that failed. */
  error(error: TurnError): Answer | Promise<Answer>;
  /**
   * The streaming answer. Owns `turn.events` from here: iterates them or calls their `return()`, and calls
   * `turn.release()` once they ended, however they ended.
   */
  stream(turn: AcceptedTurn): Answer | Promise<Answer>;
  /** The non-streaming answer for every event of the turn, its `turn-end` last; the client is released. */
  json(turn: AcceptedTurn, events: TurnEvent[]): Answer | Promise<Answer>;
}

export type TurnRequestOptions<Answer> = {
  /** The request as the host parsed it, or why it is invalid (answered as the protocol's 400). */
  parsed: ParseResult;
  handleTurn: TurnHandler;
  /** The request's logger, made on first use (a request that goes well logs nothing). */
  log: () => Logger;
  /** The host's `tolerated unsupported input` rate limit ({@link createWarningLimiter}). */
  warnings: RepeatLimiter;
  /** The protocol's response id prefix (`msg_`, `chatcmpl-`, `resp_`); 24 random hex digits follow. */
  idPrefix: string;
  /**
   * Starts watching the client: aborts `abort` when it goes away before its answer is complete. Returns
   * the stop, called once the turn's events ended (or never started).
   */
  watchClient: (abort: AbortController) => () => void;
  writer: TurnWriter<Answer>;
};

/**
 * A host's `tolerated unsupported input` rate limit: a warning code is logged once, then its repeats are
 * counted and logged once per window (`intervalMs`, default 60 s).
 */
export const createWarningLimiter = (logger: Logger, intervalMs?: number): RepeatLimiter =>
  new RepeatLimiter({
    ...(intervalMs === undefined ? {} : { intervalMs }),
    // The count names what it counted: up to five distinct messages (each names the tool or field).
    onRepeats: (code, repeats, examples) =>
      logger.warn({ warning: { code }, repeats, examples }, REPEATED_WARNINGS_MESSAGE),
  });

/** Runs `stop` on the first call only. */
const once = (stop: () => void): (() => void) => {
  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    stop();
  };
};

/**
 * Runs one parsed request through the handler and answers it with the host's writer. Resolves with the
 * writer's answer: for a stream, once it is set up (the events still flowing); otherwise once complete.
 */
export const runTurnRequest = async <Answer>(options: TurnRequestOptions<Answer>): Promise<Answer> => {
  const { parsed, log, writer } = options;
  if (!parsed.ok) {
    log().info({ error: clipTurnError(parsed.error) }, 'rejected invalid request');
    return writer.error(parsed.error);
  }
  const turn = parsed.value;
  for (const warning of turn.warnings) {
    if (options.warnings.admit(warning.code, clipText(warning.message, 200)))
      log().warn({ warning }, 'tolerated unsupported input');
  }

  const abort = new AbortController();
  const release = once(options.watchClient(abort));
  let events: TurnEvents;
  try {
    events = await options.handleTurn(turn, abort.signal);
  } catch (error) {
    release();
    const turnError = toTurnError(error);
    log().warn({ error: clipTurnError(turnError) }, 'turn refused');
    return writer.error(turnError);
  }
  const meta: ResponseMeta = {
    id: `${options.idPrefix}${randomBytes(12).toString('hex')}`,
    // The Cursor model that runs (a catalog alias resolved to its id), else the one asked for.
    model: events.modelRoute?.model ?? turn.model,
    createdAt: Math.floor(Date.now() / 1000),
  };
  const accepted: AcceptedTurn = { turn, meta, events, abort, release };
  if (turn.stream) return writer.stream(accepted);

  let collected: Awaited<ReturnType<typeof collectTurnEvents>>;
  try {
    collected = await collectTurnEvents(events, abort.signal);
  } finally {
    release();
  }
  if (collected.ok) return writer.json(accepted, collected.value);
  // A client that went away is no failure of the turn.
  if (!abort.signal.aborted) log().warn({ error: clipTurnError(collected.error) }, 'turn failed');
  return writer.error(collected.error);
};
