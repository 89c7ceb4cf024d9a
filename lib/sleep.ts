/** What a {@link sleep} may be told besides how long. */
export type SleepOptions = {
  /**
   * Ends the wait early: the sleep resolves (it never rejects) as soon as the signal aborts, and at once,
   * without a timer, if it already has. The listener is removed when the wait ends either way.
   */
  signal?: AbortSignal;
  /** Lets the process exit while this wait is pending (the timer is `unref`'d). */
  unref?: boolean;
};

/**
 * Resolves after `ms` milliseconds, on a timer even for zero or less (so it always yields to the event
 * loop). Never rejects: a caller that must tell an aborted wait from an elapsed one checks its signal.
 */
export const sleep = (ms: number, options: SleepOptions = {}): Promise<void> =>
  new Promise((resolve) => {
    const { signal, unref = false } = options;
    if (signal?.aborted === true) {
      resolve();
      return;
    }
    const timer = setTimeout(done, Math.max(0, ms));
    if (unref) timer.unref();
    signal?.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
