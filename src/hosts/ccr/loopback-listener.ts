/**
 * The facade's private HTTP listener for upstream CCR, which always `fetch`es `config.url` (llms
 * `sendUnifiedRequest`) and has no way to take a ready Response. Each turn's Response is parked under a
 * one-time ticket; CCR's fetch of `http://127.0.0.1:<port>/<secret>/<ticket>` takes it and streams it back.
 * The per-process secret and the random ticket keep every other local process out.
 *
 * Lifetimes: a ticket is taken once, by the loopback fetch or not at all (in a CCR that honours
 * `__providerResponse` the same Response is consumed directly). A ticket nobody took within `ticketTtlMs`
 * is dropped, and its Response body cancelled unless someone is already reading it, which aborts the turn.
 * When CCR aborts its fetch (Claude Code went away), the socket closes and piping cancels the body too.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import type { Logger } from 'pino';

export type LoopbackListenerOptions = {
  logger: Logger;
  /** How long a parked Response waits for its fetch (default 60 s). */
  ticketTtlMs?: number;
};

type Ticket = { response: Response; timer: NodeJS.Timeout };

const defaultTicketTtlMs = 60_000;

/** A listener on 127.0.0.1 (random port) that hands out parked Responses by one-time ticket. */
export class LoopbackListener {
  readonly #server: Server;
  readonly #secret = randomBytes(24).toString('base64url');
  readonly #tickets = new Map<string, Ticket>();
  readonly #logger: Logger;
  readonly #ticketTtlMs: number;
  #port = 0;

  private constructor(options: LoopbackListenerOptions) {
    this.#logger = options.logger;
    this.#ticketTtlMs = options.ticketTtlMs ?? defaultTicketTtlMs;
    this.#server = createServer((request, response) => this.#handle(request, response));
  }

  /** Starts listening; the server is unref'd so it never keeps CCR's process alive on its own. */
  static async start(options: LoopbackListenerOptions): Promise<LoopbackListener> {
    const listener = new LoopbackListener(options);
    await new Promise<void>((resolve, reject) => {
      listener.#server.once('error', reject);
      listener.#server.listen(0, '127.0.0.1', () => {
        listener.#server.off('error', reject);
        resolve();
      });
    });
    listener.#port = (listener.#server.address() as AddressInfo).port;
    listener.#server.unref();
    return listener;
  }

  /** Tickets waiting for their fetch. */
  get pendingTickets(): number {
    return this.#tickets.size;
  }

  /** Parks `response` under a fresh ticket and returns the URL that takes it (once). */
  park(response: Response): string {
    const ticket = randomBytes(18).toString('base64url');
    const timer = setTimeout(() => this.#expire(ticket), this.#ticketTtlMs);
    timer.unref();
    this.#tickets.set(ticket, { response, timer });
    return `http://127.0.0.1:${this.#port}/${this.#secret}/${ticket}`;
  }

  async close(): Promise<void> {
    for (const ticket of [...this.#tickets.keys()]) this.#expire(ticket);
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  #expire(ticket: string): void {
    const parked = this.#tickets.get(ticket);
    if (parked === undefined) return;
    this.#tickets.delete(ticket);
    clearTimeout(parked.timer);
    const body = parked.response.body;
    // Read directly (a CCR honouring `__providerResponse`): not ours to cancel.
    if (body !== null && !body.locked) void body.cancel(new Error('the response was never fetched'));
  }

  #take(path: string): Response | undefined {
    const [, secret = '', ticket = '', ...rest] = path.split('/');
    if (rest.length > 0 || !this.#secretMatches(secret)) return undefined;
    const parked = this.#tickets.get(ticket);
    if (parked === undefined) return undefined;
    this.#tickets.delete(ticket);
    clearTimeout(parked.timer);
    return parked.response;
  }

  #secretMatches(candidate: string): boolean {
    const expected = Buffer.from(this.#secret);
    const given = Buffer.from(candidate);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  #handle(request: IncomingMessage, response: ServerResponse): void {
    request.resume();
    const parked = this.#take(new URL(request.url ?? '/', 'http://127.0.0.1').pathname);
    // Already read directly (`__providerResponse`): nothing left to serve.
    if (parked === undefined || parked.bodyUsed || parked.body?.locked === true) {
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({ error: { message: 'unknown or used ticket', type: 'invalid_request_error' } }),
      );
      return;
    }
    response.writeHead(parked.status, Object.fromEntries(parked.headers.entries()));
    response.flushHeaders();
    const body = parked.body;
    if (body === null) {
      response.end();
      return;
    }
    // pipeline destroys the source when the socket closes early, which cancels the web stream.
    pipeline(Readable.fromWeb(body as NodeReadableStream<Uint8Array>), response).catch((error: unknown) => {
      this.#logger.debug({ err: error }, 'CCR loopback response ended early');
    });
  }
}
