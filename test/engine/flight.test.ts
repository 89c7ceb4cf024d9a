import { describe, expect, it, vi } from 'vitest';
import { Flight, type FlightCursor, type FlightHooks, type FlightOptions } from '../../src/engine/flight.js';
import { createChannel } from '../helpers/producer-channel.js';

const flightOptions = (overrides: Partial<FlightOptions<number>> = {}): FlightOptions<number> => ({
  maxBufferedEvents: 100,
  maxBufferedBytes: Number.POSITIVE_INFINITY,
  sizeOf: () => 0,
  isTerminal: () => false,
  isCommitted: () => false,
  orphanTimeoutMs: 60_000,
  retireTimeoutMs: 1_000,
  ...overrides,
});

/** A started flight over a fresh channel, with its first subscriber and recorded hooks. */
const startFlight = (overrides: Partial<FlightOptions<number>> = {}) => {
  const channel = createChannel();
  const hooks = { settled: vi.fn(), stopped: vi.fn(), retired: vi.fn() } satisfies FlightHooks;
  const flight = new Flight<number>(flightOptions(overrides), hooks);
  const first = flight.subscribe();
  flight.start(() => channel.producer);
  return { channel, hooks, flight, first };
};

/** Up to `count` events for `cursor`, fewer when the flight ends for it. */
const take = async (flight: Flight<number>, cursor: FlightCursor, count: number): Promise<number[]> => {
  const out: number[] = [];
  for (let index = 0; index < count; index += 1) {
    const result = await flight.next(cursor);
    if (result.done === true) break;
    out.push(result.value);
  }
  return out;
};

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

/** A safety net for what the flight does in the background, never a speed claim. */
const eventually = { timeout: 30_000, interval: 5 };

describe('a flight replays its producer to every subscriber', () => {
  it('reads the producer once, on demand, and gives a late subscriber every event from the first', async () => {
    const { channel, flight, first } = startFlight();
    channel.push(1, 2, 3, 4);
    expect(await take(flight, first, 2)).toEqual([1, 2]);
    await tick();
    // Two events read, no subscriber waiting: the pump has not run ahead.
    expect(channel.stats.pulls).toBeLessThanOrEqual(3);
    const late = flight.subscribe();
    expect(await take(flight, late, 2)).toEqual([1, 2]);
    channel.end();
    expect(await take(flight, first, 10)).toEqual([3, 4]);
    expect(await take(flight, late, 10)).toEqual([3, 4]);
    expect(channel.stats.iterators).toBe(1);
    expect(flight.state.kind).toBe('finished');
  });

  it('runs onStop once when a subscriber reads the end', async () => {
    const channel = createChannel();
    const flight = new Flight<number>(flightOptions());
    const onStop = vi.fn();
    const cursor = flight.subscribe(onStop);
    flight.start(() => channel.producer);
    channel.push(1);
    channel.end();
    expect(await take(flight, cursor, 10)).toEqual([1]);
    expect(await flight.next(cursor)).toEqual({ done: true, value: undefined });
    flight.stop(cursor);
    expect(onStop).toHaveBeenCalledTimes(1);
  });

  it('throws the producer failure after the buffered events', async () => {
    const { channel, hooks, flight, first } = startFlight();
    const failure = new Error('upstream broke');
    channel.push(1);
    channel.fail(failure);
    expect(await flight.next(first)).toEqual({ done: false, value: 1 });
    await expect(flight.next(first)).rejects.toBe(failure);
    expect(flight.state).toEqual({ kind: 'failed', error: failure });
    expect(hooks.settled).toHaveBeenCalledTimes(1);
    await flight.stopped;
    expect(hooks.stopped).toHaveBeenCalledTimes(1);
  });
});

describe('the replay buffer is bounded', () => {
  it('drops what every subscriber read at the event bound, then refuses a new subscriber', async () => {
    const { channel, flight, first } = startFlight({ maxBufferedEvents: 3 });
    const early = flight.subscribe();
    channel.push(1, 2, 3);
    expect(await take(flight, first, 3)).toEqual([1, 2, 3]);
    expect(await take(flight, early, 3)).toEqual([1, 2, 3]);
    expect(flight.joinable).toBe(true);
    channel.push(4);
    expect(await take(flight, first, 1)).toEqual([4]);
    expect(flight.joinable).toBe(false);
    expect(flight.retainable).toBe(false);
    expect(() => flight.subscribe()).toThrow();
    // The subscribers already attached are still served in full.
    channel.end();
    expect(await take(flight, early, 10)).toEqual([4]);
    expect(await take(flight, first, 10)).toEqual([]);
  });

  it('drops at the byte bound as sizeOf counts events', async () => {
    const { channel, flight, first } = startFlight({ sizeOf: (event) => event, maxBufferedBytes: 10 });
    channel.push(6, 5);
    expect(await take(flight, first, 2)).toEqual([6, 5]);
    expect(flight.joinable).toBe(true);
    channel.push(1);
    expect(await take(flight, first, 1)).toEqual([1]);
    expect(flight.joinable).toBe(false);
    expect(flight.events).toEqual([1]);
  });

  it('waits for the slowest subscriber instead of dropping events it has not read', async () => {
    const { channel, flight, first } = startFlight({ maxBufferedEvents: 2 });
    const slow = flight.subscribe();
    channel.push(1, 2, 3, 4);
    channel.end();
    expect(await take(flight, first, 2)).toEqual([1, 2]);
    let fastDone = false;
    const fastRest = take(flight, first, 10).finally(() => (fastDone = true));
    await tick();
    expect(fastDone).toBe(false);
    expect(flight.joinable).toBe(true);
    expect(await take(flight, slow, 10)).toEqual([1, 2, 3, 4]);
    expect(await fastRest).toEqual([3, 4]);
  });
});

describe('the last subscriber leaving cancels the producer', () => {
  it('cancels for real and retires once the producer stopped, but not while another subscriber remains', async () => {
    const { channel, hooks, flight, first } = startFlight();
    const second = flight.subscribe();
    channel.push(1);
    expect(await take(flight, first, 1)).toEqual([1]);
    flight.stop(first);
    await tick();
    expect(channel.stats.cancels).toBe(0);
    expect(flight.state.kind).toBe('running');
    expect(await take(flight, second, 1)).toEqual([1]);
    // The last subscriber's pending read ends when it stops.
    const pending = flight.next(second);
    flight.stop(second);
    expect(flight.state.kind).toBe('cancelled');
    expect(flight.joinable).toBe(false);
    expect(await pending).toEqual({ done: true, value: undefined });
    const { state } = flight;
    if (state.kind !== 'cancelled') throw new Error('not cancelled');
    await state.retirement;
    expect(channel.stats.cancels).toBe(1);
    expect(channel.stats.returns).toBe(1);
    expect(hooks.retired).toHaveBeenCalledTimes(1);
    expect(hooks.settled).not.toHaveBeenCalled();
  });

  it('gives the remaining subscribers the error cancel(error) was called with', async () => {
    const { channel, flight, first } = startFlight();
    channel.push(1);
    expect(await take(flight, first, 1)).toEqual([1]);
    const closing = new Error('shutting down');
    const pending = flight.next(first);
    flight.cancel(closing);
    await expect(pending).rejects.toBe(closing);
  });
});

describe('a committed event makes the work outlive its subscribers', () => {
  it('reads the producer to its end without demand and keeps it joinable', async () => {
    const { channel, hooks, flight, first } = startFlight({ isCommitted: (event) => event === 2 });
    channel.push(1, 2);
    expect(await take(flight, first, 2)).toEqual([1, 2]);
    flight.stop(first);
    channel.push(3, 4);
    channel.end();
    await vi.waitFor(() => expect(hooks.stopped).toHaveBeenCalledTimes(1), eventually);
    expect(channel.stats.cancels).toBe(0);
    expect(flight.state.kind).toBe('finished');
    expect(flight.events).toEqual([1, 2, 3, 4]);
    const retry = flight.subscribe();
    expect(await take(flight, retry, 10)).toEqual([1, 2, 3, 4]);
  });

  it('cancels after the orphan timeout when no subscriber came back', async () => {
    const { channel, flight, first } = startFlight({ isCommitted: () => true, orphanTimeoutMs: 20 });
    channel.push(1);
    expect(await take(flight, first, 1)).toEqual([1]);
    flight.stop(first);
    expect(flight.state.kind).toBe('running');
    await vi.waitFor(() => expect(flight.state.kind).toBe('cancelled'), eventually);
    await vi.waitFor(() => expect(channel.stats.cancels).toBe(1), eventually);
  });
});

describe('a terminal event finishes the flight', () => {
  it('ends every subscriber after it, discards what follows, and no longer cancels', async () => {
    const { channel, hooks, flight, first } = startFlight({ isTerminal: (event) => event === 2 });
    channel.push(1, 2, 3);
    expect(await take(flight, first, 10)).toEqual([1, 2]);
    expect(flight.state.kind).toBe('finished');
    expect(hooks.settled).toHaveBeenCalledTimes(1);
    flight.stop(first);
    channel.end();
    await flight.stopped;
    expect(channel.stats.cancels).toBe(0);
    expect(flight.events).toEqual([1, 2]);
    const retry = flight.subscribe();
    expect(await take(flight, retry, 10)).toEqual([1, 2]);
  });
});
