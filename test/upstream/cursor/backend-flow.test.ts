/**
 * BackendFlow on real Node HTTP/1.1 and HTTP/2 streams, read the way Connect's Node client reads them
 * (the body's async iterator): a paused flow stops the reads, so the server's writes block; other
 * requests are untouched; a paused flow lets its trickle through; resuming delivers the rest intact.
 * The SDK end to end (HTTP/1.1, as against the fake) is in test/reliability/backend-flow-sdk.test.ts; HTTP/2, which the SDK
 * uses against Cursor, runs here through Connect's Node client, the copy the SDK resolves.
 */

import { createNodeHttpClient, Http2SessionManager } from '@connectrpc/connect-node';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';

import { BackendFlow } from '../../../src/upstream/cursor/backend-flow.js';

const total = 16 * 1024 * 1024;
const chunkBytes = 16 * 1024;
/** A generous safety net for conditions reached through real sockets, never a speed claim. */
const eventually = { timeout: 30_000, interval: 5 };

/** Bytes each response's server side handed to Node so far, by path. */
const written = new Map<string, number>();

/** Writes `total` bytes of a repeating byte pattern, respecting backpressure. */
const produce = (
  path: string,
  write: (chunk: Buffer) => boolean,
  onDrain: (resume: () => void) => void,
  end: () => void,
) => {
  const chunk = Buffer.alloc(chunkBytes, path.length % 256);
  written.set(path, 0);
  const pump = (): void => {
    while ((written.get(path) ?? 0) < total) {
      written.set(path, (written.get(path) ?? 0) + chunk.length);
      if (!write(chunk)) return onDrain(pump);
    }
    end();
  };
  pump();
};

/** Reads a body to its end through its async iterator, as Connect does; resolves with the byte count. */
const readAll = async (body: Readable, progress = { bytes: 0 }): Promise<number> => {
  for await (const chunk of body) progress.bytes += (chunk as Buffer).length;
  return progress.bytes;
};

let h1: http.Server;
let h2: http2.Http2Server;

beforeAll(async () => {
  h1 = http.createServer((request, response) => {
    response.writeHead(200);
    produce(
      request.url ?? '',
      (chunk) => response.write(chunk),
      (resume) => response.once('drain', resume),
      () => response.end(),
    );
  });
  h2 = http2.createServer();
  h2.on('stream', (stream, headers) => {
    stream.respond({ ':status': 200 });
    produce(
      String(headers[':path']),
      (chunk) => stream.write(chunk),
      (resume) => stream.once('drain', resume),
      () => stream.end(),
    );
  });
  await Promise.all([
    new Promise<void>((resolve) => h1.listen(0, '127.0.0.1', resolve)),
    new Promise<void>((resolve) => h2.listen(0, '127.0.0.1', resolve)),
  ]);
});

afterAll(async () => {
  h1.closeAllConnections();
  await new Promise((resolve) => h1.close(resolve));
  await new Promise((resolve) => h2.close(resolve));
});

/** A GET as the SDK's run stream is made: `x-request-id` is what the flow expects. */
const h1Get = (path: string, requestId?: string): Promise<http.IncomingMessage> =>
  new Promise((resolve, reject) => {
    const request = http.get(
      {
        host: '127.0.0.1',
        port: (h1.address() as AddressInfo).port,
        path,
        agent: false,
        headers: requestId === undefined ? {} : { 'x-request-id': requestId },
      },
      resolve,
    );
    request.on('error', reject);
  });

describe('BackendFlow', () => {
  // Only the trickle's interval is fake: the test fires each trickle itself. Sockets and Node's own
  // timers stay real.
  beforeEach(() => vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] }));
  afterEach(() => vi.useRealTimers());

  it('HTTP/1.1: a paused run stream stops the server; the trickle passes; resuming delivers every byte', async () => {
    const trickleBytes = 256 * 1024;
    const flow = new BackendFlow({ trickleIntervalMs: 200, trickleBytes });
    flow.pause();
    flow.expect('request-h1');
    const response = await h1Get('/agent.v1.AgentService/RunSSE', 'request-h1');
    const progress = { bytes: 0 };
    const reading = readAll(response, progress);
    expect(flow.attached).toBe(1);

    // A request outside the run's streams is not gated, even under the flow: 16 MiB through the same
    // process meanwhile, time enough for an ungated run stream to be read.
    const other = await h1Get('/aiserver.v1.BidiService/BidiAppend', 'request-h1');
    expect(await readAll(other)).toBe(total);
    expect(flow.attached).toBe(1);
    // No trickle yet: not a byte was read. Socket buffers hold some megabytes at most; the server is
    // blocked far before the end.
    expect(progress.bytes).toBe(0);
    expect(written.get('/agent.v1.AgentService/RunSSE')).toBeLessThan(total / 2);

    // Each trickle lets its budget through, overshooting by at most one read (all the readable holds: its
    // high-water mark and one socket read of 64 KiB), then the reads wait again.
    const maxRead = response.readableHighWaterMark + 64 * 1024;
    for (let trickle = 1; trickle <= 2; trickle += 1) {
      vi.advanceTimersByTime(200);
      await vi.waitFor(
        () => expect(progress.bytes).toBeGreaterThanOrEqual(trickle * trickleBytes),
        eventually,
      );
      expect(progress.bytes).toBeLessThanOrEqual(trickle * (trickleBytes + maxRead));
    }
    expect(written.get('/agent.v1.AgentService/RunSSE')).toBeLessThan(total / 2);

    flow.resume();
    expect(await reading).toBe(total);
  });

  it('HTTP/2: only the paused run stream stops; the session keeps serving its other streams', async () => {
    const session = http2.connect(`http://127.0.0.1:${(h2.address() as AddressInfo).port}`);
    try {
      const flow = new BackendFlow();
      flow.expect('request-h2');
      const stream = session.request({ ':path': '/agent.v1.AgentService/Run', 'x-request-id': 'request-h2' });
      flow.pause();
      const progress = { bytes: 0 };
      const reading = readAll(stream, progress);
      expect(flow.attached).toBe(1);

      // The session serves another stream's 16 MiB meanwhile …
      const other = session.request({ ':path': '/other' });
      expect(await readAll(other)).toBe(total);
      // … while the paused one was not read, and the server got no further than the stream's flow-control
      // window and the readable's buffer: well under a megabyte.
      expect(progress.bytes).toBe(0);
      expect(written.get('/agent.v1.AgentService/Run')).toBeLessThan(1024 * 1024);

      flow.resume();
      expect(await reading).toBe(total);
    } finally {
      session.destroy();
    }
  });

  it('HTTP/2 through Connect’s Node client (the SDK’s transport): the paused stream is not read', async () => {
    const url = `http://127.0.0.1:${(h2.address() as AddressInfo).port}`;
    const manager = new Http2SessionManager(url);
    const client = createNodeHttpClient({ httpVersion: '2', sessionProvider: () => manager });
    try {
      const flow = new BackendFlow();
      flow.pause();
      // A retry keeps the first attempt's id as `x-original-request-id`.
      flow.expect('request-connect');
      const response = await client({
        url: `${url}/agent.v1.AgentService/Run`,
        method: 'POST',
        header: new Headers({
          'content-type': 'application/connect+proto',
          'x-request-id': 'request-connect-retry',
          'x-original-request-id': 'request-connect',
        }),
        body: (async function* () {})(),
      });
      expect(response.status).toBe(200);
      let bytes = 0;
      const reading = (async () => {
        for await (const chunk of response.body) bytes += chunk.length;
      })();
      await vi.waitFor(() => expect(flow.attached).toBe(1), eventually);
      // Another stream of the same session, read to its end meanwhile.
      const other = await client({
        url: `${url}/other`,
        method: 'POST',
        header: new Headers({ 'content-type': 'application/connect+proto' }),
        body: (async function* () {})(),
      });
      let otherBytes = 0;
      for await (const chunk of other.body) otherBytes += chunk.length;
      expect(otherBytes).toBe(total);
      expect(bytes).toBe(0);
      expect(written.get('/agent.v1.AgentService/Run')).toBeLessThan(1024 * 1024);
      flow.resume();
      await reading;
      expect(bytes).toBe(total);
    } finally {
      manager.abort();
    }
  });

  it('a stream that closes while paused releases its waiting read, and a disposed flow never pauses', async () => {
    const flow = new BackendFlow();
    flow.pause();
    flow.expect('request-closes');
    const response = await h1Get('/agent.v1.AgentService/RunSSE', 'request-closes');
    const reading = readAll(response).catch((error: unknown) => error);
    // The read is already waiting on the paused flow: `for await` took the iterator and asked for a chunk.
    expect(flow.attached).toBe(1);
    response.destroy(new Error('cancelled'));
    expect(await reading).toBeInstanceOf(Error);

    flow.dispose();
    expect(flow.paused).toBe(false);
    flow.pause();
    expect(flow.paused).toBe(false);
  });

  it('a stream no flow expects is left alone, and a disposed flow expects nothing more', async () => {
    const flow = new BackendFlow();
    flow.expect('request-disposed');
    flow.dispose();
    flow.expect('request-after');
    for (const id of [undefined, 'request-unknown', 'request-disposed', 'request-after']) {
      const response = await h1Get('/agent.v1.AgentService/RunSSE', id);
      expect(Object.hasOwn(response, Symbol.asyncIterator)).toBe(false);
      response.destroy();
    }
    expect(flow.attached).toBe(0);
    const response = await h1Get('/agent.v1.AgentService/RunSSE');
    expect(Object.hasOwn(response, Symbol.asyncIterator)).toBe(false);
    expect(await readAll(response)).toBe(total);
  });
});
