/**
 * Bounds the silence of a Cursor run: the time from the send to its first upstream event, and between
 * events afterwards. A dead or stalled backend otherwise keeps the client's stream open for minutes
 * (keepalives only) while the SDK retries the stream on its own (`serverCap 3`, `transportCap 10`,
 * a 30 s stall detector per attempt).
 *
 * The bound is suspended while the run legitimately waits on something other than the backend: host
 * tool calls parked for the client's result, or a built-in tool executing locally (agent mode). The SDK
 * keeps the backend stream alive itself then (client heartbeats every 5 s, exec heartbeats every 3 s).
 *
 * Hand-written: a resettable timer with a suspended state is smaller than any library for it. An event
 * only stamps the time (a 10k-delta stream must not create 10k timers); the timer, when it fires, re-arms
 * for what is left of the bound.
 */

export type RunWatchdogOptions = {
  /** Longest wait for the run's first upstream event; 0 disables. */
  firstEventMs: number;
  /** Longest silence between upstream events while the run is not suspended; 0 disables. */
  idleMs: number;
  /** Called once when a bound is exceeded, with the bound that was exceeded. */
  onExpired: (expired: { phase: 'first-event' | 'idle'; afterMs: number }) => void;
};

export class RunWatchdog {
  readonly #options: RunWatchdogOptions;
  #timer: NodeJS.Timeout | undefined;
  #recheck: NodeJS.Immediate | undefined;
  #sawEvent = false;
  /** When the current silence began (epoch ms). */
  #since = Date.now();
  #suspended = false;
  #stopped = false;

  constructor(options: RunWatchdogOptions) {
    this.#options = options;
    this.#arm();
  }

  /** An upstream event arrived: the silence starts again. */
  activity(): void {
    this.#since = Date.now();
    if (this.#sawEvent) return;
    this.#sawEvent = true;
    this.#arm();
  }

  /**
   * Whether the run is waiting on something other than the backend. Leaving the suspended state starts
   * a fresh idle period (the backend now owes the next event).
   */
  setSuspended(suspended: boolean): void {
    if (suspended === this.#suspended) return;
    this.#suspended = suspended;
    this.#since = Date.now();
    this.#arm();
  }

  /** The run ended: no bound any more. Idempotent. */
  stop(): void {
    this.#stopped = true;
    this.#clear();
  }

  #arm(): void {
    this.#clear();
    if (this.#stopped || this.#suspended) return;
    const phase = this.#sawEvent ? 'idle' : 'first-event';
    const afterMs = phase === 'idle' ? this.#options.idleMs : this.#options.firstEventMs;
    if (afterMs <= 0) return;
    const check = (): boolean => {
      const left = this.#since + afterMs - Date.now();
      if (left > 0) wait(left);
      return left <= 0;
    };
    const wait = (delayMs: number): void => {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        if (this.#stopped || !check()) return;
        // Past the bound by the clock. An event loop that was starved (CPU, a long GC) runs its due timers
        // before the I/O that arrived meanwhile: decide once that I/O ran (`setImmediate` follows the poll).
        this.#recheck = setImmediate(() => {
          this.#recheck = undefined;
          if (this.#stopped || !check()) return;
          this.#stopped = true;
          this.#options.onExpired({ phase, afterMs });
        });
      }, delayMs);
      this.#timer.unref();
    };
    wait(this.#since + afterMs - Date.now());
  }

  #clear(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#recheck !== undefined) clearImmediate(this.#recheck);
    this.#recheck = undefined;
  }
}
