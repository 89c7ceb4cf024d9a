/**
 * Backpressure from a run's consumer up to Cursor's backend: a client that stops reading stops the bridge
 * reading the run, instead of growing a buffer.
 *
 * `@cursor/sdk` 1.0.32 reads a run's backend stream in a `for await` loop that chains its update handlers
 * without awaiting them (`test/upstream/cursor/sdk-delta-backpressure.test.ts`), so a pending `onDelta`
 * never slows the socket, and it ships no transport seam (`setConnectTransportFactory` is declared, not
 * built). What it does use is Connect's Node client, which reads the response body through the body's
 * own async iterator (`response[Symbol.asyncIterator]()`, HTTP/1.1 and HTTP/2 alike). Node publishes
 * every outgoing request on its diagnostics channels, synchronously, and `http.client.response.finish`
 * runs before the `response` event that hands the body to Connect. So a run's backend stream can be
 * recognised — its RPC path, and its `x-request-id` (`x-original-request-id` on a retry), which the SDK
 * records in the run's store before it opens the stream ({@link BackendFlow.expect}) — and given an
 * iterator that waits while the flow is paused. Nobody then reads the body: Node stops reading the socket
 * once the stream's buffer is full (HTTP/1.1: the connection; HTTP/2: that stream's window only), and the
 * backend's writes block.
 *
 * Hand-written because no library reaches inside another library's HTTP client; everything used is
 * public Node API (diagnostics channels, the readable's async-iterator protocol). Not `AsyncLocalStorage`
 * to find the run: on Node 22 every storage adds work to every promise the process creates.
 *
 * The SDK aborts and retries a stream that brought nothing for 30 s (its stall detector). A paused flow
 * therefore lets a small budget through at an interval below that, so a client that stops reading for
 * longer than the SDK's threshold (the bridge's stall deadline is configurable) costs a bounded trickle,
 * not a retried stream.
 */

import diagnostics from 'node:diagnostics_channel';
import type { ClientRequest, IncomingMessage } from 'node:http';
import type { ClientHttp2Stream, IncomingHttpHeaders } from 'node:http2';
import type { Readable } from 'node:stream';

/** The server-streaming RPCs that carry a run: `Run` (HTTP/2, BiDi) and `RunSSE` (HTTP/1.1). */
const runStreamPaths: ReadonlySet<string> = new Set([
  '/agent.v1.AgentService/Run',
  '/agent.v1.AgentService/RunSSE',
]);

export type BackendFlowOptions = {
  /** While paused, how often a small budget of the stream is let through. Default 10 s. */
  trickleIntervalMs?: number;
  /** Bytes let through per interval while paused. Default 256 KiB. */
  trickleBytes?: number;
};

/** The flows of live runs by the backend request ids they expect. */
const expected = new Map<string, BackendFlow>();
/** HTTP/1.1 requests of a flow, between the request's creation and its response. */
const requests = new WeakMap<ClientRequest, BackendFlow>();
let subscribed = false;

/** The run's request id: a retried stream keeps the first attempt's as `x-original-request-id`. */
const flowOf = (header: (name: string) => unknown): BackendFlow | undefined => {
  for (const name of ['x-original-request-id', 'x-request-id']) {
    const id = header(name);
    const flow = typeof id === 'string' ? expected.get(id) : undefined;
    if (flow !== undefined) return flow;
  }
  return undefined;
};

const isRunStream = (path: unknown): boolean =>
  typeof path === 'string' && runStreamPaths.has(path.split('?')[0] ?? '');

const subscribe = (): void => {
  if (subscribed) return;
  subscribed = true;
  diagnostics.subscribe('http.client.request.created', (message) => {
    const { request } = message as { request: ClientRequest };
    if (!isRunStream(request.path)) return;
    const flow = flowOf((name) => request.getHeader(name));
    if (flow !== undefined) requests.set(request, flow);
  });
  diagnostics.subscribe('http.client.response.finish', (message) => {
    const { request, response } = message as { request: ClientRequest; response: IncomingMessage };
    const flow = requests.get(request);
    if (flow === undefined) return;
    requests.delete(request);
    flow.attach(response);
  });
  diagnostics.subscribe('http2.client.stream.created', (message) => {
    const { stream, headers } = message as { stream: ClientHttp2Stream; headers: IncomingHttpHeaders };
    if (!isRunStream(headers[':path'])) return;
    flowOf((name) => headers[name])?.attach(stream);
  });
};

/**
 * The flow control of one run's backend streams (the first attempt and any the SDK retries). Tell it the
 * run's request id with {@link BackendFlow.expect} before the stream opens; `pause()` and `resume()`
 * follow the consumer.
 */
export class BackendFlow {
  readonly #trickleIntervalMs: number;
  readonly #trickleBytes: number;
  /** Bytes the streams may still deliver: Infinity while open. */
  #budget = Number.POSITIVE_INFINITY;
  #wake: Array<() => void> = [];
  #trickle: NodeJS.Timeout | undefined;
  #attached = 0;
  #disposed = false;
  readonly #requestIds = new Set<string>();

  constructor(options: BackendFlowOptions = {}) {
    this.#trickleIntervalMs = options.trickleIntervalMs ?? 10_000;
    this.#trickleBytes = options.trickleBytes ?? 256 * 1024;
  }

  /** The backend streams opened for `requestId` (the run's, now or on a retry) join this flow. */
  expect(requestId: string): void {
    if (this.#disposed) return;
    subscribe();
    this.#requestIds.add(requestId);
    expected.set(requestId, this);
  }

  /**
   * How many backend streams of this flow are read through its iterator. 0 once the run streamed means the
   * SDK's transport was not recognised (or no longer reads bodies that way) and pausing does nothing.
   */
  get attached(): number {
    return this.#attached;
  }

  get paused(): boolean {
    return this.#budget !== Number.POSITIVE_INFINITY;
  }

  /** Stop reading the backend (beyond the trickle) until {@link BackendFlow.resume}. */
  pause(): void {
    if (this.paused || this.#disposed) return;
    this.#budget = 0;
    this.#trickle = setInterval(() => {
      this.#budget = this.#trickleBytes;
      this.#release();
    }, this.#trickleIntervalMs);
    this.#trickle.unref();
  }

  resume(): void {
    if (!this.paused) return;
    clearInterval(this.#trickle);
    this.#trickle = undefined;
    this.#budget = Number.POSITIVE_INFINITY;
    this.#release();
  }

  /** The run ended: never pause again, and let any waiting read go. */
  dispose(): void {
    this.#disposed = true;
    for (const id of this.#requestIds) if (expected.get(id) === this) expected.delete(id);
    this.#requestIds.clear();
    this.resume();
  }

  /** Give `stream`'s consumer (Connect) an iterator that waits while this flow is paused. */
  attach(stream: Readable): void {
    // The prototype's iterator, bound before the instance's own property shadows it.
    const iterate = stream[Symbol.asyncIterator].bind(stream) as () => AsyncIterator<unknown>;
    let closed = false;
    stream.once('close', () => {
      closed = true;
      this.#release();
    });
    const gated = (): AsyncIterator<unknown> => {
      this.#attached += 1;
      const inner = iterate();
      return {
        next: async () => {
          while (this.#budget <= 0 && !closed) await new Promise<void>((resolve) => this.#wake.push(resolve));
          const result = await inner.next();
          if (result.done !== true && this.paused) this.#budget -= byteLength(result.value);
          return result;
        },
        return: async (value?: unknown) => (await inner.return?.(value)) ?? { done: true, value },
        throw: async (error?: unknown) => {
          if (inner.throw === undefined) throw error;
          return inner.throw(error);
        },
      };
    };
    Object.defineProperty(stream, Symbol.asyncIterator, { configurable: true, value: gated });
  }

  #release(): void {
    for (const wake of this.#wake.splice(0)) wake();
  }
}

const byteLength = (chunk: unknown): number =>
  typeof chunk === 'string' ? Buffer.byteLength(chunk) : ((chunk as { length?: number }).length ?? 0);
