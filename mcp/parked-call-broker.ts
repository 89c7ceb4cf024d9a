/**
 * Parked host tool calls, keyed by the SDK's `toolCallId`.
 *
 * When the model calls a host tool, the SDK's `execute` reaches the `custom-user-tools` server, which
 * parks the call here: `park()` returns a promise the bridge later settles with the client's result.
 * Contracts:
 * - Idempotent by `toolCallId`: the SDK retries a stalled stream by calling `execute` again with the same
 *   id while the first is pending; that second `park()` returns the same promise and is not announced
 *   again. After settlement a repeated `park()` returns the same settled result (the last
 *   `settledMemory` ids are remembered).
 * - Every new call is announced exactly once, synchronously inside `park()`, in park order, to every
 *   `onParked` listener and every open `parkedCalls()` iterator.
 * - The returned promise never rejects: failures, deadlines, cancellation and shutdown settle it with an
 *   MCP `isError` result. `execute` gets no AbortSignal, so without `settleAll()` on cancel, eviction
 *   and shutdown the SDK would wait forever.
 */

import type { Logger } from 'pino';
import { AsyncQueue } from '../lib/async-queue.js';
import { createErrorResult } from './tool-call-result.js';
import type { ToolCallResult } from './tool-call-result.js';
import { errorMessage } from '../lib/error-message.js';

/** The longest delay a Node timer honours; longer (or infinite) delays fire after 1 ms instead. */
export const MAX_TIMER_DELAY_MS = 2_147_483_647;

/** What the tool host asks the broker to park. */
export type ParkRequest = { toolCallId: string; toolName: string; args: Record<string, unknown> };

/** A parked call as announced to the bridge. `parkedAt` is epoch ms. */
export type ParkedCall = Readonly<ParkRequest & { parkedAt: number }>;

/** Per-call options. `deadlineMs` overrides the broker default; a non-positive or non-finite value means none. */
export type ParkOptions = { deadlineMs?: number };

export type ParkedCallBrokerOptions = {
  /** Settle each call with an `isError` result after this many ms. Default: no deadline. */
  deadlineMs?: number;
  /** How many settled ids to remember for repeated `park()`s. Default 1024. */
  settledMemory?: number;
  /** Receives listener failures (a throwing listener never breaks `park()`). */
  logger?: Pick<Logger, 'warn'>;
};

export type ParkedCallListener = (call: ParkedCall) => void;

/** Where an id stands: parked and waiting, settled (and still remembered), or never seen / forgotten. */
export type ParkedCallStatus = 'pending' | 'settled' | 'unknown';

type PendingEntry = {
  call: ParkedCall;
  promise: Promise<ToolCallResult>;
  settle: (result: ToolCallResult) => void;
  timer: NodeJS.Timeout | undefined;
};

export class ParkedCallBroker {
  readonly #pending = new Map<string, PendingEntry>();
  readonly #settled = new Map<string, ToolCallResult>();
  readonly #listeners = new Set<ParkedCallListener>();
  readonly #queues = new Set<AsyncQueue<ParkedCall>>();
  readonly #deadlineMs: number | undefined;
  readonly #settledMemory: number;
  readonly #logger: Pick<Logger, 'warn'> | undefined;
  #closedReason: string | undefined;

  constructor(options: ParkedCallBrokerOptions = {}) {
    this.#deadlineMs = options.deadlineMs;
    this.#settledMemory = Math.max(0, options.settledMemory ?? 1024);
    this.#logger = options.logger;
  }

  /**
   * Parks a call (or attaches to the one already parked under the same id) and returns its result.
   * After `close()`, new ids settle at once with an `isError` result and are not announced.
   */
  park(request: ParkRequest, options: ParkOptions = {}): Promise<ToolCallResult> {
    const id = request.toolCallId;
    const pending = this.#pending.get(id);
    if (pending) return pending.promise;
    const settled = this.#settled.get(id);
    if (settled) return Promise.resolve(settled);
    if (this.#closedReason !== undefined) {
      const result = abandonedResult(request.toolName, this.#closedReason);
      this.#remember(id, result);
      return Promise.resolve(result);
    }
    let settle: (result: ToolCallResult) => void = () => {};
    const promise = new Promise<ToolCallResult>((resolve) => (settle = resolve));
    const call: ParkedCall = Object.freeze({ ...request, parkedAt: Date.now() });
    const entry: PendingEntry = { call, promise, settle, timer: undefined };
    this.#pending.set(id, entry);
    // Armed before announcing: a listener may settle the call synchronously, which clears the timer.
    entry.timer = this.#armDeadline(entry, options.deadlineMs ?? this.#deadlineMs);
    this.#announce(call);
    return promise;
  }

  /** Settles a pending call with the tool host's result. Returns false for unknown or already settled ids. */
  resolve(toolCallId: string, result: ToolCallResult): boolean {
    return this.#settle(toolCallId, result);
  }

  /** Settles a pending call with an `isError` result whose text is `reason` (shown to the model verbatim). */
  reject(toolCallId: string, reason: string | Error): boolean {
    return this.#settle(toolCallId, createErrorResult(errorMessage(reason)));
  }

  /**
   * Settles every pending call with an `isError` result naming `reason` (cancel, eviction, shutdown).
   * Returns the settled ids in park order. The broker stays usable.
   */
  settleAll(reason: string): string[] {
    const entries = [...this.#pending.values()];
    for (const { call } of entries) this.#settle(call.toolCallId, abandonedResult(call.toolName, reason));
    return entries.map(({ call }) => call.toolCallId);
  }

  /** `settleAll(reason)`, then refuse new calls, end every iterator and drop listeners. Idempotent. */
  close(reason = 'the tool host shut down'): void {
    if (this.#closedReason !== undefined) return;
    this.settleAll(reason);
    this.#closedReason = reason;
    for (const queue of [...this.#queues]) queue.end();
    this.#listeners.clear();
  }

  /** Calls `listener` once for every call parked from now on, in park order. Returns an unsubscribe. */
  onParked(listener: ParkedCallListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Every call parked from now on, in order, buffered until read. Completes on `close()` or when `signal`
   * aborts; `break` out of a `for await` unsubscribes. Calls already pending are not replayed (see `pending()`).
   */
  parkedCalls(options: { signal?: AbortSignal } = {}): AsyncIterableIterator<ParkedCall> {
    const { signal } = options;
    const onAbort = (): void => queue.end();
    const queue: AsyncQueue<ParkedCall> = new AsyncQueue(() => {
      this.#queues.delete(queue);
      signal?.removeEventListener('abort', onAbort);
    });
    this.#queues.add(queue);
    if (this.#closedReason !== undefined || signal?.aborted) queue.end();
    else signal?.addEventListener('abort', onAbort, { once: true });
    return queue;
  }

  /** Ids of calls still waiting for a result, in park order. */
  pending(): string[] {
    return [...this.#pending.keys()];
  }

  /** The pending call with this id, if any. */
  get(toolCallId: string): ParkedCall | undefined {
    return this.#pending.get(toolCallId)?.call;
  }

  status(toolCallId: string): ParkedCallStatus {
    if (this.#pending.has(toolCallId)) return 'pending';
    return this.#settled.has(toolCallId) ? 'settled' : 'unknown';
  }

  #settle(toolCallId: string, result: ToolCallResult): boolean {
    const entry = this.#pending.get(toolCallId);
    if (!entry) return false;
    this.#pending.delete(toolCallId);
    clearTimeout(entry.timer);
    this.#remember(toolCallId, result);
    entry.settle(result);
    return true;
  }

  #remember(toolCallId: string, result: ToolCallResult): void {
    this.#settled.set(toolCallId, result);
    for (const oldest of this.#settled.keys()) {
      if (this.#settled.size <= this.#settledMemory) break;
      this.#settled.delete(oldest);
    }
  }

  #armDeadline(entry: PendingEntry, deadlineMs: number | undefined): NodeJS.Timeout | undefined {
    if (deadlineMs === undefined || !Number.isFinite(deadlineMs) || deadlineMs <= 0) return undefined;
    const { toolCallId, toolName } = entry.call;
    const timer = setTimeout(
      () => {
        // The entry may have settled (and the id been parked anew) since; only time out this very entry.
        if (this.#pending.get(toolCallId) !== entry) return;
        const text = `Tool call "${toolName}" timed out after ${deadlineMs} ms without a result from the tool host.`;
        this.#settle(toolCallId, createErrorResult(text));
      },
      Math.min(deadlineMs, MAX_TIMER_DELAY_MS),
    );
    timer.unref();
    return timer;
  }

  #announce(call: ParkedCall): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(call);
      } catch (error) {
        this.#logger?.warn({ err: error, toolCallId: call.toolCallId }, 'parked-call listener threw');
      }
    }
    for (const queue of this.#queues) queue.push(call);
  }
}

function abandonedResult(toolName: string, reason: string): ToolCallResult {
  return createErrorResult(
    `Tool call "${toolName}" was abandoned before the tool host answered: ${reason.replace(/\.+$/, '')}.`,
  );
}
