/**
 * The server side of an MCP WebSocket link, on `ws`: what the SDK's `WebSocketClientTransport` talks to.
 *
 * Hand-written because `@modelcontextprotocol/sdk` 1.32 ships only the client side. The wire is exactly
 * the SDK client's: subprotocol `mcp`, one JSON-RPC message per text frame. Here the accepting end is
 * the MCP *client* (mcp-host) and the connecting end (the tool host) the MCP *server*; a transport does
 * not care which role sits on top.
 *
 * Contracts:
 * - `onmessage` gets each valid JSON-RPC message in frame order; a frame that is not one (bad JSON, not
 *   a message, binary) goes to `onerror` and is dropped, the link stays open.
 * - `onclose` runs exactly once, whether the peer left, the socket failed, a keepalive ping went
 *   unanswered, or `close()` was called.
 * - `send()` resolves once `ws` has handed the frame to the socket; it rejects when the link is closed,
 *   or when the peer reads so slowly that more than `maxBufferedBytes` are queued (the link is then
 *   closed: memory per host stays bounded).
 */

import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { RawData, WebSocket } from 'ws';
import { describeDepthExcess, findJsonTextDepthExcess } from '../lib/json-depth.js';

/** The subprotocol of MCP over WebSocket, as the SDK's `WebSocketClientTransport` requests it. */
export const MCP_WEBSOCKET_SUBPROTOCOL = 'mcp';

export type WebSocketServerTransportOptions = {
  /** Ping the peer this often and drop it when a pong has not come back by the next ping. Default 30 s; 0 = off. */
  keepaliveMs?: number;
  /** Close the link when more than this many bytes wait to be sent. Default 64 MiB. */
  maxBufferedBytes?: number;
};

const defaultKeepaliveMs = 30_000;
const defaultMaxBufferedBytes = 64 * 1024 * 1024;

export class WebSocketServerTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: ((message: JSONRPCMessage) => void) | undefined;

  readonly #socket: WebSocket;
  readonly #keepaliveMs: number;
  readonly #maxBufferedBytes: number;
  #keepalive: NodeJS.Timeout | undefined;
  #started = false;
  #closed = false;
  #delivery: Promise<void> = Promise.resolve();

  /** `socket` must be open (as `ws` hands it to a `connection` listener). */
  constructor(socket: WebSocket, options: WebSocketServerTransportOptions = {}) {
    this.#socket = socket;
    this.#keepaliveMs = options.keepaliveMs ?? defaultKeepaliveMs;
    this.#maxBufferedBytes = options.maxBufferedBytes ?? defaultMaxBufferedBytes;
  }

  /** True once the link is closed (by either side). */
  get closed(): boolean {
    return this.#closed;
  }

  start(): Promise<void> {
    if (this.#started) throw new Error('WebSocketServerTransport already started');
    this.#started = true;
    const socket = this.#socket;
    socket.on('message', (data, isBinary) => this.#receive(data, isBinary));
    socket.on('error', (error) => this.onerror?.(error));
    socket.on('close', () => this.#finish());
    if (socket.readyState !== socket.OPEN) this.#finish();
    else this.#startKeepalive();
    return Promise.resolve();
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('The WebSocket link is closed.'));
    if (this.#socket.bufferedAmount > this.#maxBufferedBytes) {
      const error = new Error(
        `The tool host reads too slowly (over ${this.#maxBufferedBytes} bytes queued); closing the link.`,
      );
      this.onerror?.(error);
      this.#socket.terminate();
      return Promise.reject(error);
    }
    return new Promise((resolve, reject) => {
      this.#socket.send(JSON.stringify(message), (error) => (error ? reject(error) : resolve()));
    });
  }

  /** Closes the link with a normal closure; `onclose` follows once the socket is closed. */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#socket.close(1000, 'closing');
    // A peer that does not complete the closing handshake is cut off.
    const force = setTimeout(() => this.#socket.terminate(), 2_000);
    force.unref();
    this.#socket.once('close', () => clearTimeout(force));
    if (!this.#started) this.#finish();
    return Promise.resolve();
  }

  #receive(data: RawData, isBinary: boolean): void {
    if (isBinary) {
      this.onerror?.(new Error('MCP over WebSocket uses text frames; a binary frame was dropped.'));
      return;
    }
    const text = Array.isArray(data)
      ? Buffer.concat(data).toString('utf8')
      : Buffer.isBuffer(data)
        ? data.toString('utf8')
        : Buffer.from(new Uint8Array(data)).toString('utf8');
    const excess = findJsonTextDepthExcess(text);
    if (excess !== undefined) {
      this.onerror?.(new Error(`A frame is ${describeDepthExcess(excess)} at ${excess.path}; dropped.`));
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      this.onerror?.(new Error(`A frame is not JSON: ${(error as Error).message}`));
      return;
    }
    const parsed = JSONRPCMessageSchema.safeParse(json);
    if (!parsed.success) {
      this.onerror?.(new Error(`A frame is not a JSON-RPC message: ${parsed.error.message}`));
      return;
    }
    // One microtask per message, in order. The SDK's Protocol runs notification handlers a microtask
    // late but handles responses at once: frames arriving in one chunk (a host's progress reports, then
    // its result) would otherwise see the result first, and the progress handler already removed.
    const message = parsed.data;
    this.#delivery = this.#delivery.then(() => {
      try {
        this.onmessage?.(message);
      } catch (error) {
        // A throwing handler must not break the chain (every later message would be lost).
        this.onerror?.(error instanceof Error ? error : new Error(String(error)));
      }
    });
  }

  #startKeepalive(): void {
    if (!(this.#keepaliveMs > 0)) return;
    let answered = true;
    this.#socket.on('pong', () => (answered = true));
    this.#keepalive = setInterval(() => {
      if (this.#closed) return;
      if (!answered) {
        this.onerror?.(new Error(`The tool host did not answer a ping within ${this.#keepaliveMs} ms.`));
        this.#socket.terminate();
        return;
      }
      answered = false;
      this.#socket.ping();
    }, this.#keepaliveMs);
    this.#keepalive.unref();
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#keepalive);
    // After the messages that arrived before the close: a host's last answer is not lost.
    void this.#delivery.then(() => this.onclose?.());
  }
}
