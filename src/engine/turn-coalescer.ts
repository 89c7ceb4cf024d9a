/**
 * Coalesces identical overlapping requests onto one producer: the first `join` for a key starts it, later
 * joins subscribe and replay its events from the start, so one logical turn has exactly one upstream send
 * and one consumer of the upstream iterator. The replay buffer is bounded; once it had to drop events, a
 * new joiner gets an error instead of a partial answer.
 *
 * Lifecycle: when the LAST subscriber stops (iterator `return()` or its abort signal) before the producer
 * ended, the producer is cancelled for real and its bounded retirement runs; a join for the same key or
 * group during retirement waits for it before a replacement producer starts. A producer that ended is
 * dropped at once, or kept for `retainMs` so a retry arriving just after completion replays the finished
 * answer (or the same failure) instead of starting a second run.
 */

import { BridgeError, createTurnError } from '../turn/turn-error.js';

/** What `start` returns: the producer's events and a way to really cancel the work behind them. */
export type CoalescedProducer<T> = {
  /** Iterated once, on demand, by the coalescer alone. */
  events: AsyncIterable<T>;
  /** Stop the work (e.g. cancel the SDK run). Must make a pending `next()` of `events` settle soon. */
  cancel: () => Promise<void>;
};

export type TurnCoalescerOptions = {
  /** Events kept for replay; beyond this, consumed events are dropped and joiners are refused. Default 10 000. */
  maxBufferedEvents?: number;
  /** How long a completed producer stays joinable for replay. Default 0 (dropped at completion). */
  retainMs?: number;
  /** Bound on waiting for a cancelled producer to retire. Default 5 s. */
  retireTimeoutMs?: number;
};

export type JoinOptions = {
  /** Stops this subscriber like `return()` does. */
  signal?: AbortSignal;
  /**
   * Producers that must never overlap a retiring one (e.g. the session id: one run per agent). A new
   * producer in the group starts only after every cancelled producer of the group has retired.
   */
  group?: string;
};

type Cursor = { position: number };

type Deferred = { promise: Promise<void>; resolve: () => void };

const deferred = (): Deferred => {
  let resolve = (): void => {};
  const promise = new Promise<void>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
};

const bounded = (promise: Promise<unknown>, ms: number): Promise<void> =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    void promise.then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      () => {
        clearTimeout(timer);
        resolve();
      },
    );
  });

/** One producer and its subscribers. */
class Flight<T> {
  readonly buffer: T[] = [];
  /** How many events were dropped from the head of `buffer`; joiners need 0. */
  base = 0;
  readonly cursors = new Set<Cursor>();
  ended = false;
  failure: { error: unknown } | undefined;
  cancelled = false;
  retirement: Promise<void> | undefined;
  producer: CoalescedProducer<T> | undefined;
  cancelling: Promise<void> | undefined;
  retainTimer: NodeJS.Timeout | undefined;
  /** A subscriber is waiting for an event past the end of the buffer. */
  demand = false;
  /** Settles when the pump has stopped for good. */
  readonly finished = deferred();
  // Two wake channels: subscribers wait for events, the pump waits for demand or room. One channel for
  // both would let waiting subscribers wake each other forever.
  #eventsWake = deferred();
  #pumpWake = deferred();

  constructor(
    readonly group: string | undefined,
    readonly maxBuffered: number,
  ) {}

  eventsChanged(): Promise<void> {
    return this.#eventsWake.promise;
  }

  pumpChanged(): Promise<void> {
    return this.#pumpWake.promise;
  }

  /** Wake subscribers: an event arrived, the producer ended, or a subscriber stopped. */
  notifyEvents(): void {
    const wake = this.#eventsWake;
    this.#eventsWake = deferred();
    wake.resolve();
  }

  /** Wake the pump: a subscriber wants an event, buffer room may have freed up, or it was cancelled. */
  notifyPump(): void {
    const wake = this.#pumpWake;
    this.#pumpWake = deferred();
    wake.resolve();
  }

  /** The next event for `cursor`, if buffered. */
  take(cursor: Cursor): { value: T } | undefined {
    const offset = cursor.position - this.base;
    if (offset >= this.buffer.length) return undefined;
    cursor.position += 1;
    // A pump blocked on a full buffer may now be able to drop what everyone has read.
    if (this.buffer.length >= this.maxBuffered) this.notifyPump();
    return { value: this.buffer[offset] as T };
  }

  /** Room for one more event, dropping events every subscriber has read once the buffer is full. */
  hasRoom(): boolean {
    if (this.buffer.length < this.maxBuffered) return true;
    let slowest = Infinity;
    for (const cursor of this.cursors) slowest = Math.min(slowest, cursor.position);
    const drop = Math.min(slowest, this.base + this.buffer.length) - this.base;
    if (drop <= 0) return false;
    this.buffer.splice(0, drop);
    this.base += drop;
    return true;
  }

  requestCancel(): Promise<void> {
    if (this.cancelling === undefined && this.producer !== undefined) {
      this.cancelling = this.producer.cancel().catch(() => undefined);
    }
    return this.cancelling ?? Promise.resolve();
  }
}

const replayOverflow = (): BridgeError =>
  new BridgeError(
    createTurnError(
      'overloaded',
      'An identical request is still streaming and its output is too long to replay; retry when it has finished.',
    ),
  );

const shuttingDown = (): BridgeError =>
  new BridgeError(createTurnError('overloaded', 'The bridge is shutting down.'));

/** Coalesces identical overlapping requests onto one bounded, replayable producer per key. */
export class TurnCoalescer<T> {
  readonly #flights = new Map<string, Flight<T>>();
  readonly #retiring = new Set<Flight<T>>();
  readonly #maxBuffered: number;
  readonly #retainMs: number;
  readonly #retireTimeoutMs: number;
  #closed = false;

  constructor(options: TurnCoalescerOptions = {}) {
    this.#maxBuffered = Math.max(1, options.maxBufferedEvents ?? 10_000);
    this.#retainMs = options.retainMs ?? 0;
    this.#retireTimeoutMs = options.retireTimeoutMs ?? 5_000;
  }

  /** Keys with a live, retained or retiring producer. */
  get size(): number {
    return this.#flights.size;
  }

  /** True when a join for `key` would attach to (or wait for) an existing producer. */
  has(key: string): boolean {
    return this.#flights.has(key);
  }

  /**
   * Subscribe to the producer for `key`, calling `start` to create it when there is none. Iterating
   * yields every event of the producer from its first one; the producer's failure (or `start`'s) is
   * thrown after the buffered events. Creating the iterator subscribes to a live producer at once (so
   * always iterate it to the end or call `return()`); otherwise the first `next()` starts a producer
   * (after any retirement of the same key or group) or fails with a BridgeError `overloaded` when the
   * replay buffer already dropped events or the coalescer is closed. `start` runs once per producer.
   */
  join(
    key: string,
    start: () => CoalescedProducer<T> | Promise<CoalescedProducer<T>>,
    options: JoinOptions = {},
  ): AsyncIterable<T> {
    return { [Symbol.asyncIterator]: () => this.#subscribe(key, start, options) };
  }

  /** Resolves once no cancelled producer of `group` is still retiring. */
  async settled(group: string): Promise<void> {
    for (;;) {
      const pending = [...this.#retiring].filter((flight) => flight.group === group);
      if (pending.length === 0) return;
      await Promise.all(pending.map((flight) => flight.retirement));
    }
  }

  /** Cancel every live producer (its subscribers get an `overloaded` error) and await their retirement. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const flights = [...this.#flights.values()];
    for (const flight of flights) {
      clearTimeout(flight.retainTimer);
      if (!flight.ended && !flight.cancelled) {
        flight.failure = { error: shuttingDown() };
        this.#cancel(flight);
      }
    }
    await Promise.all(flights.map((flight) => flight.retirement));
    this.#flights.clear();
  }

  #subscribe(
    key: string,
    start: () => CoalescedProducer<T> | Promise<CoalescedProducer<T>>,
    options: JoinOptions,
  ): AsyncIterator<T> {
    const { signal, group } = options;
    let flight: Flight<T> | undefined;
    let cursor: Cursor | undefined;
    let stopped = false;
    const done: IteratorReturnResult<undefined> = { done: true, value: undefined };
    const stop = (): void => {
      if (stopped) return;
      stopped = true;
      signal?.removeEventListener('abort', stop);
      if (flight !== undefined && cursor !== undefined) this.#leave(flight, cursor);
      flight?.notifyEvents();
      flight?.notifyPump();
    };
    signal?.addEventListener('abort', stop, { once: true });
    if (signal?.aborted) stop();
    // Joining a live producer subscribes at once, so the joiner's replay is guaranteed from here on;
    // anything else (start, wait for a retirement, refuse) happens on the first next().
    const live = this.#flights.get(key);
    if (!stopped && live !== undefined && !live.cancelled && live.base === 0) {
      flight = live;
      cursor = { position: 0 };
      live.cursors.add(cursor);
    }

    return {
      next: async (): Promise<IteratorResult<T>> => {
        if (stopped) return done;
        if (flight === undefined || cursor === undefined) {
          const attached = await this.#attach(key, start, group, () => stopped);
          if (attached === undefined) return done;
          ({ flight, cursor } = attached);
        }
        for (;;) {
          if (stopped) return done;
          const next = flight.take(cursor);
          if (next !== undefined) return { done: false, value: next.value };
          // A cancelled flight is terminal for its remaining subscribers too (close() cancels with a failure).
          if (flight.ended || flight.cancelled) {
            const failure = flight.failure;
            stop();
            if (failure !== undefined) throw failure.error;
            return done;
          }
          const changed = flight.eventsChanged();
          flight.demand = true;
          flight.notifyPump();
          await changed;
        }
      },
      return: async (): Promise<IteratorResult<T>> => {
        stop();
        return done;
      },
    };
  }

  /** Attach a cursor to the key's producer, starting one (after any retirement in its group) if needed. */
  async #attach(
    key: string,
    start: () => CoalescedProducer<T> | Promise<CoalescedProducer<T>>,
    group: string | undefined,
    stopped: () => boolean,
  ): Promise<{ flight: Flight<T>; cursor: Cursor } | undefined> {
    for (;;) {
      if (this.#closed) throw shuttingDown();
      if (stopped()) return undefined;
      const existing = this.#flights.get(key);
      if (existing !== undefined && existing.cancelled) {
        await existing.retirement;
        continue;
      }
      if (existing !== undefined) {
        if (existing.base > 0) throw replayOverflow();
        const cursor: Cursor = { position: 0 };
        existing.cursors.add(cursor);
        return { flight: existing, cursor };
      }
      if (group !== undefined && [...this.#retiring].some((flight) => flight.group === group)) {
        await this.settled(group);
        continue;
      }
      const flight = new Flight<T>(group, this.#maxBuffered);
      const cursor: Cursor = { position: 0 };
      flight.cursors.add(cursor);
      this.#flights.set(key, flight);
      void this.#pump(key, flight, start);
      return { flight, cursor };
    }
  }

  /** The producer's only consumer: pulls an event whenever a subscriber waits and the buffer has room. */
  async #pump(
    key: string,
    flight: Flight<T>,
    start: () => CoalescedProducer<T> | Promise<CoalescedProducer<T>>,
  ): Promise<void> {
    let iterator: AsyncIterator<T> | undefined;
    try {
      flight.producer = await start();
      if (flight.cancelled) return;
      iterator = flight.producer.events[Symbol.asyncIterator]();
      for (;;) {
        while (!flight.cancelled && !(flight.demand && flight.hasRoom())) await flight.pumpChanged();
        if (flight.cancelled) return;
        const result = await iterator.next();
        if (result.done === true) return;
        flight.buffer.push(result.value);
        flight.demand = false;
        flight.notifyEvents();
      }
    } catch (error) {
      if (flight.failure === undefined && !flight.cancelled) flight.failure = { error };
    } finally {
      if (flight.cancelled) {
        await flight.requestCancel();
        await iterator?.return?.()?.catch(() => undefined);
      }
      flight.ended = true;
      flight.finished.resolve();
      flight.notifyEvents();
      if (!flight.cancelled) this.#completed(key, flight);
    }
  }

  #completed(key: string, flight: Flight<T>): void {
    if (this.#flights.get(key) !== flight) return;
    if (this.#closed || this.#retainMs <= 0 || flight.base > 0) {
      this.#flights.delete(key);
      return;
    }
    flight.retainTimer = setTimeout(() => {
      if (this.#flights.get(key) === flight) this.#flights.delete(key);
    }, this.#retainMs);
    flight.retainTimer.unref();
  }

  #leave(flight: Flight<T>, cursor: Cursor): void {
    flight.cursors.delete(cursor);
    if (flight.cursors.size > 0 || flight.ended || flight.cancelled) return;
    this.#cancel(flight);
  }

  /** Cancel a live producer for real and track its bounded retirement. */
  #cancel(flight: Flight<T>): void {
    flight.cancelled = true;
    this.#retiring.add(flight);
    void flight.requestCancel();
    flight.notifyPump();
    flight.notifyEvents();
    flight.retirement = bounded(flight.finished.promise, this.#retireTimeoutMs).then(() => {
      this.#retiring.delete(flight);
      for (const [key, value] of this.#flights) if (value === flight) this.#flights.delete(key);
    });
  }
}
