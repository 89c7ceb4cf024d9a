/**
 * The SDK delivers the same text and thinking twice: through `send({ onDelta })` and through
 * `run.stream()`. Either may run ahead of the other. Each source keeps a cursor into one shared
 * sequence; a chunk is emitted only for the part beyond what the other source already delivered, so
 * nothing is duplicated and nothing is lost when one source drops a chunk. One merger spans a whole run.
 */
export class DeltaMerger {
  #emitted = 0;
  readonly #cursors = new Map<string, number>();

  /** Returns the part of `chunk` that is new, or '' when `source` is only catching up. */
  accept(source: string, chunk: string): string {
    const start = this.#cursors.get(source) ?? 0;
    const end = start + chunk.length;
    this.#cursors.set(source, end);
    if (end <= this.#emitted) return '';
    const fresh = chunk.slice(Math.max(0, this.#emitted - start));
    this.#emitted = end;
    return fresh;
  }

  /** How much of the sequence has been emitted. */
  get position(): number {
    return this.#emitted;
  }

  /**
   * Every source starts again from `position` (an upstream retry replays from there): what they re-send
   * up to the emitted position is swallowed, what goes beyond it is new.
   */
  rewind(position: number): void {
    for (const [source, cursor] of this.#cursors) this.#cursors.set(source, Math.min(cursor, position));
  }
}
