/**
 * A flight: one producer, read once, whose events every subscriber reads from the first one, in order,
 * however late it subscribed. The producer is read only while a subscriber waits for an event past the
 * end of the buffer and the buffer has room.
 *
 * The replay buffer is bounded by an event count and a byte count (as `sizeOf` counts them). At a bound,
 * the events every subscriber has read are dropped (with none read by all, the producer waits); once one
 * was dropped the flight is no longer `joinable`: a new subscriber would miss the start.
 *
 * Lifecycle: `running` → `finished` (a terminal event was buffered, or the producer ended) | `failed`
 * (`start` or the producer threw; subscribers get the error after the buffered events) | `cancelled`
 * (the last subscriber left before a terminal event, or `cancel()`): the producer is cancelled for real,
 * and `retirement` settles once it stopped, or after the retire bound. After a terminal event the producer
 * is read to its end without demand and what it still yields is discarded. Once a committed event is
 * buffered the work outlives its subscribers: the last one leaving does not cancel the flight, which is
 * read on without demand and cancelled only if no subscriber came back within the orphan timeout.
 */

import { sleep } from '../../lib/sleep.js';

/** What a flight reads: the producer's events and a way to really cancel the work behind them. */
export type FlightProducer<T> = {
  /** Iterated once, on demand, by the flight alone. */
  events: AsyncIterable<T>;
  /** Stop the work (e.g. cancel the SDK run). Must make a pending `next()` of `events` settle soon. */
  cancel: () => Promise<void>;
};

export type FlightOptions<T> = {
  /** Events kept for replay (at least 1). */
  maxBufferedEvents: number;
  /** Bytes, as `sizeOf` counts them, kept for replay. */
  maxBufferedBytes: number;
  sizeOf: (event: T) => number;
  /** The producer's last event for its subscribers: buffering it finishes the flight. */
  isTerminal: (event: T) => boolean;
  /** An event after which the work must survive its subscribers. */
  isCommitted: (event: T) => boolean;
  /** How long a committed flight runs on with no subscriber before it is cancelled after all. */
  orphanTimeoutMs: number;
  /** Bound on waiting for a cancelled producer to stop. */
  retireTimeoutMs: number;
};

/** What the flight tells its owner, synchronously, as it happens. */
export type FlightHooks = {
  /** The flight finished or failed for its subscribers (its producer may still be read to its end). */
  settled?: () => void;
  /** The producer stopped for good: read to its end, failed, or cancelled and returned. */
  stopped?: () => void;
  /** A cancelled flight retired: its producer stopped, or the retire bound passed first. */
  retired?: () => void;
};

export type FlightState =
  | { kind: 'running' }
  | { kind: 'finished' }
  | { kind: 'failed'; error: unknown }
  /** `error`: what the remaining subscribers get (`cancel(error)`); none when the last subscriber left. */
  | { kind: 'cancelled'; error?: unknown; retirement: Promise<void> };

/** One subscriber's place in a flight; read and changed by that flight alone. */
export type FlightCursor = {
  /** Index, from the flight's first event, of the next event this subscriber reads. */
  position: number;
  /** This subscriber stopped: it reads nothing more. */
  left: boolean;
  readonly onStop: (() => void) | undefined;
};

type Deferred = { promise: Promise<void>; resolve: () => void };

const deferred = (): Deferred => {
  let resolve = (): void => {};
  const promise = new Promise<void>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
};

const bounded = (promise: Promise<unknown>, ms: number): Promise<void> => {
  const settled = promise.then(
    () => undefined,
    () => undefined,
  );
  return Promise.race([settled, sleep(ms, { unref: true })]);
};

const done: IteratorReturnResult<undefined> = { done: true, value: undefined };

/** One producer and its subscribers, with a bounded replay buffer. */
export class Flight<T> {
  #state: FlightState = { kind: 'running' };
  readonly #buffer: T[] = [];
  /** How many events were dropped from the head of `#buffer`; joiners need 0. */
  #base = 0;
  /** What `#buffer` holds, as `sizeOf` counts it. */
  #bytes = 0;
  /** A committing event was buffered: the producer outlives its subscribers. */
  #committed = false;
  readonly #cursors = new Set<FlightCursor>();
  #producer: FlightProducer<T> | undefined;
  #cancelling: Promise<void> | undefined;
  /** Runs while a committed flight has no subscriber; cancels it when it fires. */
  #orphanTimer: NodeJS.Timeout | undefined;
  /** A subscriber is waiting for an event past the end of the buffer. */
  #demand = false;
  #started = false;
  /** Settles when the pump has stopped for good. */
  readonly #stopped = deferred();
  // Two wake channels: subscribers wait for events, the pump waits for demand or room. One channel for
  // both would let waiting subscribers wake each other forever. A waiting subscriber is called back
  // synchronously: it hands the event to its consumer in the same microtask the pump buffered it in.
  #eventWaiters: Array<() => void> = [];
  #pumpWake = deferred();
  readonly #options: FlightOptions<T>;
  readonly #hooks: FlightHooks;

  constructor(options: FlightOptions<T>, hooks: FlightHooks = {}) {
    this.#options = options;
    this.#hooks = hooks;
  }

  get state(): FlightState {
    return this.#state;
  }

  /** The buffered events; every event of the producer so far while nothing was dropped. */
  get events(): readonly T[] {
    return this.#buffer;
  }

  /** A new subscriber would read every event from the first: none was dropped, and it is not cancelled. */
  get joinable(): boolean {
    return this.#base === 0 && this.#state.kind !== 'cancelled';
  }

  /** Every event is still buffered, within the byte bound: a finished flight worth keeping for replay. */
  get retainable(): boolean {
    return this.#base === 0 && this.#bytes <= this.#options.maxBufferedBytes;
  }

  /** Settles when the producer has stopped for good. */
  get stopped(): Promise<void> {
    return this.#stopped.promise;
  }

  /**
   * Read the producer `start` returns. Once, after the first `subscribe` (with no subscriber waiting, a
   * flight reads nothing).
   */
  start(start: () => FlightProducer<T> | Promise<FlightProducer<T>>): void {
    if (this.#started) throw new Error('A flight reads one producer.');
    this.#started = true;
    void this.#pump(start);
  }

  /**
   * A new subscriber, reading from the first event. Throws when the flight is not `joinable`. `onStop`
   * runs once when the subscriber stops, whether by `stop` or by reading the flight's end.
   */
  subscribe(onStop?: () => void): FlightCursor {
    if (!this.joinable)
      throw new Error('This flight dropped events or was cancelled: it cannot be replayed.');
    clearTimeout(this.#orphanTimer);
    this.#orphanTimer = undefined;
    const cursor: FlightCursor = { position: 0, left: false, onStop };
    this.#cursors.add(cursor);
    return cursor;
  }

  /**
   * `cursor`'s next event, waiting (and letting the producer be read) until there is one. After the
   * buffered events: done once the flight finished or was cancelled with no error, else its error thrown.
   */
  next(cursor: FlightCursor): Promise<IteratorResult<T>> {
    // Not an async function: the consumer awaits the very promise the pump's event settles.
    return new Promise((resolve, reject) => {
      const check = (): void => {
        let result: IteratorResult<T> | undefined;
        try {
          result = this.#poll(cursor);
        } catch (error) {
          reject(error);
          return;
        }
        if (result !== undefined) return resolve(result);
        this.#eventWaiters.push(check);
        this.#demand = true;
        this.#notifyPump();
      };
      check();
    });
  }

  /** `cursor`'s subscriber stops; the last one leaving a running flight cancels it, unless committed. */
  stop(cursor: FlightCursor): void {
    if (cursor.left) return;
    cursor.left = true;
    cursor.onStop?.();
    this.#leave(cursor);
    this.#notifyEvents();
    this.#notifyPump();
  }

  /** Cancel a running producer for real; `error` is what the remaining subscribers then get. */
  cancel(error?: unknown): void {
    if (this.#state.kind !== 'running') return;
    clearTimeout(this.#orphanTimer);
    const retirement = bounded(this.#stopped.promise, this.#options.retireTimeoutMs).then(() =>
      this.#hooks.retired?.(),
    );
    this.#state =
      error === undefined ? { kind: 'cancelled', retirement } : { kind: 'cancelled', error, retirement };
    void this.#requestCancel();
    this.#notifyPump();
    this.#notifyEvents();
  }

  /** The subscriber's next result if there is one now (throws the flight's failure); else undefined. */
  #poll(cursor: FlightCursor): IteratorResult<T> | undefined {
    if (cursor.left) return done;
    const next = this.#take(cursor);
    if (next !== undefined) return { done: false, value: next.value };
    const state = this.#state;
    if (state.kind === 'running') return undefined;
    this.stop(cursor);
    if (state.kind === 'failed' || (state.kind === 'cancelled' && state.error !== undefined))
      throw state.error;
    return done;
  }

  /** The next event for `cursor`, if buffered. */
  #take(cursor: FlightCursor): { value: T } | undefined {
    const offset = cursor.position - this.#base;
    if (offset >= this.#buffer.length) return undefined;
    cursor.position += 1;
    // A pump blocked on a full buffer may now be able to drop what everyone has read.
    if (this.#full()) this.#notifyPump();
    return { value: this.#buffer[offset] as T };
  }

  /** Buffer one event of the producer. */
  #push(event: T): void {
    this.#buffer.push(event);
    this.#bytes += this.#options.sizeOf(event);
  }

  /** Over a bound: consumed events must be dropped before more are buffered. */
  #full(): boolean {
    return (
      this.#buffer.length >= this.#options.maxBufferedEvents || this.#bytes > this.#options.maxBufferedBytes
    );
  }

  /** Room for one more event, dropping events every subscriber has read once the buffer is full. */
  #hasRoom(): boolean {
    if (!this.#full()) return true;
    let slowest = Infinity;
    for (const cursor of this.#cursors) slowest = Math.min(slowest, cursor.position);
    const drop = Math.min(slowest, this.#base + this.#buffer.length) - this.#base;
    if (drop <= 0) return false;
    for (const event of this.#buffer.splice(0, drop)) this.#bytes -= this.#options.sizeOf(event);
    this.#base += drop;
    return true;
  }

  /** The pump may pull the next event: a subscriber waits for one, or nobody but the work needs it. */
  #wantsMore(): boolean {
    return (this.#demand || (this.#committed && this.#cursors.size === 0)) && this.#hasRoom();
  }

  /** Wake subscribers: an event arrived, the producer ended, or a subscriber stopped. */
  #notifyEvents(): void {
    const waiters = this.#eventWaiters;
    if (waiters.length === 0) return;
    this.#eventWaiters = [];
    for (const waiter of waiters) waiter();
  }

  /** Wake the pump: a subscriber wants an event, buffer room may have freed up, or it was cancelled. */
  #notifyPump(): void {
    const wake = this.#pumpWake;
    this.#pumpWake = deferred();
    wake.resolve();
  }

  #requestCancel(): Promise<void> {
    if (this.#cancelling === undefined && this.#producer !== undefined) {
      this.#cancelling = this.#producer.cancel().catch(() => undefined);
    }
    return this.#cancelling ?? Promise.resolve();
  }

  #leave(cursor: FlightCursor): void {
    this.#cursors.delete(cursor);
    if (this.#cursors.size > 0 || this.#state.kind !== 'running') return;
    // The client may have acted on a committed event (run a tool): the work goes on to its boundary,
    // bounded by the orphan deadline.
    if (this.#committed) {
      this.#orphanTimer = setTimeout(() => {
        if (this.#cursors.size === 0) this.cancel();
      }, this.#options.orphanTimeoutMs);
      this.#orphanTimer.unref();
      return;
    }
    this.cancel();
  }

  /** The flight completed for its subscribers. */
  #settle(state: Extract<FlightState, { kind: 'finished' | 'failed' }>): void {
    this.#state = state;
    clearTimeout(this.#orphanTimer);
    this.#hooks.settled?.();
  }

  // Read through a call: the state changes while the pump awaits.
  #kind(): FlightState['kind'] {
    return this.#state.kind;
  }

  /** The producer's only consumer: pulls an event whenever a subscriber waits and the buffer has room. */
  async #pump(start: () => FlightProducer<T> | Promise<FlightProducer<T>>): Promise<void> {
    let iterator: AsyncIterator<T> | undefined;
    try {
      this.#producer = await start();
      if (this.#kind() === 'cancelled') return;
      iterator = this.#producer.events[Symbol.asyncIterator]();
      for (;;) {
        // Once finished, the producer is read to its end without waiting for demand.
        while (this.#kind() === 'running' && !this.#wantsMore()) await this.#pumpWake.promise;
        if (this.#kind() === 'cancelled') return;
        const result = await iterator.next();
        if (result.done === true) return;
        if (this.#kind() !== 'running') continue;
        this.#push(result.value);
        this.#demand = false;
        if (this.#options.isCommitted(result.value)) this.#committed = true;
        if (this.#options.isTerminal(result.value)) this.#settle({ kind: 'finished' });
        this.#notifyEvents();
      }
    } catch (error) {
      if (this.#kind() === 'running') this.#settle({ kind: 'failed', error });
    } finally {
      if (this.#kind() === 'cancelled') {
        await this.#requestCancel();
        await iterator?.return?.()?.catch(() => undefined);
      }
      if (this.#kind() === 'running') this.#settle({ kind: 'finished' });
      this.#hooks.stopped?.();
      // A retained flight replays from its buffer alone: let the producer (the turn's generator and all
      // it closes over) go now, not when the replay window ends.
      this.#producer = undefined;
      this.#stopped.resolve();
      this.#notifyEvents();
    }
  }
}
