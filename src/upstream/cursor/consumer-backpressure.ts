/**
 * The bound on what a run holds for a consumer that does not take it: past `maxPendingChars` of text and
 * reasoning handed over by the SDK and not yet taken, the backend stream is paused (its writes block, see
 * {@link BackendFlow}) instead of the rest of the answer being held in memory; once the consumer took half
 * of it, the backend is read again.
 */

import type { BackendFlow } from './backend-flow.js';

export class ConsumerBackpressure {
  readonly #flow: Pick<BackendFlow, 'paused' | 'pause' | 'resume'>;
  readonly #maxPendingChars: number;
  readonly #onPaused: (pendingChars: number) => void;
  readonly #onResumed: () => void;
  /** Text and reasoning handed over by the SDK that the consumer has not taken (held, queued or merged). */
  #pendingChars = 0;

  constructor(options: {
    flow: Pick<BackendFlow, 'paused' | 'pause' | 'resume'>;
    maxPendingChars: number;
    /** The backend was paused with this much pending. */
    onPaused: (pendingChars: number) => void;
    onResumed: () => void;
  }) {
    this.#flow = options.flow;
    this.#maxPendingChars = options.maxPendingChars;
    this.#onPaused = options.onPaused;
    this.#onResumed = options.onResumed;
  }

  /** The SDK handed over `chars` more for the consumer. Pauses the backend past the bound, if `mayPause`. */
  handedOver(chars: number, mayPause: boolean): void {
    this.#pendingChars += chars;
    if (!mayPause || this.#pendingChars <= this.#maxPendingChars || this.#flow.paused) return;
    this.#flow.pause();
    this.#onPaused(this.#pendingChars);
  }

  /** The consumer took `chars`. Resumes the backend once half the bound is left. */
  taken(chars: number): void {
    this.#pendingChars -= chars;
    if (!this.#flow.paused || this.#pendingChars > this.#maxPendingChars / 2) return;
    this.#flow.resume();
    this.#onResumed();
  }
}
