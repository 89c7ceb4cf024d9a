/**
 * A run's upstream events on their way to the one consumer, with text and reasoning deltas batched per
 * event-loop turn.
 *
 * The SDK hands over each delta of a backend read in its own microtask, and a consumer that keeps up takes
 * each one in between: without batching, a long answer crosses the engine and the socket as one event (and
 * one SSE frame, whose framing outweighs a few characters of text) per delta, writes that sit corked in the
 * socket until the end of the turn anyway (see `SseWriter`). So a delta is queued, or appended to the
 * previous one of the same kind while that one still waits: in the queue (the consumer is behind), or held
 * back to the end of this event-loop turn. The first delta of each kind in a turn is queued at once, so the
 * first text after a tool result or a pause adds no latency; the rest of the turn's deltas leave as one
 * event when the turn ends (`setImmediate`).
 */

import { AsyncQueue } from '../../../lib/async-queue.js';
import type { UpstreamEvent } from '../upstream-port.js';

type DeltaKind = 'text-delta' | 'reasoning-delta';

export class RunEventQueue {
  /** Single consumer; completes after {@link end}. */
  readonly events: AsyncQueue<UpstreamEvent>;
  /**
   * The last delta queued or held while the consumer has not taken it: the next delta of the same kind is
   * appended to it instead of queued.
   */
  #tail: { type: DeltaKind; text: string } | undefined;
  /** A delta held back to the end of the event-loop turn; it is also the `#tail` while it waits. */
  #held: { type: DeltaKind; text: string } | undefined;
  /** The delta kinds already handed to the consumer in this event-loop turn (reset by `setImmediate`). */
  readonly #sentThisTurn = new Set<DeltaKind>();

  /** `onTaken` hears of every event the consumer takes (a batched delta with all its text). */
  constructor(onTaken: (event: UpstreamEvent) => void) {
    this.events = new AsyncQueue<UpstreamEvent>(undefined, onTaken);
  }

  /** Queue an event after whatever delta is held; that delta is no longer the queue's last item. */
  push(event: UpstreamEvent): void {
    this.#release();
    this.#tail = undefined;
    this.events.push(event);
  }

  /** Queue a text or reasoning delta, batched as the file's header says. */
  pushDelta(type: DeltaKind, text: string): void {
    const tail = this.#tail;
    // The tail is the queue's last item while the queue is not empty (`push` clears it otherwise), or the
    // held delta.
    if (tail !== undefined && tail.type === type && (tail === this.#held || this.events.size > 0)) {
      tail.text += text;
      return;
    }
    const event = { type, text };
    if (!this.#sentThisTurn.has(type)) {
      if (this.#sentThisTurn.size === 0) setImmediate(this.#endTurn);
      this.#sentThisTurn.add(type);
      this.push(event);
    } else {
      this.#release();
      this.#held = event;
    }
    this.#tail = event;
  }

  /** Queue what is held and complete the queue. */
  end(): void {
    this.#release();
    this.events.end();
  }

  /** The event-loop turn ended: what was held leaves, and the next delta of each kind goes at once. */
  readonly #endTurn = (): void => {
    this.#sentThisTurn.clear();
    this.#release();
  };

  /** Queue the held delta, if any; it stays the tail while the consumer has not taken it. */
  #release(): void {
    const held = this.#held;
    if (held === undefined) return;
    this.#held = undefined;
    this.events.push(held);
  }
}
