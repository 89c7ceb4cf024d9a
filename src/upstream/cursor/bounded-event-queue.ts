/**
 * A run's event queue with a high-water mark, so a client that does not read stops the SDK run instead
 * of growing memory: `room()` is pending while more than `highWaterEvents` events or `highWaterBytes`
 * of text wait, and settles once the consumer has taken the queue back below half of both (or the queue
 * ended). The SDK awaits `onDelta`, so returning `room()` from it holds the run's stream (backpressure up
 * to the upstream); what the SDK pushes meanwhile from other sources is still queued, never dropped.
 */

import { AsyncQueue } from '../../../mcp/index.js';
import type { UpstreamEvent } from '../upstream-port.js';

export type BoundedQueueOptions = { highWaterEvents?: number; highWaterBytes?: number };

const sizeOf = (event: UpstreamEvent): number =>
  event.type === 'text-delta' || event.type === 'reasoning-delta' ? event.text.length : 0;

export class BoundedEventQueue extends AsyncQueue<UpstreamEvent> {
  readonly #highEvents: number;
  readonly #highBytes: number;
  #events = 0;
  #bytes = 0;
  #ended = false;
  #waiters: Array<() => void> = [];

  constructor(options: BoundedQueueOptions = {}) {
    super(() => {
      this.#ended = true;
      this.#release();
    });
    this.#highEvents = options.highWaterEvents ?? 1_024;
    this.#highBytes = options.highWaterBytes ?? 1024 * 1024;
  }

  /** Events waiting for the consumer. */
  get pending(): number {
    return this.#events;
  }

  override push(item: UpstreamEvent): void {
    if (this.#ended) return;
    this.#events += 1;
    this.#bytes += sizeOf(item);
    super.push(item);
  }

  override async next(): Promise<IteratorResult<UpstreamEvent, undefined>> {
    const result = await super.next();
    if (result.done !== true) {
      this.#events -= 1;
      this.#bytes -= sizeOf(result.value);
      if (this.#events <= this.#highEvents / 2 && this.#bytes <= this.#highBytes / 2) this.#release();
    }
    return result;
  }

  /** Settled while there is room; pending above the high-water mark until the consumer catches up. */
  room(): Promise<void> | undefined {
    if (this.#ended || (this.#events <= this.#highEvents && this.#bytes <= this.#highBytes)) return undefined;
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  #release(): void {
    for (const resolve of this.#waiters.splice(0)) resolve();
  }
}
