/**
 * BackendFlow on real Node HTTP/1.1 and HTTP/2 streams, read the way Connect's Node client reads them
 * (the body's async iterator): a paused flow stops the reads, so the server's writes block; other
 * requests are untouched; a paused flow lets its trickle through; resuming delivers the rest intact.
 * The SDK end to end (HTTP/1.1, as against the fake) is in backend-flow-sdk.test.ts; HTTP/2, which the SDK
 * uses against Cursor, runs here through Connect's Node client, the copy the SDK resolves.
 */

import { createNodeHttpClient, Http2SessionManager } from '@connectrpc/connect-node';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BackendFlow } from '../../../src/upstream/cursor/backend-flow.js';

const total = 16 * 1024 * 1024;
const chunkBytes = 16 * 1024;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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
  it('HTTP/1.1: a paused run stream stops the server; the trickle passes; resuming delivers every byte', async () => {
    const flow = new BackendFlow({ trickleIntervalMs: 200, trickleBytes: 256 * 1024 });
    flow.pause();
    const pausedAt = performance.now();
    /** What the trickle may have let through by now: 256 KiB per interval begun (timers fire late, never
     * early), each read overshooting by at most a chunk of the readable's 64 KiB buffer. */
    const allowed = () => Math.floor((performance.now() - pausedAt) / 200) * (256 + 64) * 1024;
    flow.expect('request-h1');
    const response = await h1Get('/agent.v1.AgentService/RunSSE', 'request-h1');
    const progress = { bytes: 0 };
    const reading = readAll(response, progress);
    expect(flow.attached).toBe(1);
    await sleep(150);
    // Socket buffers hold some megabytes at most; the server is blocked far before the end.
    expect(written.get('/agent.v1.AgentService/RunSSE')).toBeLessThan(total / 2);
    expect(progress.bytes).toBeLessThanOrEqual(allowed());
    // The trickle goes on, nowhere near the free-running rate.
    while (progress.bytes < 2 * 256 * 1024 && performance.now() - pausedAt < 5_000) await sleep(20);
    expect(progress.bytes).toBeGreaterThanOrEqual(2 * 256 * 1024);
    expect(progress.bytes).toBeLessThanOrEqual(allowed());
    expect(written.get('/agent.v1.AgentService/RunSSE')).toBeLessThan(total / 2);

    // A request outside the run's streams is not gated, even under the flow.
    const other = await h1Get('/aiserver.v1.BidiService/BidiAppend', 'request-h1');
    expect(await readAll(other)).toBe(total);
    expect(flow.attached).toBe(1);

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
      const reading = readAll(stream);
      expect(flow.attached).toBe(1);
      await sleep(300);
      const pausedAt = written.get('/agent.v1.AgentService/Run') ?? 0;
      // The stream's flow-control window and the readable's buffer: well under a megabyte.
      expect(pausedAt).toBeLessThan(1024 * 1024);

      const other = session.request({ ':path': '/other' });
      expect(await readAll(other)).toBe(total);
      expect(written.get('/agent.v1.AgentService/Run')).toBe(pausedAt);

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
      await sleep(300);
      expect(flow.attached).toBe(1);
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
    await sleep(100);
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
