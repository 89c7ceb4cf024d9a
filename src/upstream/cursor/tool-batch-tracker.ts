/**
 * Decides when a step's host tool calls are all known, from the SDK's own signals instead of a fixed
 * settle window: `tool-requests-listed` announces `callCount`; each call has `tool-call-started` and
 * then reaches `execute` (parked). The batch is complete when every announced call is parked and no
 * started call is still on its way. When the listing signal is absent, a short bounded quiet period
 * after the last parked call ends the batch.
 */
export class ToolBatchTracker {
  #announced: number | undefined;
  readonly #started = new Set<string>();
  readonly #parked = new Set<string>();

  listed(callCount: number): void {
    this.#announced = callCount;
  }

  started(callId: string): void {
    this.#started.add(callId);
  }

  parked(callId: string): void {
    this.#parked.add(callId);
  }

  get parkedCount(): number {
    return this.#parked.size;
  }

  /** Every announced and every started call has been parked. */
  get complete(): boolean {
    if (this.#parked.size === 0) return false;
    for (const id of this.#started) if (!this.#parked.has(id)) return false;
    return this.#announced === undefined || this.#parked.size >= this.#announced;
  }

  /** Nothing is known to be missing, but the listing signal never came: the caller waits briefly. */
  get waitingWithoutListing(): boolean {
    return this.#announced === undefined && this.complete;
  }

  reset(): void {
    this.#announced = undefined;
    this.#started.clear();
    this.#parked.clear();
  }
}
