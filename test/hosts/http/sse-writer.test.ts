import { EventEmitter } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SseWriter } from '../../../src/hosts/http/sse-writer.js';

/** A connection that is never corked and records its destruction. */
class FakeSocket extends EventEmitter {
  writableCorked = 0;
  destroyed = false;
  destroy() {
    this.destroyed = true;
    this.emit('close');
  }
}

/** A response whose socket buffer is full until the test says `drain`. */
class SlowResponse extends EventEmitter {
  chunks: string[] = [];
  full = true;
  destroyed = false;
  writableEnded = false;
  socket = new FakeSocket();
  headers: Record<string, string> | undefined;
  writeHead(_status: number, headers: Record<string, string>) {
    this.headers = headers;
    return this;
  }
  flushHeaders() {}
  write(chunk: string) {
    this.chunks.push(chunk);
    return !this.full;
  }
  end() {
    this.writableEnded = true;
    if (!this.full) this.emit('close');
  }
  destroy() {
    this.destroyed = true;
    this.emit('close');
  }
}

describe('SseWriter', () => {
  // Keepalive, stall and grace periods run on fake timers: the test moves the clock.
  beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] }));
  afterEach(() => vi.useRealTimers());

  it('opens the stream at once and waits for drain when the socket buffer is full', async () => {
    const response = new SlowResponse();
    const writer = new SseWriter(response as unknown as ServerResponse, {
      keepaliveMs: 0,
      keepalive: () => ({ comment: 'keepalive' }),
    });
    expect(response.headers?.['content-type']).toContain('text/event-stream');
    let resolved = false;
    const pending = Promise.resolve(writer.write([{ event: 'a', data: '{}' }])).then(() => (resolved = true));
    // Only `drain` resolves it, however long it waits.
    await vi.advanceTimersByTimeAsync(60_000);
    expect(resolved).toBe(false);
    expect(response.chunks).toEqual(['event: a\ndata: {}\n\n']);
    response.full = false;
    response.emit('drain');
    await pending;
    expect(resolved).toBe(true);
  });

  it('writes a keepalive after each idle period and stops when the client is gone', async () => {
    const response = new SlowResponse();
    response.full = false;
    const writer = new SseWriter(response as unknown as ServerResponse, {
      keepaliveMs: 10,
      keepalive: () => ({ comment: 'keepalive' }),
    });
    const keepalives = () => response.chunks.filter((chunk) => chunk === ': keepalive\n\n').length;
    await vi.advanceTimersByTimeAsync(9);
    expect(keepalives()).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(keepalives()).toBe(1);
    // A frame restarts the idle period.
    await vi.advanceTimersByTimeAsync(5);
    await writer.write([{ data: 'x' }]);
    await vi.advanceTimersByTimeAsync(9);
    expect(keepalives()).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(keepalives()).toBe(2);
    response.emit('close');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(keepalives()).toBe(2);
    await writer.write([{ data: 'late' }]);
    expect(writer.closed).toBe(true);
    expect(response.chunks).not.toContain('data: late\n\n');
  });

  it('gives up on a client that does not drain within the stall deadline: onStall, final frames, then destroy', async () => {
    const response = new SlowResponse();
    let stalls = 0;
    const writer = new SseWriter(response as unknown as ServerResponse, {
      keepaliveMs: 0,
      keepalive: () => ({ comment: 'keepalive' }),
      stallTimeoutMs: 50,
      onStall: () => (stalls += 1),
    });
    let resolved = false;
    const pending = Promise.resolve(writer.write([{ data: 'a' }])).then(() => (resolved = true));
    await vi.advanceTimersByTimeAsync(49);
    expect(resolved).toBe(false);
    expect(writer.stalled).toBe(false);
    expect(stalls).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(resolved).toBe(true);
    await pending;
    expect(writer.stalled).toBe(true);
    expect(stalls).toBe(1);
    // Later writes no longer wait; the final frames are still written before the end.
    await writer.end([{ event: 'message_stop', data: '{}' }]);
    expect(response.chunks.at(-1)).toBe('event: message_stop\ndata: {}\n\n');
    expect(response.writableEnded).toBe(true);
    // The final frames get a grace second to reach a client that resumes reading, then the connection goes.
    await vi.advanceTimersByTimeAsync(999);
    expect(response.socket.destroyed).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(response.socket.destroyed).toBe(true);
    expect(stalls).toBe(1);
  });

  it("closes a stalled client's connection after the grace even when it read the final frames in time", async () => {
    let writer: SseWriter | undefined;
    const server = createServer((_request, response) => {
      writer = new SseWriter(response, {
        keepaliveMs: 0,
        keepalive: () => ({ comment: 'k' }),
        stallTimeoutMs: 50,
      });
      // More than the socket buffers take while the client does not read.
      void writer.write([{ data: 'x'.repeat(8 * 2 ** 20) }]);
    });
    // As `serve` does: idle connections are kept for minutes.
    server.keepAliveTimeout = 300_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
    try {
      client.pause();
      client.write('GET / HTTP/1.1\r\nHost: localhost\r\n\r\n');
      await vi.waitFor(() => expect(writer).toBeDefined());
      await vi.advanceTimersByTimeAsync(50);
      expect(writer?.stalled).toBe(true);
      await writer?.end([{ event: 'done', data: '{}' }]);
      // The client reads again within the grace: it gets the whole answer, and the response finishes.
      let received = '';
      let closed = false;
      client.once('close', () => (closed = true));
      client.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
      client.resume();
      await vi.waitFor(() => expect(received).toContain('event: done\ndata: {}\n\n'), { timeout: 10_000 });
      expect(client.readableEnded).toBe(false);
      await vi.advanceTimersByTimeAsync(1_000);
      await vi.waitFor(() => expect(closed).toBe(true), { timeout: 10_000 });
    } finally {
      client.destroy();
      server.close();
    }
  });

  it('waits forever without a stall deadline', async () => {
    const response = new SlowResponse();
    const writer = new SseWriter(response as unknown as ServerResponse, {
      keepaliveMs: 0,
      keepalive: () => ({ comment: 'keepalive' }),
    });
    let resolved = false;
    void Promise.resolve(writer.write([{ data: 'a' }])).then(() => (resolved = true));
    await vi.advanceTimersByTimeAsync(24 * 60 * 60 * 1_000);
    expect(resolved).toBe(false);
    expect(writer.stalled).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    response.destroy();
  });
});

describe('SseWriter on a real socket', () => {
  it('hands a held block start to the socket with the delta written after it', async () => {
    const seen: number[] = [];
    const server = createServer((_request, response) =>
      queueMicrotask(() => {
        const writer = new SseWriter(response, { keepaliveMs: 0, keepalive: () => ({ comment: 'k' }) });
        const socket = response.socket!;
        writer.hold([{ event: 'content_block_start', data: '{}' }]);
        seen.push(socket.writableLength);
        void writer.write([{ event: 'content_block_delta', data: '{}' }]);
        seen.push(socket.writableLength);
        void writer.end();
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const body = await (await fetch(`http://127.0.0.1:${port}/`)).text();
      expect(body).toBe('event: content_block_start\ndata: {}\n\nevent: content_block_delta\ndata: {}\n\n');
      // Held (corked) until the write, which hands both to the socket together.
      const [afterHold, afterWrite] = seen;
      expect(afterHold).toBeGreaterThan(0);
      expect(afterWrite).toBe(0);
    } finally {
      server.close();
    }
  });

  it("leaves the opening frames in the socket until the turn's microtasks have run", async () => {
    const seen: Array<{ at: string; buffered: number }> = [];
    // In a microtask, as the server starts a stream (after reading the body and admitting the turn).
    const server = createServer((_request, response) =>
      queueMicrotask(() => {
        const writer = new SseWriter(response, { keepaliveMs: 0, keepalive: () => ({ comment: 'k' }) });
        const socket = response.socket!;
        writer.hold([{ event: 'message_start', data: '{}' }]);
        seen.push({ at: 'after start', buffered: socket.writableLength });
        // The work the turn starts right after it (resuming a parked run) runs before they leave.
        void Promise.resolve()
          .then(() => undefined)
          .then(() => seen.push({ at: 'in the chain', buffered: socket.writableLength }));
        setImmediate(() => {
          seen.push({ at: 'next turn', buffered: socket.writableLength });
          void writer.write([{ data: 'a' }]);
          void writer.end();
        });
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const body = await (await fetch(`http://127.0.0.1:${port}/`)).text();
      expect(body).toBe('event: message_start\ndata: {}\n\ndata: a\n\n');
      expect(seen[0]?.buffered).toBeGreaterThan(0);
      expect(seen[1]).toEqual({ at: 'in the chain', buffered: seen[0]?.buffered });
      expect(seen[2]).toEqual({ at: 'next turn', buffered: 0 });
    } finally {
      server.close();
    }
  });

  it('hands the first two writes of an event-loop turn to the socket at once and batches the rest', async () => {
    const buffered: number[] = [];
    const server = createServer((_request, response) => {
      const writer = new SseWriter(response, { keepaliveMs: 0, keepalive: () => ({ comment: 'k' }) });
      const socket = response.socket!;
      const writeAndLook = (data: string): void => {
        void writer.write([{ data }]);
        buffered.push(socket.writableLength);
      };
      // Inside one turn — and within a chain of microtasks, as the SDK delivers a backend read.
      void Promise.resolve()
        .then(() => writeAndLook('a'))
        .then(() => writeAndLook('b'))
        .then(() => writeAndLook('c'))
        .then(() => {
          // Still corked: leaves when the turn's microtasks are done.
          buffered.push(socket.writableLength);
          setImmediate(() => {
            writeAndLook('d');
            void writer.end();
          });
        });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const body = await (await fetch(`http://127.0.0.1:${port}/`)).text();
      expect(body).toBe('data: a\n\ndata: b\n\ndata: c\n\ndata: d\n\n');
      const [a, b, c, stillCorked, d] = buffered;
      expect([a, b]).toEqual([0, 0]);
      expect(c).toBeGreaterThan(0);
      expect(stillCorked).toBe(c);
      expect(d).toBe(0);
    } finally {
      server.close();
    }
  });
});
