/**
 * An unbounded single-consumer queue exposed as an async iterator. Items pushed before the consumer
 * asks are buffered in order; `end()` lets the consumer drain what is buffered, then completes it.
 */
export class AsyncQueue<T> implements AsyncIterableIterator<T> {
  /**
   * Buffered items from `#head` on. Taken by index, not `shift()`: on a large array V8's `shift()` moves
   * every remaining element, which makes draining a long buffer quadratic; by index it stays linear.
   */
  #buffer: T[] = [];
  #head = 0;
  readonly #waiting: Array<(result: IteratorResult<T, undefined>) => void> = [];
  readonly #onReturn: (() => void) | undefined;
  readonly #onTake: ((item: T) => void) | undefined;
  #ended = false;

  /**
   * `onReturn` runs once when the queue ends, whether by `end()` or by the consumer's `return()`;
   * `onTake` runs for each item as the consumer takes it (a producer's measure of what waits).
   */
  constructor(onReturn?: () => void, onTake?: (item: T) => void) {
    this.#onReturn = onReturn;
    this.#onTake = onTake;
  }

  /** Appends an item; ignored once the queue has ended. */
  push(item: T): void {
    if (this.#ended) return;
    const waiter = this.#waiting.shift();
    if (waiter === undefined) {
      this.#buffer.push(item);
      return;
    }
    this.#onTake?.(item);
    waiter({ value: item, done: false });
  }

  /** How many items are buffered for the consumer. */
  get size(): number {
    return this.#buffer.length - this.#head;
  }

  /** Ends the queue: buffered items are still delivered, then every `next()` reports done. Idempotent. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const waiter of this.#waiting.splice(0)) waiter({ value: undefined, done: true });
    this.#onReturn?.();
  }

  next(): Promise<IteratorResult<T, undefined>> {
    if (this.#head < this.#buffer.length) {
      const value = this.#buffer[this.#head] as T;
      this.#buffer[this.#head] = undefined as T;
      this.#head += 1;
      if (this.#head === this.#buffer.length) {
        this.#buffer = [];
        this.#head = 0;
      } else if (this.#head >= 1024 && this.#head * 2 >= this.#buffer.length) {
        this.#buffer = this.#buffer.slice(this.#head);
        this.#head = 0;
      }
      this.#onTake?.(value);
      return Promise.resolve({ value, done: false });
    }
    if (this.#ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** The consumer stops early (`break` in `for await`): buffered items are dropped. */
  return(): Promise<IteratorResult<T, undefined>> {
    this.#buffer = [];
    this.#head = 0;
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
