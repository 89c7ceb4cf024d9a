/** Options of a {@link RepeatLimiter}. */
export type RepeatLimiterOptions = {
  /** The window after a logged occurrence in which repeats are only counted. Default 60 s. */
  intervalMs?: number;
  /** Called at the end of each window that counted repeats of `key` (a periodic count while they go on). */
  onRepeats: (key: string, repeats: number) => void;
};

type Window = { repeats: number; timer: NodeJS.Timeout };

/**
 * Rate-limits a repeated log line: the first occurrence of a key is logged, the ones within the next
 * `intervalMs` are counted, and every window that counted some ends with one `onRepeats` call; a window
 * without repeats forgets the key, so its next occurrence is logged in full again. Keys are a small fixed
 * set (warning codes); timers are unref'd and never hold the process open.
 */
export class RepeatLimiter {
  readonly #intervalMs: number;
  readonly #onRepeats: (key: string, repeats: number) => void;
  readonly #windows = new Map<string, Window>();

  constructor(options: RepeatLimiterOptions) {
    this.#intervalMs = options.intervalMs ?? 60_000;
    this.#onRepeats = options.onRepeats;
  }

  /** True when this occurrence of `key` is to be logged; false when it was only counted. */
  admit(key: string): boolean {
    const window = this.#windows.get(key);
    if (window !== undefined) {
      window.repeats += 1;
      return false;
    }
    this.#open(key);
    return true;
  }

  /** Reports the counts still open and stops every timer. */
  close(): void {
    for (const [key, window] of this.#windows) {
      clearTimeout(window.timer);
      if (window.repeats > 0) this.#onRepeats(key, window.repeats);
    }
    this.#windows.clear();
  }

  #open(key: string): void {
    const timer = setTimeout(() => {
      const window = this.#windows.get(key);
      this.#windows.delete(key);
      if (window === undefined || window.repeats === 0) return;
      this.#onRepeats(key, window.repeats);
      this.#open(key);
    }, this.#intervalMs);
    timer.unref();
    this.#windows.set(key, { repeats: 0, timer });
  }
}

/** The one message of a rate-limited warning's periodic count. */
export const REPEATED_WARNINGS_MESSAGE =
  'tolerated unsupported input (repeats since the last line of this code)';
