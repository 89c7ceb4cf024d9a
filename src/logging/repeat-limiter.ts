/** Options of a {@link RepeatLimiter}. */
export type RepeatLimiterOptions = {
  /** The window after a logged occurrence in which repeats are only counted. Default 60 s. */
  intervalMs?: number;
  /**
   * Called at the end of each window that counted repeats of `key` (a periodic count while they go on),
   * with the distinct details of the counted occurrences, the first `maxDetails` of them.
   */
  onRepeats: (key: string, repeats: number, details: readonly string[]) => void;
  /** How many distinct details a window keeps for its `onRepeats` call. Default 5. */
  maxDetails?: number;
};

type Window = { repeats: number; details: Set<string>; timer: NodeJS.Timeout };

/**
 * Rate-limits a repeated log line: the first occurrence of a key is logged, the ones within the next
 * `intervalMs` are counted, and every window that counted some ends with one `onRepeats` call; a window
 * without repeats forgets the key, so its next occurrence is logged in full again. Keys are a small fixed
 * set (warning codes); a counted occurrence's detail (what exactly was dropped) is kept, a bounded number
 * of distinct ones per window, so the count still names what it counted. Timers are unref'd and never
 * hold the process open.
 */
export class RepeatLimiter {
  readonly #intervalMs: number;
  readonly #onRepeats: RepeatLimiterOptions['onRepeats'];
  readonly #maxDetails: number;
  readonly #windows = new Map<string, Window>();

  constructor(options: RepeatLimiterOptions) {
    this.#intervalMs = options.intervalMs ?? 60_000;
    this.#onRepeats = options.onRepeats;
    this.#maxDetails = options.maxDetails ?? 5;
  }

  /**
   * True when this occurrence of `key` is to be logged; false when it was only counted (with `detail`,
   * if given, among the window's details).
   */
  admit(key: string, detail?: string): boolean {
    const window = this.#windows.get(key);
    if (window !== undefined) {
      window.repeats += 1;
      if (detail !== undefined && window.details.size < this.#maxDetails) window.details.add(detail);
      return false;
    }
    this.#open(key);
    return true;
  }

  /** Reports the counts still open and stops every timer. */
  close(): void {
    for (const [key, window] of this.#windows) {
      clearTimeout(window.timer);
      if (window.repeats > 0) this.#onRepeats(key, window.repeats, [...window.details]);
    }
    this.#windows.clear();
  }

  #open(key: string): void {
    const timer = setTimeout(() => {
      const window = this.#windows.get(key);
      this.#windows.delete(key);
      if (window === undefined || window.repeats === 0) return;
      this.#onRepeats(key, window.repeats, [...window.details]);
      this.#open(key);
    }, this.#intervalMs);
    timer.unref();
    this.#windows.set(key, { repeats: 0, details: new Set(), timer });
  }
}

/** The one message of a rate-limited warning's periodic count. */
export const REPEATED_WARNINGS_MESSAGE =
  'tolerated unsupported input (repeats since the last line of this code)';
