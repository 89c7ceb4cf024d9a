/**
 * The console's live feed on its own: one timer for every open page and none while no page is open; each
 * tick's frames computed once for all pages; a page that cannot take a frame skips ticks until its socket
 * drains instead of queueing them. On a fake response (each `write` answered as the test says, the clock
 * faked) and on a real HTTP server with a client that stops reading.
 */

import { EventEmitter } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConsoleLive, type ConsoleFrame } from '../../../src/hosts/console/console-live.js';
import { until } from '../../helpers/until.js';

/** A ServerResponse stand-in: records what is written, answers `write` with `accepting`. */
class FakeResponse extends EventEmitter {
  status: number | undefined;
  headers: Record<string, string> = {};
  readonly writes: string[] = [];
  accepting = true;
  destroyed = false;
  ended = false;

  writeHead(status: number, headers: Record<string, string>): this {
    this.status = status;
    this.headers = headers;
    return this;
  }

  write(chunk: string): boolean {
    this.writes.push(chunk);
    return this.accepting;
  }

  end(): this {
    this.ended = true;
    return this;
  }

  /** The page went (the browser closed the tab, or the connection dropped). */
  leave(): void {
    this.destroyed = true;
    this.emit('close');
  }

  /** The frames' text written after the `retry:` preamble. */
  get frameText(): string {
    return this.writes.filter((chunk) => !chunk.startsWith('retry:')).join('');
  }

  asResponse(): ServerResponse {
    return this as unknown as ServerResponse;
  }
}

const frame = (tick: number): ConsoleFrame[] => [{ event: 'tick', data: { tick } }];
const encoded = (tick: number): string => `event: tick\ndata: {"tick":${tick}}\n\n`;

const createLive = (frames: (tick: number) => ConsoleFrame[] = frame) => {
  const calls: number[] = [];
  const live = new ConsoleLive({
    intervalMs: 1_000,
    frames: (tick) => {
      calls.push(tick);
      return frames(tick);
    },
  });
  return { live, calls };
};

afterEach(() => {
  vi.useRealTimers();
});

describe('ConsoleLive (fake responses, fake clock)', () => {
  it('sends frames made asynchronously when they are ready, and nothing for a tick whose frames failed', async () => {
    const errors: unknown[] = [];
    let fail = false;
    const live = new ConsoleLive({
      intervalMs: 1_000,
      frames: async (tick) => {
        if (fail) throw new Error('no state');
        return frame(tick);
      },
      onError: (error) => errors.push(error),
    });
    vi.useFakeTimers();
    const page = new FakeResponse();
    live.open(page.asResponse());
    expect(page.frameText).toBe('');
    await vi.advanceTimersByTimeAsync(0);
    expect(page.frameText).toBe(encoded(0));
    fail = true;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(page.frameText).toBe(encoded(0));
    expect(errors).toHaveLength(1);
    fail = false;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(page.frameText).toBe(encoded(0) + encoded(2));
    live.close();
  });

  it('opens an event stream and sends the first frames at once', () => {
    vi.useFakeTimers();
    const { live, calls } = createLive((tick) => [
      { event: 'state', data: { tick, text: 'line\nbreak' } },
      { event: 'history', data: [1, 2] },
    ]);
    const page = new FakeResponse();
    live.open(page.asResponse());
    expect(page.status).toBe(200);
    expect(page.headers).toMatchObject({
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    });
    expect(page.writes[0]).toBe('retry: 3000\n\n');
    expect(calls).toEqual([0]);
    // One write per tick, every frame of it; data is one JSON line (a newline in a value is escaped).
    expect(page.writes.slice(1)).toEqual([
      'event: state\ndata: {"tick":0,"text":"line\\nbreak"}\n\nevent: history\ndata: [1,2]\n\n',
    ]);
    expect(live.size).toBe(1);
    live.close();
  });

  it('runs one timer for every open page, computing each tick once', () => {
    vi.useFakeTimers();
    const { live, calls } = createLive();
    const first = new FakeResponse();
    const second = new FakeResponse();
    live.open(first.asResponse());
    expect(vi.getTimerCount()).toBe(1);
    live.open(second.asResponse());
    expect(vi.getTimerCount()).toBe(1);
    expect(calls).toEqual([0, 0]);
    vi.advanceTimersByTime(999);
    expect(calls).toEqual([0, 0]);
    vi.advanceTimersByTime(1);
    expect(calls).toEqual([0, 0, 1]);
    vi.advanceTimersByTime(2_000);
    expect(calls).toEqual([0, 0, 1, 2, 3]);
    expect(first.frameText).toBe([0, 1, 2, 3].map(encoded).join(''));
    expect(second.frameText).toBe([0, 1, 2, 3].map(encoded).join(''));
    live.close();
  });

  it('stops its timer when the last page leaves, and counts ticks afresh for the next opening', () => {
    vi.useFakeTimers();
    const { live, calls } = createLive();
    const first = new FakeResponse();
    const second = new FakeResponse();
    live.open(first.asResponse());
    live.open(second.asResponse());
    vi.advanceTimersByTime(1_000);
    first.leave();
    expect(live.size).toBe(1);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(1_000);
    expect(second.frameText).toBe([0, 1, 2].map(encoded).join(''));
    expect(first.frameText).toBe([0, 1].map(encoded).join(''));
    second.leave();
    expect(live.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    const computed = calls.length;
    vi.advanceTimersByTime(10_000);
    expect(calls).toHaveLength(computed);

    const third = new FakeResponse();
    live.open(third.asResponse());
    vi.advanceTimersByTime(1_000);
    expect(third.frameText).toBe([0, 1].map(encoded).join(''));
    live.close();
  });

  it('skips a page whose last write was not taken until it drains, without queueing the ticks it missed', () => {
    vi.useFakeTimers();
    const { live } = createLive();
    const slow = new FakeResponse();
    const fast = new FakeResponse();
    live.open(fast.asResponse());
    slow.accepting = false;
    live.open(slow.asResponse());
    const writesWhenBlocked = slow.writes.length;
    vi.advanceTimersByTime(3_000);
    live.publish({ event: 'templates', data: { changed: ['AGENTS.md'] } });
    // Nothing more for the slow page; the other page goes on.
    expect(slow.writes).toHaveLength(writesWhenBlocked);
    expect(fast.frameText).toContain(encoded(3));
    expect(fast.frameText).toContain('event: templates');

    slow.accepting = true;
    slow.emit('drain');
    vi.advanceTimersByTime(1_000);
    // The next tick only: ticks 1–3 and the publish it could not take are gone, not delivered late.
    expect(slow.frameText).toBe(encoded(0) + encoded(4));
    vi.advanceTimersByTime(1_000);
    expect(slow.frameText).toBe(encoded(0) + encoded(4) + encoded(5));
    live.close();
  });

  it('blocks again after a drain when the next write is not taken either', () => {
    vi.useFakeTimers();
    const { live } = createLive();
    const page = new FakeResponse();
    page.accepting = false;
    live.open(page.asResponse());
    page.emit('drain');
    vi.advanceTimersByTime(1_000);
    expect(page.frameText).toBe(encoded(0) + encoded(1));
    vi.advanceTimersByTime(5_000);
    expect(page.frameText).toBe(encoded(0) + encoded(1));
    page.emit('drain');
    vi.advanceTimersByTime(1_000);
    expect(page.frameText).toBe(encoded(0) + encoded(1) + encoded(7));
    live.close();
  });

  it('writes nothing to a destroyed response, and nothing for a tick without frames', () => {
    vi.useFakeTimers();
    const { live } = createLive((tick) => (tick % 2 === 1 ? [] : frame(tick)));
    const page = new FakeResponse();
    live.open(page.asResponse());
    vi.advanceTimersByTime(1_000);
    expect(page.writes).toHaveLength(2);
    vi.advanceTimersByTime(1_000);
    expect(page.writes).toHaveLength(3);
    page.destroyed = true;
    vi.advanceTimersByTime(2_000);
    live.publish({ event: 'templates', data: {} });
    expect(page.writes).toHaveLength(3);
    live.close();
  });

  it('publishes a frame to every open page at once', () => {
    vi.useFakeTimers();
    const { live, calls } = createLive();
    const pages = [new FakeResponse(), new FakeResponse(), new FakeResponse()];
    for (const page of pages) live.open(page.asResponse());
    live.publish({ event: 'templates', data: { changed: ['prompt-head.md'], problems: [] } });
    for (const page of pages) {
      expect(page.writes.at(-1)).toBe(
        'event: templates\ndata: {"changed":["prompt-head.md"],"problems":[]}\n\n',
      );
    }
    expect(calls).toEqual([0, 0, 0]);
    live.close();
  });

  it('publishes to nobody while no page is open, and starts no timer for it', () => {
    vi.useFakeTimers();
    const { live, calls } = createLive();
    live.publish({ event: 'templates', data: {} });
    expect(vi.getTimerCount()).toBe(0);
    expect(calls).toEqual([]);
    expect(live.size).toBe(0);
  });

  it('ends every page and stops the timer on close', () => {
    vi.useFakeTimers();
    const { live, calls } = createLive();
    const pages = [new FakeResponse(), new FakeResponse()];
    for (const page of pages) live.open(page.asResponse());
    live.close();
    expect(pages.every((page) => page.ended)).toBe(true);
    expect(live.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(5_000);
    expect(calls).toEqual([0, 0]);
  });

  it('does not keep the process alive: its timer is unref’d', () => {
    const { live } = createLive();
    const timers: Array<{ hasRef(): boolean }> = [];
    const setIntervalSpy = vi.spyOn(globalThis, 'setInterval');
    try {
      live.open(new FakeResponse().asResponse());
      for (const result of setIntervalSpy.mock.results) timers.push(result.value as { hasRef(): boolean });
    } finally {
      setIntervalSpy.mockRestore();
      live.close();
    }
    expect(timers).toHaveLength(1);
    expect(timers[0]?.hasRef()).toBe(false);
  });
});

describe('ConsoleLive on a real HTTP server', () => {
  let server: Server | undefined;
  let client: Socket | undefined;
  let live: ConsoleLive | undefined;
  afterEach(async () => {
    live?.close();
    client?.destroy();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
    server = client = live = undefined;
  });

  const listen = async (onRequest: (response: ServerResponse) => void): Promise<number> => {
    server = createServer((_request, response) => onRequest(response));
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  };

  it('stops its timer once the page aborts its request', async () => {
    // Only the feed's interval is faked: sockets and everything else run on real time.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const calls: number[] = [];
    live = new ConsoleLive({ intervalMs: 5, frames: (tick) => (calls.push(tick), frame(tick)) });
    const feed = live;
    const port = await listen((response) => feed.open(response));
    const controller = new AbortController();
    const response = await fetch(`http://127.0.0.1:${port}/`, { signal: controller.signal });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const reader = response.body?.getReader();
    let text = '';
    const readUntil = async (wanted: string): Promise<void> => {
      while (!text.includes(wanted)) {
        const chunk = await reader?.read();
        if (chunk === undefined || chunk.done)
          throw new Error(`the feed ended before ${JSON.stringify(wanted)}`);
        text += new TextDecoder().decode(chunk.value);
      }
    };
    await readUntil(encoded(0));
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(5);
    await readUntil(encoded(1));
    expect(text).toBe(`retry: 3000\n\n${encoded(0)}${encoded(1)}`);
    controller.abort();
    await until(() => feed.size === 0, 'the page to be forgotten');
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(50);
    expect(calls).toEqual([0, 1]);
  });

  it('does not write to a client that stopped reading until its socket drains, and skips the ticks between', async () => {
    const pad = 'x'.repeat(256 * 1024);
    const calls: number[] = [];
    /** Per write: whether the response still waited for a drain when it was written, and the tick it sent. */
    const writes: Array<{ needDrain: boolean; taken: boolean; tick: number | undefined }> = [];
    live = new ConsoleLive({
      intervalMs: 2,
      frames: (tick) => {
        calls.push(tick);
        return [{ event: 'tick', data: { tick, pad } }];
      },
    });
    const feed = live;
    const port = await listen((response) => {
      const write = response.write.bind(response) as (chunk: string) => boolean;
      response.write = ((chunk: string) => {
        const needDrain = response.writableNeedDrain;
        const taken = write(chunk);
        const tick = /"tick":(\d+)/.exec(chunk)?.[1];
        writes.push({ needDrain, taken, tick: tick === undefined ? undefined : Number(tick) });
        return taken;
      }) as ServerResponse['write'];
      feed.open(response);
    });
    let received = '';
    const socket = connect(port, '127.0.0.1');
    client = socket;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    socket.pause();

    // The client reads nothing: once the socket's buffers are full, ticks go on and nothing is written.
    const lastWrittenTick = (): number => writes.findLast((entry) => entry.tick !== undefined)?.tick ?? 0;
    const writtenWhileBlocked = () => writes.filter((entry) => entry.needDrain);
    await until(
      () => (calls.at(-1) ?? 0) - lastWrittenTick() >= 20 || writtenWhileBlocked().length > 0,
      'twenty ticks without a write',
    );
    expect(writtenWhileBlocked()).toEqual([]);
    const blockedAt = calls.at(-1) ?? 0;
    expect(writes.at(-1)?.taken).toBe(false);

    socket.resume();
    const receivedTicks = (): number[] =>
      [...received.matchAll(/"tick":(\d+)/g)].map((match) => Number(match[1]));
    await until(() => receivedTicks().some((tick) => tick > blockedAt), 'a frame of a tick after the drain');

    // Never written while the response waited for a drain; every frame whole, in order, the missed ticks skipped.
    expect(writtenWhileBlocked()).toEqual([]);
    const ticks = receivedTicks();
    expect(ticks).toEqual([...ticks].sort((left, right) => left - right));
    expect(ticks).toEqual(
      writes.flatMap((entry) => (entry.tick === undefined ? [] : [entry.tick])).slice(0, ticks.length),
    );
    expect(ticks.length).toBeLessThan((ticks.at(-1) ?? 0) - 10);
  });
});
