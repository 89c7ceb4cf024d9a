/**
 * Which Cursor model a turn runs on and which rule chose it. The engine attaches it to the turn's events
 * ({@link TurnEvents}); the server reads it for the answer's `model` field (the model that ran, not the
 * name the client sent) and for its access log.
 */

import type { TurnAccount } from './turn-account.js';
import type { TurnEvent } from './turn-event.js';

/**
 * The rule that chose the model:
 * - `explicit`: the client sent `provider,model`;
 * - `catalog`: the name is in Cursor's live model catalog (id or alias, any case);
 * - `listed`: the name is in the Cursor provider's configured `models` (the catalog did not have it, or
 *   could not be read);
 * - `background` / `think` / `default`: the Router's scenario for a name Cursor does not serve
 *   (Claude Code's own names, a client's default model);
 * - `web-search`: `Router.webSearch`, for a request that offers hosted web search (a search side call
 *   runs there whatever its name);
 * - `long-context`: `Router.longContext`, for a request the Router decides whose token count is above
 *   `Router.longContextThreshold`;
 * - `image`: `Router.image`, for a request whose latest turn carries an image (Claude Code Router's rule);
 * - `unmatched`: the name is near catalog models (`gpt-5` when Cursor serves `gpt-5.4`) but none of them;
 *   the Router's scenario ran, and the near names are reported, never substituted.
 */
export type TurnModelRouteKind =
  | 'explicit'
  | 'catalog'
  | 'listed'
  | 'background'
  | 'think'
  | 'default'
  | 'web-search'
  | 'long-context'
  | 'image'
  | 'unmatched';

export type TurnModelRoute = {
  /** The model name as the client sent it. */
  requested: string;
  /** The Cursor model id that runs (a catalog alias already resolved to its id). */
  model: string;
  route: TurnModelRouteKind;
  /** Why the request's name did not run as sent, for the log (e.g. the near catalog names). */
  note?: string;
};

/**
 * A turn's events and, when the handler resolved one, the model route the turn runs on, and what the
 * response used and cost: `account` settles after the events ended — for the response that finished a
 * run, once Cursor's billing answered or its bounded wait ended — with `undefined` for a response that
 * ran nothing (a replay) or failed. It never rejects.
 */
export type TurnEvents = AsyncIterable<TurnEvent> & {
  readonly modelRoute?: TurnModelRoute;
  readonly account?: Promise<TurnAccount | undefined>;
};
