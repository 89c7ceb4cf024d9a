/**
 * The engine's search side calls as a whole: admitting them, sharing and replaying their runs, counting
 * the ones in flight, and accounting what they used (one call's run is `web-search-call.ts`). A side call
 * has no session: while the engine drains, `refuses` decides whether it is taken; once taken it is in
 * flight until its response ends, or until it fails before its stream starts. Identical requests (same
 * protocol, model, search rules and messages) share one run through the engine's coalescer, and a
 * finished one is replayed to a retry as a conversation's turn is. What finished runs used and cost sums
 * into totals of their own; each run's end is counted in the turn metrics by its outcome.
 */

import { hash } from 'node:crypto';
import type { Logger } from 'pino';
import type { BridgeMetrics, TurnOutcome } from '../metrics/bridge-metrics.js';
import { BridgeError, createTurnError, toTurnError } from '../turn/turn-error.js';
import type { TurnEvent } from '../turn/turn-event.js';
import type { TurnEvents, TurnModelRoute } from '../turn/turn-model-route.js';
import type { TurnRequest, TurnWebSearch } from '../turn/turn-request.js';
import type { TurnUsage } from '../turn/turn-usage.js';
import type { UpstreamPort, UpstreamSession } from '../upstream/upstream-port.js';
import type { WorkspacePort } from './engine-deps.js';
import { releaseOnEnd } from './release-on-end.js';
import { messageDigest } from './transcript-digest.js';
import type { FinishedFlight, TurnCoalescer } from './turn-coalescer.js';
import { emptyTotals, type ConversationTotals, type UsageAccounting } from './usage-accounting.js';
import { runWebSearchCall } from './web-search-call.js';

export type WebSearchSideCallsDeps = {
  upstream: UpstreamPort;
  workspace: WorkspacePort;
  logger: Logger;
  metrics: BridgeMetrics;
  accounting: UsageAccounting;
  /** The engine's coalescer: side calls and conversation turns share it, under keys that never meet. */
  coalescer: TurnCoalescer<TurnEvent>;
  /** Whether the engine, draining, refuses this side call. */
  refuses: (request: TurnRequest) => boolean;
  /** The request's model route, resolved, logged and checked as a conversation turn's is. */
  route: (request: TurnRequest) => Promise<{ model: string; modelRoute: TurnModelRoute }>;
  /**
   * Which finished flights of `turnKey` the request is answered from; throws the retained failure when
   * the request is answered with it.
   */
  replaysOf: (turnKey: string, request: TurnRequest) => (finished: FinishedFlight<TurnEvent>) => boolean;
};

const sha = (text: string): string => hash('sha256', text, 'hex');

export class WebSearchSideCalls {
  readonly #deps: WebSearchSideCallsDeps;
  /** What the finished side calls used and cost. */
  readonly #totals = emptyTotals();
  /** Side calls admitted and not yet answered. */
  #inFlight = 0;

  constructor(deps: WebSearchSideCallsDeps) {
    this.#deps = deps;
  }

  /** Side calls admitted and not yet answered: the drain waits for them, and they are turns in progress. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** What the side calls used and cost since the start (a copy). */
  totals(): ConversationTotals {
    return structuredClone(this.#totals);
  }

  /**
   * The side call's events and its model route; throws (before any event) when the side call is refused,
   * its route is unusable, or it retries a failure that is replayed as a plain error.
   */
  async handle(
    request: TurnRequest & { webSearch: TurnWebSearch },
    signal: AbortSignal,
  ): Promise<TurnEvents> {
    if (this.#deps.refuses(request)) {
      const message = 'This bridge process is draining and takes no new conversations; retry.';
      throw new BridgeError(createTurnError('unavailable', message, { retryAfterSeconds: 2 }));
    }
    this.#inFlight += 1;
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.#inFlight -= 1;
    };
    try {
      const { model, modelRoute } = await this.#deps.route(request);
      const digests = request.messages.map(messageDigest);
      // The request's search rules are part of the key: a retry with other rules is another search.
      const rules = JSON.stringify(request.webSearch);
      const turnKey = `web-search\0${sha(`${request.protocol}\0${model}\0${rules}\0${digests.join('\0')}`)}`;
      const replays = this.#deps.replaysOf(turnKey, request);
      const events = this.#deps.coalescer.join(
        turnKey,
        () => {
          const controller = new AbortController();
          return {
            events: this.#events(request, model, controller.signal),
            cancel: async () => controller.abort(),
          };
        },
        { signal, group: turnKey, tag: request.stream ? 'stream' : 'json', replays },
      );
      return Object.assign(
        releaseOnEnd(events, () => release()),
        { modelRoute },
      );
    } catch (error) {
      release();
      throw error;
    }
  }

  /** One run of the side call, its failure turned into an error event, its end counted in the metrics. */
  async *#events(
    request: TurnRequest & { webSearch: TurnWebSearch },
    model: string,
    signal: AbortSignal,
  ): AsyncGenerator<TurnEvent, void> {
    const startedAt = Date.now();
    let outcome: TurnOutcome = 'cancelled';
    let errorKind: string | undefined;
    const { upstream, workspace, logger, metrics, accounting } = this.#deps;
    const deps = {
      upstream,
      workspace,
      logger,
      onFinished: (agent: UpstreamSession, usage: TurnUsage) =>
        void accounting.account(agent, model, usage, this.#totals),
    };
    try {
      for await (const event of runWebSearchCall(deps, request, model, signal)) {
        if (event.type === 'turn-end') outcome = 'finished';
        else if (event.type === 'error') {
          outcome = 'failed';
          errorKind = event.error.kind;
        }
        yield event;
      }
    } catch (error) {
      const turnError = toTurnError(error);
      logger.warn({ error: turnError, err: error, model }, 'web search call failed');
      outcome = 'failed';
      errorKind = turnError.kind;
      yield { type: 'error', error: turnError };
    } finally {
      const ended = signal.aborted && outcome !== 'finished' ? 'cancelled' : outcome;
      metrics.turnEnded(
        request.protocol,
        ended,
        startedAt,
        Date.now(),
        ended === 'failed' ? errorKind : undefined,
      );
    }
  }
}
