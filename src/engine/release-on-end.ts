/**
 * `events` with a callback for the end of its iteration, however it ends: the iterator completes, a
 * `next()` rejects, or the consumer stops (`return()`, as `for await` does on `break` or a throw).
 * `release(served)` runs exactly once, before the consumer sees the end; `served`: at least one event
 * was handed out. Iterating starts `events` on the first `next()`, as an async generator would.
 *
 * Each `next()` hands back the promise of `events`' own `next()`: the consumer waits no extra microtask
 * per event (an async generator around `for await` cost several, each behind whatever the SDK had queued).
 */
export const releaseOnEnd = <T>(
  events: AsyncIterable<T>,
  release: (served: boolean) => void,
): AsyncIterable<T> => ({
  [Symbol.asyncIterator]: (): AsyncIterator<T> => {
    let iterator: AsyncIterator<T> | undefined;
    let served = false;
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      release(served);
    };
    const done: IteratorReturnResult<undefined> = { done: true, value: undefined };
    return {
      next: (): Promise<IteratorResult<T>> => {
        if (ended) return Promise.resolve(done);
        iterator ??= events[Symbol.asyncIterator]();
        const result = iterator.next();
        // Registered before the consumer's own reaction, so it runs first.
        result.then((next) => (next.done === true ? end() : (served = true)), end);
        return result;
      },
      return: async (): Promise<IteratorResult<T>> => {
        try {
          if (!ended) await iterator?.return?.();
        } finally {
          end();
        }
        return done;
      },
    };
  },
});
