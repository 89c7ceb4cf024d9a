import { describe, expect, it } from 'vitest';

import { collectTurnEvents } from '../../src/protocols/collect-turn-events.js';
import { createTurnError } from '../../src/turn/turn-error.js';
import type { TurnEvent } from '../../src/turn/turn-event.js';
import { emptyUsage } from '../../src/turn/turn-usage.js';

const text: TurnEvent = { type: 'text-delta', id: 't', delta: 'hi' };
const turnEnd: TurnEvent = { type: 'turn-end', stopReason: 'end', usage: emptyUsage() };

/** An iterable over `events` that records whether the reader stopped it early. */
const source = (events: TurnEvent[], options: { throwAfter?: boolean } = {}) => {
  const state = { returned: false };
  const iterable: AsyncIterable<TurnEvent> = {
    async *[Symbol.asyncIterator]() {
      try {
        yield* events;
        if (options.throwAfter === true) throw new Error('upstream broke');
      } finally {
        state.returned = true;
      }
    },
  };
  return { iterable, state };
};

describe('collectTurnEvents', () => {
  it('returns the events through turn-end and stops reading there', async () => {
    const { iterable, state } = source([text, turnEnd, text]);
    expect(await collectTurnEvents(iterable)).toEqual({ ok: true, value: [text, turnEnd] });
    expect(state.returned).toBe(true);
  });

  it('returns the error event as the failure', async () => {
    const error = createTurnError('rate-limit', 'slow down');
    const { iterable } = source([text, { type: 'error', error }, turnEnd]);
    expect(await collectTurnEvents(iterable)).toEqual({ ok: false, error });
  });

  it('turns a thrown error and a missing turn-end into api failures', async () => {
    const thrown = await collectTurnEvents(source([text], { throwAfter: true }).iterable);
    expect(thrown).toMatchObject({
      ok: false,
      error: { kind: 'api', message: expect.stringContaining('upstream broke') },
    });
    const unfinished = await collectTurnEvents(source([text]).iterable);
    expect(unfinished).toMatchObject({
      ok: false,
      error: { kind: 'api', message: expect.stringContaining('without finishing') },
    });
  });

  it('stops reading once the signal has aborted', async () => {
    const abort = new AbortController();
    abort.abort();
    const { iterable, state } = source([text, turnEnd]);
    expect((await collectTurnEvents(iterable, abort.signal)).ok).toBe(false);
    expect(state.returned).toBe(true);
  });
});
