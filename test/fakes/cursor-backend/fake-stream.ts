/**
 * One agent stream of the HTTP/1.1 Connect transport: the server half is the `RunSSE` response, the
 * client half arrives as `BidiAppend` calls carrying the same request id. Appends can arrive before
 * the RunSSE request and out of order (each is its own HTTP request), so they are re-ordered by
 * `append_seqno` and held until the stream is open.
 */

import type { ServerResponse } from 'node:http';

import type { ClientMessage, JsonObject } from './client-message.js';
import type { ConnectEndStreamError } from './connect-envelope.js';
import { encodeEndStreamEnvelope, encodeMessageEnvelope } from './connect-envelope.js';
import type { ProtoRegistry } from './sdk-proto-registry.js';

/** Observes every message on a stream (debugging aid): server messages as proto3 JSON, client ones decoded. */
export type FakeStreamTrace = (direction: 'send' | 'receive', message: JsonObject | ClientMessage) => void;

export class FakeStream {
  readonly requestId: string;
  private readonly registry: ProtoRegistry;
  private response: ServerResponse | undefined;
  private readonly controller = new AbortController();
  /** The SDK numbers the appends of each stream from 0. */
  private nextSeqno = 0;
  private readonly outOfOrder = new Map<number, ClientMessage>();
  private readonly ready: ClientMessage[] = [];
  private listener: ((message: ClientMessage) => void) | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private stalledUntil = 0;
  private finished = false;
  /** Client heartbeats received (they are not dispatched). */
  clientHeartbeats = 0;

  private readonly trace: FakeStreamTrace | undefined;

  constructor(requestId: string, registry: ProtoRegistry, trace?: FakeStreamTrace) {
    this.requestId = requestId;
    this.registry = registry;
    this.trace = trace;
  }

  /** Aborted when the stream is over (ended by us or closed by the client). */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get open(): boolean {
    return this.response !== undefined && !this.finished;
  }

  /** Bytes written to the RunSSE response that its socket has not taken yet (grows when the SDK stops reading). */
  get writeBacklog(): number {
    return this.response?.writableLength ?? 0;
  }

  /** Attaches the RunSSE response; starts server heartbeats when `heartbeatMs > 0`. */
  attach(response: ServerResponse, heartbeatMs: number): void {
    this.response = response;
    response.writeHead(200, { 'content-type': 'application/connect+proto' });
    response.flushHeaders();
    response.on('close', () => this.finish());
    if (heartbeatMs > 0) {
      this.heartbeatTimer = setInterval(() => {
        if (Date.now() >= this.stalledUntil) this.send({ interactionUpdate: { heartbeat: {} } });
      }, heartbeatMs);
      this.heartbeatTimer.unref();
    }
    this.flush();
  }

  /** Receives a client message with its `append_seqno`; dispatches in seqno order once open. */
  receive(seqno: number, message: ClientMessage): void {
    if (message.kind === 'client-heartbeat') this.clientHeartbeats += 1;
    this.trace?.('receive', message);
    this.outOfOrder.set(seqno, message);
    for (let next = this.outOfOrder.get(this.nextSeqno); next; next = this.outOfOrder.get(this.nextSeqno)) {
      this.outOfOrder.delete(this.nextSeqno);
      this.nextSeqno += 1;
      this.ready.push(next);
    }
    this.flush();
  }

  /** Sets the single consumer of client messages (the run). */
  onMessage(listener: (message: ClientMessage) => void): void {
    this.listener = listener;
    this.flush();
  }

  /** Sends one `AgentServerMessage` given as proto3 JSON. No-op once the stream is over. */
  send(message: JsonObject): void {
    if (!this.open || !this.response) return;
    this.trace?.('send', message);
    const bytes = this.registry.get('agent.v1.AgentServerMessage').fromJson(message).toBinary();
    this.response.write(encodeMessageEnvelope(bytes));
  }

  /** Suppresses heartbeats until `until` (epoch ms). */
  stallUntil(until: number): void {
    this.stalledUntil = until;
  }

  /** Ends the stream with an OK trailer or a Connect error (with trailer metadata). Idempotent. */
  end(error?: ConnectEndStreamError, metadata?: Readonly<Record<string, readonly string[]>>): void {
    if (!this.open || !this.response) return;
    const response = this.response;
    this.finish();
    response.end(encodeEndStreamEnvelope(error, metadata));
  }

  /** Destroys the socket without a trailer (a network drop). */
  destroy(): void {
    const response = this.response;
    this.finish();
    response?.destroy();
  }

  private flush(): void {
    if (!this.response || !this.listener) return;
    for (let message = this.ready.shift(); message; message = this.ready.shift()) {
      if (message.kind !== 'client-heartbeat') this.listener(message);
    }
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    clearInterval(this.heartbeatTimer);
    this.controller.abort(new Error(`stream ${this.requestId} closed`));
  }
}
