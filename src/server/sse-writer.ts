import type { ServerResponse } from 'node:http';
import type { SseFrame } from '../protocols/sse-frame.js';
import { serializeSseFrame } from '../protocols/sse-serialize.js';

export type SseWriterOptions = {
  /** Idle time after which `keepalive()` frames are written; 0 disables. */
  keepaliveMs: number;
  keepalive: () => SseFrame;
};

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

  constructor(response: ServerResponse, options: SseWriterOptions) {
    this.#response = response;
    this.#options = options;
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    response.flushHeaders();
    response.on('close', () => this.#stop());
    this.#arm();
  }

  get closed(): boolean {
    return this.#closed || this.#response.destroyed;
  }

  /** Write frames as one chunk; resolves after `drain` when the socket buffer is full. */
  async write(frames: readonly SseFrame[]): Promise<void> {
    if (frames.length === 0 || this.closed) return;
    this.#arm();
    const text = frames.map(serializeSseFrame).join('');
    if (this.#response.write(text)) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        this.#response.off('drain', done);
        this.#response.off('close', done);
        resolve();
      };
      this.#response.on('drain', done);
      this.#response.on('close', done);
    });
  }

  /** Write the final frames and end the response. */
  async end(frames: readonly SseFrame[] = []): Promise<void> {
    await this.write(frames);
    this.#stop();
    if (!this.#response.destroyed && !this.#response.writableEnded) this.#response.end();
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
