import type { ServerResponse } from 'node:http';
import type { SseFrame } from '../../protocols/sse-frame.js';
import { serializeSseFrame } from '../../protocols/sse-serialize.js';

export type SseWriterOptions = {
  /** Idle time after which `keepalive()` frames are written; 0 disables. */
  keepaliveMs: number;
  keepalive: () => SseFrame;
  /**
   * How long one write may wait for `drain` (a client that stopped reading) before the writer gives up:
   * it becomes `stalled`, `onStall` runs, later writes go out without waiting and `end()` destroys the
   * socket shortly after its final frames. 0 (default) waits forever.
   */
  stallTimeoutMs?: number;
  onStall?: () => void;
};

/** How many writes of one event-loop turn go to the socket at once (the block start and its first delta). */
const immediateFlushesPerTurn = 2;

/** After a stall, how long the final frames get to reach a client that resumes reading. */
const stalledEndGraceMs = 1_000;

/**
 * Writes SSE frames to a response: headers go out at once (before the upstream produced anything),
 * `write` resolves only when the socket can take more (`drain`), and while nothing flows a keepalive
 * frame is written on an unref'd timer. Once the client has gone, writes are dropped.
 */
export class SseWriter {
  #response: ServerResponse;
  #options: SseWriterOptions;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  #stalled = false;
  #flushesThisTurn = 0;

  constructor(response: ServerResponse, options: SseWriterOptions) {
    this.#response = response;
    this.#options = options;
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    // Sent with the first frame when one is written in this tick (one syscall, not two), else alone.
    process.nextTick(() => {
      if (!response.headersSent && !response.destroyed) response.flushHeaders();
    });
    response.on('close', () => this.#stop());
    this.#arm();
  }

  get closed(): boolean {
    return this.#closed || this.#response.destroyed;
  }

  /** The client did not drain within `stallTimeoutMs`: the response is being given up. */
  get stalled(): boolean {
    return this.#stalled;
  }

  /**
   * Write frames that open something — the stream (`message_start`) or a block (`content_block_start`)
   * — and need not leave on their own. Unlike {@link write}, they are not handed to the socket at once:
   * they leave with the next {@link write} (one socket write for a block's start and its first delta),
   * or once the current chain of microtasks has run (Node's own uncork), with the headers if those have
   * not left yet. So the work a turn starts right after opening its stream — resuming a parked run with
   * the client's tool results, which the SDK then sends on — is not behind a socket write, and the first
   * delta is not behind its block's start.
   */
  hold(frames: readonly SseFrame[]): void {
    if (frames.length === 0 || this.closed) return;
    this.#arm();
    let text = '';
    for (const frame of frames) text += serializeSseFrame(frame);
    this.#response.write(text);
  }

  /**
   * Write frames as one chunk. Returns undefined when the socket can take more, so the caller needs no
   * promise per event; otherwise a promise that resolves after `drain` — or, past the stall deadline,
   * without it (the writer is then `stalled`). What waits in the socket is what `write` accepted.
   *
   * Do not `cork()` the response itself: while it is corked, a write past the high-water mark returns
   * false although the socket never needed to drain, and no `drain` ever comes.
   */
  write(frames: readonly SseFrame[]): Promise<void> | undefined {
    if (frames.length === 0 || this.closed) return undefined;
    this.#arm();
    let text = '';
    for (const frame of frames) text += serializeSseFrame(frame);
    const accepted = this.#response.write(text);
    this.#flush();
    if (accepted || this.#stalled) return undefined;
    return this.#drained();
  }

  /**
   * Hand the first writes of each event-loop turn to the socket at once. Node's `http` corks the socket on
   * a response write until the next `process.nextTick`, which runs only once the microtask queue is empty;
   * the SDK delivers a backend read as one long chain of microtasks (decoding, its bookkeeping, the end of
   * the turn), so the first delta written in that chain would otherwise wait for all of it. Later writes of the same turn stay corked and leave
   * together: a burst of thousands of deltas then fills the corked buffer, `write` reports it full, and
   * the run merges what queues meanwhile into a few large events — flushing every write instead doubled
   * the CPU of a 10k-delta answer (one frame per delta).
   */
  #flush(): void {
    if (this.#flushesThisTurn >= immediateFlushesPerTurn) return;
    const socket = this.#response.socket;
    // A test double may have no socket at all.
    if (!socket || socket.writableCorked === 0) return;
    if (this.#flushesThisTurn === 0) setImmediate(() => (this.#flushesThisTurn = 0));
    this.#flushesThisTurn += 1;
    socket.uncork();
  }

  #drained(): Promise<void> {
    const stallMs = this.#options.stallTimeoutMs ?? 0;
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#response.off('drain', done);
        this.#response.off('close', done);
        resolve();
      };
      const timer =
        stallMs > 0
          ? setTimeout(() => {
              this.#stalled = true;
              this.#options.onStall?.();
              done();
            }, stallMs).unref()
          : undefined;
      this.#response.on('drain', done);
      this.#response.on('close', done);
    });
  }

  /**
   * Write the final frames and end the response. A stalled response's connection is destroyed soon
   * after, so what its socket holds is released even if the client never reads again.
   */
  async end(frames: readonly SseFrame[] = []): Promise<void> {
    await this.write(frames);
    this.#stop();
    // Taken before the end: a finished response lets go of its socket.
    const socket = this.#response.socket;
    if (!this.#response.destroyed && !this.#response.writableEnded) this.#response.end();
    if (this.#stalled && socket !== null && !socket.destroyed) {
      // Whether or not the final frames reached the client by then: a client that resumed reading in
      // time finishes the response, which would otherwise leave its connection open for another request
      // (for as long as the server keeps idle connections) after it stalled once.
      const timer = setTimeout(() => socket.destroy(), stalledEndGraceMs).unref();
      socket.once('close', () => clearTimeout(timer));
    }
  }

  #arm(): void {
    if (this.#closed || this.#options.keepaliveMs <= 0) return;
    // Re-armed on every frame: refresh() restarts the timer without allocating a new one.
    if (this.#timer !== undefined) {
      this.#timer.refresh();
      return;
    }
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.closed) return;
      void this.write([this.#options.keepalive()]);
    }, this.#options.keepaliveMs);
    this.#timer.unref();
  }

  #stop(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
