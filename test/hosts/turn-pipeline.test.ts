/**
 * The one turn pipeline every host runs, with a writer that records what it was asked to answer: rejection,
 * warnings, refusal, the answer's identity, stream vs JSON, and when the client's watch is released.
 */
import { describe, expect, it } from 'vitest';
import {
  createWarningLimiter,
  runTurnRequest,
  type AcceptedTurn,
  type TurnHandler,
  type TurnWriter,
} from '../../src/hosts/turn-pipeline.js';
import { BridgeError, createTurnError, type TurnError } from '../../src/turn/turn-error.js';
import type { TurnEvent } from '../../src/turn/turn-event.js';
import type { TurnEvents } from '../../src/turn/turn-model-route.js';
import type { TurnRequest } from '../../src/turn/turn-request.js';
import { captureLog } from '../helpers/capture-log.js';
import { createGate } from '../helpers/gate.js';
import { createTestTurnRequest } from '../helpers/protocols/create-test-turn-request.js';

type Answer =
  | { kind: 'error'; error: TurnError }
  | { kind: 'stream'; turn: AcceptedTurn }
  | { kind: 'json'; turn: AcceptedTurn; events: TurnEvent[] };

const recordingWriter: TurnWriter<Answer> = {
  error: (error) => ({ kind: 'error', error }),
  stream: (turn) => ({ kind: 'stream', turn }),
  json: (turn, events) => ({ kind: 'json', turn, events }),
};

const usage = { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 };
const finished: TurnEvent[] = [
  { type: 'text-start', id: 't' },
  { type: 'text-delta', id: 't', delta: 'Hi' },
  { type: 'text-end', id: 't' },
  { type: 'turn-end', stopReason: 'end', usage },
];

async function* play(events: readonly TurnEvent[], wait?: Promise<void>): AsyncGenerator<TurnEvent> {
  await wait;
  for (const event of events) yield event;
}

const routed = (events: AsyncIterable<TurnEvent>, model: string): TurnEvents =>
  Object.assign(events, { modelRoute: { requested: 'composer-2', model, route: 'catalog' as const } });

/** Runs `turn` through the pipeline; `watch` records the client watch's start and release. */
const run = (turn: TurnRequest | TurnError, handleTurn: TurnHandler) => {
  const { lines, logger } = captureLog('info');
  const watch = { started: 0, released: 0, abort: undefined as AbortController | undefined };
  const answer = runTurnRequest({
    parsed: 'kind' in turn ? { ok: false, error: turn } : { ok: true, value: turn },
    handleTurn,
    log: () => logger,
    warnings: createWarningLimiter(logger),
    idPrefix: 'msg_',
    watchClient: (abort) => {
      watch.started += 1;
      watch.abort = abort;
      return () => (watch.released += 1);
    },
    writer: recordingWriter,
  });
  return { answer, lines, watch };
};

describe('the turn pipeline', () => {
  it('answers a rejected request with its own error, without running the handler', async () => {
    const invalid = createTurnError('invalid-request', 'messages: expected array', { retryable: false });
    let handled = 0;
    const { answer, lines, watch } = run(invalid, async () => {
      handled += 1;
      return play(finished);
    });

    expect(await answer).toEqual({ kind: 'error', error: invalid });
    expect(handled).toBe(0);
    expect(watch.started).toBe(0);
    expect(lines.map((line) => line['msg'])).toEqual(['rejected invalid request']);
  });

  it('logs the warnings the request carries, then runs the turn', async () => {
    const warnings = [
      { code: 'unsupported-field' as const, message: 'ignored top_k' },
      { code: 'unsupported-field' as const, message: 'ignored top_p' },
    ];
    const { answer, lines } = run(createTestTurnRequest({ warnings }), async () => play(finished));
    expect((await answer).kind).toBe('stream');
    // The second of the same code within the window is counted, not logged.
    expect(lines.map((line) => line['msg'])).toEqual(['tolerated unsupported input']);
  });

  it('answers a refused turn as its error and releases the client watch', async () => {
    const refusal = createTurnError('not-found', 'No such model.', { retryable: false });
    const { answer, lines, watch } = run(createTestTurnRequest(), async () => {
      throw new BridgeError(refusal);
    });

    expect(await answer).toEqual({ kind: 'error', error: refusal });
    expect(watch).toMatchObject({ started: 1, released: 1 });
    expect(lines.map((line) => line['msg'])).toEqual(['turn refused']);
  });

  it("hands a stream to the writer with the model that runs and the protocol's id, the watch still on", async () => {
    const events = routed(play(finished), 'claude-opus-4-8');
    const { answer, watch } = run(createTestTurnRequest({ model: 'opus-4.8' }), async () => events);

    const streamed = await answer;
    if (streamed.kind !== 'stream') throw new Error(`expected a stream, got ${streamed.kind}`);
    expect(streamed.turn.events).toBe(events);
    expect(streamed.turn.meta.model).toBe('claude-opus-4-8');
    expect(streamed.turn.meta.id).toMatch(/^msg_[0-9a-f]{24}$/);
    // The writer owns the events now; it releases the watch when they end.
    expect(watch).toMatchObject({ started: 1, released: 0 });
    streamed.turn.release();
    streamed.turn.release();
    expect(watch.released).toBe(1);
  });

  it('answers a non-streaming turn with every event, once the watch is released', async () => {
    const { answer, watch } = run(createTestTurnRequest({ stream: false }), async () => play(finished));

    const answered = await answer;
    expect(answered).toMatchObject({ kind: 'json', events: finished });
    if (answered.kind === 'json') expect(answered.turn.meta.model).toBe('gpt-5.5');
    expect(watch).toMatchObject({ started: 1, released: 1 });
  });

  it("answers a failed non-streaming turn as the turn's error, logged", async () => {
    const failure = createTurnError('rate-limit', 'Slow down.');
    const { answer, lines } = run(createTestTurnRequest({ stream: false }), async () =>
      play([{ type: 'error', error: failure }]),
    );

    expect(await answer).toEqual({ kind: 'error', error: failure });
    expect(lines.map((line) => line['msg'])).toEqual(['turn failed']);
  });

  it('does not log a non-streaming turn whose client went away as a failure', async () => {
    const gate = createGate();
    const { answer, lines, watch } = run(createTestTurnRequest({ stream: false }), async () =>
      play(finished, gate.opened),
    );
    await expect.poll(() => watch.abort).toBeDefined();
    watch.abort?.abort(new Error('client disconnected'));
    gate.open();

    expect((await answer).kind).toBe('error');
    expect(lines).toEqual([]);
    expect(watch.released).toBe(1);
  });
});
