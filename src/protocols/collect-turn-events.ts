import type { Result } from '../../lib/result.js';
import { createTurnError, toTurnError, type TurnError } from '../turn/turn-error.js';
import type { TurnEvent } from '../turn/turn-event.js';

/**
 * A turn's events for a non-streaming answer: everything up to and including its `turn-end`, or the
 * turn's failure — its `error` event, an exception from the iterable, or an end without `turn-end`
 * (an `api` error). Stops reading (the iterable's `return()` runs) at the terminal event or once
 * `signal` has aborted; the caller checks the signal before answering.
 */
export const collectTurnEvents = async (
  events: AsyncIterable<TurnEvent>,
  signal?: AbortSignal,
): Promise<Result<TurnEvent[], TurnError>> => {
  const collected: TurnEvent[] = [];
  try {
    for await (const event of events) {
      if (signal?.aborted === true) break;
      if (event.type === 'error') return { ok: false, error: event.error };
      collected.push(event);
      if (event.type === 'turn-end') return { ok: true, value: collected };
    }
  } catch (error) {
    return { ok: false, error: toTurnError(error) };
  }
  return { ok: false, error: createTurnError('api', 'The upstream run ended without finishing the turn.') };
};
