/**
 * Coalesces identical requests onto one producer: the first `join` for a key starts it, later joins
 * subscribe and replay its events from the start, so one logical turn has exactly one upstream send and
 * one consumer of the upstream iterator. The replay buffer is bounded; once it had to drop events, a new
 * joiner gets an error instead of a partial answer.
 *
 * The coalescer is the one owner of two rules:
 * - **Serialising a group** (a conversation): a new producer of a group starts only once every earlier
 *   producer of the group has stopped (bounded: a cancelled one gets `retireTimeoutMs`, a running one
 *   `busyTimeoutMs`, after which the join fails with a `rate-limit` BridgeError).
 * - **After-completion replay**: a producer that finished (or failed) stays joinable for `retainMs`, so a
 *   retry replays the finished answer (or the same failure) instead of starting a second run — when the
 *   joiner's `replays` predicate accepts it, and until a later producer of the same group starts.
 *
 * Lifecycle of a flight: `running` → `finished` (a terminal event was buffered, or the producer ended) |
 * `failed` (the producer or `start` threw) | `cancelled` (the LAST subscriber stopped before a terminal
 * event, or `close()`): a cancelled producer is cancelled for real and its bounded retirement runs.
 */

import { BridgeError, createTurnError } from '../turn/turn-error.js';

/** What `start` returns: the producer's events and a way to really cancel the work behind them. */
export type CoalescedProducer<T> = {
  /** Iterated once, on demand, by the coalescer alone. */
  events: AsyncIterable<T>;
  /** Stop the work (e.g. cancel the SDK run). Must make a pending `next()` of `events` settle soon. */
  cancel: () => Promise<void>;
};

export type TurnCoalescerOptions<T> = {
  /** Events kept for replay; beyond this, consumed events are dropped and joiners are refused. Default 10 000. */
  maxBufferedEvents?: number;
  /** How long a completed producer stays joinable for replay. Default 0 (dropped at completion). */
  retainMs?: number;
  /** Bound on waiting for a cancelled producer to retire. Default 5 s. */
  retireTimeoutMs?: number;
  /** Bound on waiting for a running producer of the same group. Default twice `retireTimeoutMs`. */
  busyTimeoutMs?: number;
  /**
   * The producer's last event for its subscribers (e.g. a turn's end or error). Once it is buffered the
   * flight is finished: a subscriber stopping no longer cancels it, and the producer is read to its end.
   */
  isTerminal?: (event: T) => boolean;
  /**
   * An event after which the work must survive its subscribers (e.g. a tool call the client may already
   * have seen and run). Once one is buffered, the last subscriber leaving no longer cancels the producer:
   * it is read to its end without demand, and the finished flight is retained for replay like any other,
   * so an identical retry sees the same events.
   */
  isCommitted?: (event: T) => boolean;
  /**
   * How long a committed flight runs on with no subscriber before it is cancelled after all (its batch
   * never ended, say). Default 30 minutes.
   */
  orphanTimeoutMs?: number;
  /**
   * The retained size of an event (e.g. its text length), bounded by `maxBufferedBytes`. Default 0
   * (only the event count is bounded).
   */
  sizeOf?: (event: T) => number;
  /**
   * Bytes (as `sizeOf` counts them) a flight keeps for replay; beyond this, consumed events are dropped
   * (no joiner may replay it) and a finished flight is not retained. Default 8 MiB.
   */
  maxBufferedBytes?: number;
};

/** A finished flight as a retry sees it. */
export type FinishedFlight<T> = {
  readonly events: readonly T[];
  /** The producer threw. */
  readonly failed: boolean;
  /** The `tag` of the join that started it. */
  readonly tag: string | undefined;
};

export type JoinOptions<T> = {
  /** Stops this subscriber like `return()` does. */
  signal?: AbortSignal;
  /** Producers of one group never overlap (e.g. the session id: one run per agent). */
  group?: string;
  /** Remembered on the flight this join starts, for later joiners' `replays`. */
  tag?: string;
  /** Whether this join may replay a finished flight of its key. Default: always. */
  replays?: (finished: FinishedFlight<T>) => boolean;
};

type FlightState =
  | { kind: 'running' }
  | { kind: 'finished' }
  | { kind: 'failed'; error: unknown }
  /** `error`: what the remaining subscribers get (close()); none when the last subscriber left. */
  | { kind: 'cancelled'; error?: unknown; retirement: Promise<void> };

type Cursor = { position: number };

type Deferred = { promise: Promise<void>; resolve: () => void };

const deferred = (): Deferred => {
  let resolve = (): void => {};
  const promise = new Promise<void>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
};

const sleep = (ms: number): Promise<void> =>
  new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)).unref());

const bounded = (promise: Promise<unknown>, ms: number): Promise<void> => {
  const settled = promise.then(
    () => undefined,
    () => undefined,
  );
  return Promise.race([settled, sleep(ms)]);
};

/** One producer and its subscribers. */
class Flight<T> {
  state: FlightState = { kind: 'running' };
  readonly buffer: T[] = [];
  /** How many events were dropped from the head of `buffer`; joiners need 0. */
  base = 0;
  /** What `buffer` holds, as `sizeOf` counts it. */
  bytes = 0;
  /** A committing event was buffered: the producer outlives its subscribers. */
  committed = false;
  readonly cursors = new Set<Cursor>();
  producer: CoalescedProducer<T> | undefined;
  cancelling: Promise<void> | undefined;
  retainTimer: NodeJS.Timeout | undefined;
  /** Runs while a committed flight has no subscriber; cancels it when it fires. */
  orphanTimer: NodeJS.Timeout | undefined;
  /** A subscriber is waiting for an event past the end of the buffer. */
  demand = false;
  /** Settles when the pump has stopped for good. */
  readonly stopped = deferred();
  // Two wake channels: subscribers wait for events, the pump waits for demand or room. One channel for
  // both would let waiting subscribers wake each other forever. A waiting subscriber is called back
  // synchronously: it hands the event to its consumer in the same microtask the pump buffered it in.
  #eventWaiters: Array<() => void> = [];
  #pumpWake = deferred();

  constructor(
    readonly key: string,
    readonly group: string | undefined,
    readonly tag: string | undefined,
    readonly maxBuffered: number,
    readonly maxBytes: number,
    readonly sizeOf: (event: T) => number,
  ) {}

  /** Buffer one event of the producer. */
  push(event: T): void {
    this.buffer.push(event);
    this.bytes += this.sizeOf(event);
  }

  /** Over a bound: consumed events must be dropped before more are buffered. */
  full(): boolean {
    return this.buffer.length >= this.maxBuffered || this.bytes > this.maxBytes;
  }

  /** Call `waiter` once, at the next {@link notifyEvents}. */
  onEventsChanged(waiter: () => void): void {
    this.#eventWaiters.push(waiter);
  }

  pumpChanged(): Promise<void> {
    return this.#pumpWake.promise;
  }

  /** Wake subscribers: an event arrived, the producer ended, or a subscriber stopped. */
  notifyEvents(): void {
    const waiters = this.#eventWaiters;
    if (waiters.length === 0) return;
    this.#eventWaiters = [];
    for (const waiter of waiters) waiter();
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
    if (this.full()) this.notifyPump();
    return { value: this.buffer[offset] as T };
  }

  /** Room for one more event, dropping events every subscriber has read once the buffer is full. */
  hasRoom(): boolean {
    if (!this.full()) return true;
    let slowest = Infinity;
    for (const cursor of this.cursors) slowest = Math.min(slowest, cursor.position);
    const drop = Math.min(slowest, this.base + this.buffer.length) - this.base;
    if (drop <= 0) return false;
    for (const event of this.buffer.splice(0, drop)) this.bytes -= this.sizeOf(event);
    this.base += drop;
    return true;
  }

  /** The pump may pull the next event: a subscriber waits for one, or nobody but the work needs it. */
  wantsMore(): boolean {
    return (this.demand || (this.committed && this.cursors.size === 0)) && this.hasRoom();
  }

  requestCancel(): Promise<void> {
    if (this.cancelling === undefined && this.producer !== undefined) {
      this.cancelling = this.producer.cancel().catch(() => undefined);
    }
    return this.cancelling ?? Promise.resolve();
  }

  /** A new subscriber may read this flight from its first event. */
  joinable(replays: JoinOptions<T>['replays']): boolean {
    if (this.base > 0) return false;
    switch (this.state.kind) {
      case 'running':
        return true;
      case 'cancelled':
        return false;
      default:
        return (
          replays?.({ events: this.buffer, failed: this.state.kind === 'failed', tag: this.tag }) ?? true
        );
    }
  }

  subscribe(): Cursor {
    clearTimeout(this.orphanTimer);
    this.orphanTimer = undefined;
    const cursor: Cursor = { position: 0 };
    this.cursors.add(cursor);
    return cursor;
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

const busy = (): BridgeError =>
  new BridgeError(
    createTurnError(
      'rate-limit',
      'This conversation already has a turn in progress; retry when it finishes.',
    ),
  );

type Start<T> = () => CoalescedProducer<T> | Promise<CoalescedProducer<T>>;

/** Coalesces identical requests onto one bounded, replayable producer per key; serialises groups. */
export class TurnCoalescer<T> {
  readonly #flights = new Map<string, Flight<T>>();
  /** `#flights` of each group, so a group's turn finds its own flights without scanning everyone's. */
  readonly #groups = new Map<string, Map<string, Flight<T>>>();
  /** Flights whose producer may still run: running, draining after its terminal event, or retiring. */
  readonly #live = new Set<Flight<T>>();
  readonly #maxBuffered: number;
  readonly #retainMs: number;
  readonly #retireTimeoutMs: number;
  readonly #busyTimeoutMs: number;
  readonly #isTerminal: (event: T) => boolean;
  readonly #isCommitted: (event: T) => boolean;
  readonly #sizeOf: (event: T) => number;
  readonly #maxBytes: number;
  readonly #orphanTimeoutMs: number;
  #closed = false;

  constructor(options: TurnCoalescerOptions<T> = {}) {
    this.#maxBuffered = Math.max(1, options.maxBufferedEvents ?? 10_000);
    this.#retainMs = options.retainMs ?? 0;
    this.#retireTimeoutMs = options.retireTimeoutMs ?? 5_000;
    this.#busyTimeoutMs = options.busyTimeoutMs ?? 2 * this.#retireTimeoutMs;
    this.#isTerminal = options.isTerminal ?? (() => false);
    this.#isCommitted = options.isCommitted ?? (() => false);
    this.#sizeOf = options.sizeOf ?? (() => 0);
    this.#maxBytes = options.maxBufferedBytes ?? 8 * 1024 * 1024;
    this.#orphanTimeoutMs = options.orphanTimeoutMs ?? 30 * 60_000;
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
   * Subscribe to the producer for `key`, calling `start` to create it when there is none (or when the
   * retained one is not replayed to this join). Iterating yields every event of the producer from its
   * first one; the producer's failure (or `start`'s) is thrown after the buffered events. Creating the
   * iterator subscribes to a joinable producer at once (so always iterate it to the end or call
   * `return()`); otherwise the first `next()` starts a producer (after the earlier producers of its group
   * stopped) or fails with a BridgeError: `overloaded` when the replay buffer already dropped events or
   * the coalescer is closed, `rate-limit` when the group stayed busy. `start` runs once per producer.
   */
  join(key: string, start: Start<T>, options: JoinOptions<T> = {}): AsyncIterable<T> {
    return { [Symbol.asyncIterator]: () => this.#subscribe(key, start, options) };
  }

  /** The finished (or failed) flight retained for `key`, if any. */
  finished(key: string): FinishedFlight<T> | undefined {
    const flight = this.#flights.get(key);
    if (flight === undefined || !this.#isDone(flight) || flight.base > 0) return undefined;
    return { events: flight.buffer, failed: flight.state.kind === 'failed', tag: flight.tag };
  }

  /** Forget the finished flight of `key`, if any, so nothing replays it; a running one is left alone. */
  forget(key: string): void {
    const flight = this.#flights.get(key);
    if (flight !== undefined && this.#isDone(flight)) this.#drop(key, flight);
  }

  /** Forget the finished flights of `group` (e.g. its conversation ended), so nothing replays them. */
  forgetGroup(group: string): void {
    const flights = this.#groups.get(group);
    if (flights === undefined) return;
    for (const [key, flight] of [...flights]) if (this.#isDone(flight)) this.#drop(key, flight);
  }

  /** Cancel every live producer (its subscribers get an `overloaded` error) and await their retirement. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const flights = [...this.#flights.values(), ...this.#live];
    for (const flight of flights) {
      clearTimeout(flight.retainTimer);
      if (flight.state.kind === 'running') this.#cancel(flight, shuttingDown());
    }
    await Promise.all(
      flights.map((flight) => (flight.state.kind === 'cancelled' ? flight.state.retirement : undefined)),
    );
    this.#flights.clear();
    this.#groups.clear();
  }

  #isDone(flight: Flight<T>): boolean {
    return flight.state.kind === 'finished' || flight.state.kind === 'failed';
  }

  #subscribe(key: string, start: Start<T>, options: JoinOptions<T>): AsyncIterator<T> {
    const { signal } = options;
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
    // Joining a joinable producer subscribes at once, so the joiner's replay is guaranteed from here on;
    // anything else (start, wait for the group, refuse) happens on the first next().
    const existing = this.#flights.get(key);
    if (!stopped && existing?.joinable(options.replays) === true) {
      flight = existing;
      cursor = existing.subscribe();
    }

    /** This subscriber's next result if there is one now (throws the flight's failure); else undefined. */
    const poll = (attached: Flight<T>, at: Cursor): IteratorResult<T> | undefined => {
      if (stopped) return done;
      const next = attached.take(at);
      if (next !== undefined) return { done: false, value: next.value };
      const state = attached.state;
      if (state.kind === 'running') return undefined;
      stop();
      if (state.kind === 'failed' || (state.kind === 'cancelled' && state.error !== undefined))
        throw state.error;
      return done;
    };
    /** The next result, waiting (with demand on the pump) until there is one. */
    const read = (attached: Flight<T>, at: Cursor): Promise<IteratorResult<T>> =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          let result: IteratorResult<T> | undefined;
          try {
            result = poll(attached, at);
          } catch (error) {
            reject(error);
            return;
          }
          if (result !== undefined) return resolve(result);
          attached.onEventsChanged(check);
          attached.demand = true;
          attached.notifyPump();
        };
        check();
      });

    return {
      // Not an async function: the promise `read` settles is the one the consumer awaits (no extra hop).
      next: (): Promise<IteratorResult<T>> => {
        if (stopped) return Promise.resolve(done);
        if (flight !== undefined && cursor !== undefined) return read(flight, cursor);
        return this.#attach(key, start, options, () => stopped).then((attached) => {
          if (attached === undefined) return done;
          ({ flight, cursor } = attached);
          return read(attached.flight, attached.cursor);
        });
      },
      return: async (): Promise<IteratorResult<T>> => {
        stop();
        return done;
      },
    };
  }

  /** Attach a cursor to the key's producer, starting one (once its group is idle) if needed. */
  async #attach(
    key: string,
    start: Start<T>,
    options: JoinOptions<T>,
    stopped: () => boolean,
  ): Promise<{ flight: Flight<T>; cursor: Cursor } | undefined> {
    const { group } = options;
    const deadline = Date.now() + this.#busyTimeoutMs;
    for (;;) {
      if (this.#closed) throw shuttingDown();
      if (stopped()) return undefined;
      const existing = this.#flights.get(key);
      if (existing?.state.kind === 'cancelled') {
        await existing.state.retirement;
        continue;
      }
      if (existing !== undefined) {
        if (existing.joinable(options.replays)) return { flight: existing, cursor: existing.subscribe() };
        if (existing.state.kind === 'running') throw replayOverflow();
        // A finished flight this join does not replay: a new producer replaces it.
        this.#drop(key, existing);
      }
      const busyFlights =
        group === undefined ? [] : [...this.#live].filter((flight) => flight.group === group);
      if (busyFlights.length > 0) {
        const remaining = deadline - Date.now();
        if (busyFlights.some((flight) => flight.state.kind !== 'cancelled') && remaining <= 0) throw busy();
        await Promise.race([
          Promise.all(
            busyFlights.map((flight) =>
              flight.state.kind === 'cancelled' ? flight.state.retirement : flight.stopped.promise,
            ),
          ),
          ...(busyFlights.every((flight) => flight.state.kind === 'cancelled') ? [] : [sleep(remaining)]),
        ]);
        continue;
      }
      // Synchronous from the group check to here: two waiting joins cannot both start.
      if (group !== undefined) this.forgetGroup(group);
      const flight = new Flight<T>(key, group, options.tag, this.#maxBuffered, this.#maxBytes, this.#sizeOf);
      const cursor = flight.subscribe();
      this.#store(flight);
      this.#live.add(flight);
      void this.#pump(key, flight, start);
      return { flight, cursor };
    }
  }

  /** The producer's only consumer: pulls an event whenever a subscriber waits and the buffer has room. */
  async #pump(key: string, flight: Flight<T>, start: Start<T>): Promise<void> {
    let iterator: AsyncIterator<T> | undefined;
    // Read through a call: the state changes while the pump awaits.
    const kind = (): FlightState['kind'] => flight.state.kind;
    try {
      flight.producer = await start();
      if (kind() === 'cancelled') return;
      iterator = flight.producer.events[Symbol.asyncIterator]();
      for (;;) {
        // Once finished, the producer is read to its end without waiting for demand.
        while (kind() === 'running' && !flight.wantsMore()) await flight.pumpChanged();
        if (kind() === 'cancelled') return;
        const result = await iterator.next();
        if (result.done === true) return;
        if (kind() !== 'running') continue;
        flight.push(result.value);
        flight.demand = false;
        if (this.#isCommitted(result.value)) flight.committed = true;
        if (this.#isTerminal(result.value)) this.#finish(key, flight, { kind: 'finished' });
        flight.notifyEvents();
      }
    } catch (error) {
      if (kind() === 'running') this.#finish(key, flight, { kind: 'failed', error });
    } finally {
      if (kind() === 'cancelled') {
        await flight.requestCancel();
        await iterator?.return?.()?.catch(() => undefined);
      }
      if (kind() === 'running') this.#finish(key, flight, { kind: 'finished' });
      this.#live.delete(flight);
      // A retained flight replays from its buffer alone: let the producer (the turn's generator and all
      // it closes over) go now, not when the replay window ends.
      flight.producer = undefined;
      flight.stopped.resolve();
      flight.notifyEvents();
    }
  }

  /** The flight completed for its subscribers: retain it for replay, or drop it. */
  #finish(
    key: string,
    flight: Flight<T>,
    state: Extract<FlightState, { kind: 'finished' | 'failed' }>,
  ): void {
    flight.state = state;
    clearTimeout(flight.orphanTimer);
    if (this.#flights.get(key) !== flight) return;
    if (this.#closed || this.#retainMs <= 0 || flight.base > 0 || flight.bytes > flight.maxBytes) {
      this.#unstore(flight);
      return;
    }
    flight.retainTimer = setTimeout(() => this.#drop(key, flight), this.#retainMs);
    flight.retainTimer.unref();
  }

  #drop(key: string, flight: Flight<T>): void {
    clearTimeout(flight.retainTimer);
    if (this.#flights.get(key) === flight) this.#unstore(flight);
  }

  /** Make `flight` the one of its key (and of its group's keys). */
  #store(flight: Flight<T>): void {
    const previous = this.#flights.get(flight.key);
    if (previous !== undefined) this.#unstore(previous);
    this.#flights.set(flight.key, flight);
    if (flight.group === undefined) return;
    let flights = this.#groups.get(flight.group);
    if (flights === undefined) this.#groups.set(flight.group, (flights = new Map()));
    flights.set(flight.key, flight);
  }

  /** Forget `flight` under its key, if it is still the one there. */
  #unstore(flight: Flight<T>): void {
    if (this.#flights.get(flight.key) !== flight) return;
    this.#flights.delete(flight.key);
    if (flight.group === undefined) return;
    const flights = this.#groups.get(flight.group);
    flights?.delete(flight.key);
    if (flights?.size === 0) this.#groups.delete(flight.group);
  }

  #leave(flight: Flight<T>, cursor: Cursor): void {
    flight.cursors.delete(cursor);
    if (flight.cursors.size > 0 || flight.state.kind !== 'running') return;
    // The client may have acted on a committed event (run a tool): the work goes on to its boundary,
    // bounded by the orphan deadline.
    if (flight.committed) {
      flight.orphanTimer = setTimeout(() => {
        if (flight.state.kind === 'running' && flight.cursors.size === 0) this.#cancel(flight);
      }, this.#orphanTimeoutMs);
      flight.orphanTimer.unref();
      return;
    }
    this.#cancel(flight);
  }

  /** Cancel a running producer for real and track its bounded retirement. */
  #cancel(flight: Flight<T>, error?: unknown): void {
    clearTimeout(flight.orphanTimer);
    const retirement = bounded(flight.stopped.promise, this.#retireTimeoutMs).then(() => {
      this.#live.delete(flight);
      this.#unstore(flight);
    });
    flight.state =
      error === undefined ? { kind: 'cancelled', retirement } : { kind: 'cancelled', error, retirement };
    void flight.requestCancel();
    flight.notifyPump();
    flight.notifyEvents();
  }
}
