/**
 * Coalesces identical requests onto one producer: the first `join` for a key starts a flight (one
 * producer, read once, replayed to late subscribers within a bound: `flight.ts`), later joins subscribe
 * to it, so one logical turn has exactly one upstream send and one consumer of the upstream iterator. A
 * joiner that would miss the start (the flight already dropped events) gets an error instead of a
 * partial answer.
 *
 * The coalescer is the one owner of two rules:
 * - **Serialising a group** (a conversation): a new producer of a group starts only once every earlier
 *   producer of the group has stopped (bounded: a cancelled one gets `retireTimeoutMs`, a running one
 *   `busyTimeoutMs`, after which the join fails with a `rate-limit` BridgeError).
 * - **After-completion replay**: a producer that finished (or failed) stays joinable for `retainMs`, so a
 *   retry replays the finished answer (or the same failure) instead of starting a second run — when the
 *   joiner's `replays` predicate accepts it, and until a later producer of the same group starts.
 */

import { sleep } from '../../lib/sleep.js';
import { BridgeError, createTurnError } from '../turn/turn-error.js';
import { Flight, type FlightCursor, type FlightOptions, type FlightProducer } from './flight.js';

/** What `start` returns: the producer's events and a way to really cancel the work behind them. */
export type CoalescedProducer<T> = FlightProducer<T>;

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

/** A flight under its key, with what the coalescer's rules need beside it. */
type Entry<T> = {
  readonly key: string;
  readonly group: string | undefined;
  /** The `tag` of the join that started it. */
  readonly tag: string | undefined;
  readonly flight: Flight<T>;
  retainTimer: NodeJS.Timeout | undefined;
};

const isDone = <T>(flight: Flight<T>): boolean =>
  flight.state.kind === 'finished' || flight.state.kind === 'failed';

const finishedFlight = <T>({ flight, tag }: Entry<T>): FinishedFlight<T> => ({
  events: flight.events,
  failed: flight.state.kind === 'failed',
  tag,
});

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
  readonly #flights = new Map<string, Entry<T>>();
  /** `#flights` of each group, so a group's turn finds its own flights without scanning everyone's. */
  readonly #groups = new Map<string, Map<string, Entry<T>>>();
  /** Flights whose producer may still run: running, draining after its terminal event, or retiring. */
  readonly #live = new Set<Entry<T>>();
  readonly #flightOptions: FlightOptions<T>;
  readonly #retainMs: number;
  readonly #busyTimeoutMs: number;
  #closed = false;

  constructor(options: TurnCoalescerOptions<T> = {}) {
    const retireTimeoutMs = options.retireTimeoutMs ?? 5_000;
    this.#flightOptions = {
      maxBufferedEvents: Math.max(1, options.maxBufferedEvents ?? 10_000),
      maxBufferedBytes: options.maxBufferedBytes ?? 8 * 1024 * 1024,
      sizeOf: options.sizeOf ?? (() => 0),
      isTerminal: options.isTerminal ?? (() => false),
      isCommitted: options.isCommitted ?? (() => false),
      orphanTimeoutMs: options.orphanTimeoutMs ?? 30 * 60_000,
      retireTimeoutMs,
    };
    this.#retainMs = options.retainMs ?? 0;
    this.#busyTimeoutMs = options.busyTimeoutMs ?? 2 * retireTimeoutMs;
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
    const entry = this.#flights.get(key);
    if (entry === undefined || !isDone(entry.flight) || !entry.flight.joinable) return undefined;
    return finishedFlight(entry);
  }

  /** Forget the finished flight of `key`, if any, so nothing replays it; a running one is left alone. */
  forget(key: string): void {
    const entry = this.#flights.get(key);
    if (entry !== undefined && isDone(entry.flight)) this.#drop(key, entry);
  }

  /** Forget the finished flights of `group` (e.g. its conversation ended), so nothing replays them. */
  forgetGroup(group: string): void {
    const entries = this.#groups.get(group);
    if (entries === undefined) return;
    for (const [key, entry] of [...entries]) if (isDone(entry.flight)) this.#drop(key, entry);
  }

  /** Cancel every live producer (its subscribers get an `overloaded` error) and await their retirement. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const entries = [...this.#flights.values(), ...this.#live];
    for (const entry of entries) {
      clearTimeout(entry.retainTimer);
      if (entry.flight.state.kind === 'running') entry.flight.cancel(shuttingDown());
    }
    await Promise.all(
      entries.map(({ flight }) => (flight.state.kind === 'cancelled' ? flight.state.retirement : undefined)),
    );
    this.#flights.clear();
    this.#groups.clear();
  }

  /** A new subscriber of `entry`'s flight, if this join may read it from its first event. */
  #subscribeTo(
    entry: Entry<T>,
    replays: JoinOptions<T>['replays'],
    onStop: () => void,
  ): FlightCursor | undefined {
    const { flight } = entry;
    if (!flight.joinable) return undefined;
    if (flight.state.kind !== 'running' && replays?.(finishedFlight(entry)) === false) return undefined;
    return flight.subscribe(onStop);
  }

  #subscribe(key: string, start: Start<T>, options: JoinOptions<T>): AsyncIterator<T> {
    const { signal } = options;
    let flight: Flight<T> | undefined;
    let cursor: FlightCursor | undefined;
    let stopped = false;
    const done: IteratorReturnResult<undefined> = { done: true, value: undefined };
    const stop = (): void => {
      if (stopped) return;
      stopped = true;
      signal?.removeEventListener('abort', stop);
      if (flight !== undefined && cursor !== undefined) flight.stop(cursor);
    };
    signal?.addEventListener('abort', stop, { once: true });
    if (signal?.aborted) stop();
    // Joining a joinable producer subscribes at once, so the joiner's replay is guaranteed from here on;
    // anything else (start, wait for the group, refuse) happens on the first next().
    const existing = this.#flights.get(key);
    if (!stopped && existing !== undefined) {
      cursor = this.#subscribeTo(existing, options.replays, stop);
      if (cursor !== undefined) flight = existing.flight;
    }

    return {
      // Not an async function: the promise the flight settles is the one the consumer awaits (no extra hop).
      next: (): Promise<IteratorResult<T>> => {
        if (stopped) return Promise.resolve(done);
        if (flight !== undefined && cursor !== undefined) return flight.next(cursor);
        return this.#attach(key, start, options, () => stopped, stop).then((attached) => {
          if (attached === undefined) return done;
          ({ flight, cursor } = attached);
          // Stopped while attaching: leave at once, so the flight does not wait for this subscriber.
          if (stopped) {
            attached.flight.stop(attached.cursor);
            return done;
          }
          return attached.flight.next(attached.cursor);
        });
      },
      return: async (): Promise<IteratorResult<T>> => {
        stop();
        return done;
      },
    };
  }

  /** Subscribe to the key's flight, starting one (once its group is idle) if needed. */
  async #attach(
    key: string,
    start: Start<T>,
    options: JoinOptions<T>,
    stopped: () => boolean,
    onStop: () => void,
  ): Promise<{ flight: Flight<T>; cursor: FlightCursor } | undefined> {
    const { group } = options;
    const deadline = Date.now() + this.#busyTimeoutMs;
    for (;;) {
      if (this.#closed) throw shuttingDown();
      if (stopped()) return undefined;
      const existing = this.#flights.get(key);
      if (existing !== undefined) {
        const { flight } = existing;
        if (flight.state.kind === 'cancelled') {
          await flight.state.retirement;
          continue;
        }
        const cursor = this.#subscribeTo(existing, options.replays, onStop);
        if (cursor !== undefined) return { flight, cursor };
        if (flight.state.kind === 'running') throw replayOverflow();
        // A finished flight this join does not replay: a new producer replaces it.
        this.#drop(key, existing);
      }
      const busyEntries = group === undefined ? [] : [...this.#live].filter((entry) => entry.group === group);
      if (busyEntries.length > 0) {
        const remaining = deadline - Date.now();
        if (busyEntries.some(({ flight }) => flight.state.kind !== 'cancelled') && remaining <= 0)
          throw busy();
        await Promise.race([
          Promise.all(
            busyEntries.map(({ flight }) =>
              flight.state.kind === 'cancelled' ? flight.state.retirement : flight.stopped,
            ),
          ),
          ...(busyEntries.every(({ flight }) => flight.state.kind === 'cancelled')
            ? []
            : [sleep(remaining, { unref: true })]),
        ]);
        continue;
      }
      // Synchronous from the group check to here: two waiting joins cannot both start.
      if (group !== undefined) this.forgetGroup(group);
      const entry: Entry<T> = {
        key,
        group,
        tag: options.tag,
        retainTimer: undefined,
        flight: new Flight<T>(this.#flightOptions, {
          settled: () => this.#settled(entry),
          stopped: () => this.#live.delete(entry),
          retired: () => {
            this.#live.delete(entry);
            this.#unstore(entry);
          },
        }),
      };
      const cursor = entry.flight.subscribe(onStop);
      this.#store(entry);
      this.#live.add(entry);
      entry.flight.start(start);
      return { flight: entry.flight, cursor };
    }
  }

  /** The flight completed for its subscribers: retain it for replay, or drop it. */
  #settled(entry: Entry<T>): void {
    if (this.#flights.get(entry.key) !== entry) return;
    if (this.#closed || this.#retainMs <= 0 || !entry.flight.retainable) {
      this.#unstore(entry);
      return;
    }
    entry.retainTimer = setTimeout(() => this.#drop(entry.key, entry), this.#retainMs);
    entry.retainTimer.unref();
  }

  #drop(key: string, entry: Entry<T>): void {
    clearTimeout(entry.retainTimer);
    if (this.#flights.get(key) === entry) this.#unstore(entry);
  }

  /** Make `entry` the one of its key (and of its group's keys). */
  #store(entry: Entry<T>): void {
    const previous = this.#flights.get(entry.key);
    if (previous !== undefined) this.#unstore(previous);
    this.#flights.set(entry.key, entry);
    if (entry.group === undefined) return;
    let entries = this.#groups.get(entry.group);
    if (entries === undefined) this.#groups.set(entry.group, (entries = new Map()));
    entries.set(entry.key, entry);
  }

  /** Forget `entry` under its key, if it is still the one there. */
  #unstore(entry: Entry<T>): void {
    if (this.#flights.get(entry.key) !== entry) return;
    this.#flights.delete(entry.key);
    if (entry.group === undefined) return;
    const entries = this.#groups.get(entry.group);
    entries?.delete(entry.key);
    if (entries?.size === 0) this.#groups.delete(entry.group);
  }
}
