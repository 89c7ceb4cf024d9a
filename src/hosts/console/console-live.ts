/**
 * The console's live feed: Server-Sent Events to every open page. One timer for all of them, running only
 * while at least one page is open (nothing is computed for nobody). Each tick sends the state as it is
 * then, a snapshot: a page that reads slowly skips the ticks it could not take instead of queueing them,
 * so a stuck tab holds one frame of memory at most.
 */

import type { ServerResponse } from 'node:http';

export type ConsoleFrame = { event: string; data: unknown };

export type ConsoleLiveOptions = {
  /**
   * The frames of one tick; `tick` counts from 0 for each opening (the first is sent at once). Frames made
   * asynchronously are sent when they are ready, to the pages open then.
   */
  frames: (tick: number) => ConsoleFrame[] | Promise<ConsoleFrame[]>;
  /** Told when making a tick's frames failed (that tick sends nothing). */
  onError?: (error: unknown) => void;
  intervalMs: number;
};

const encode = ({ event, data }: ConsoleFrame): string =>
  `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

export class ConsoleLive {
  readonly #options: ConsoleLiveOptions;
  /** Open pages; `blocked` while the socket has not drained the last frame. */
  readonly #pages = new Map<ServerResponse, { blocked: boolean }>();
  #timer: NodeJS.Timeout | undefined;
  #tick = 0;

  constructor(options: ConsoleLiveOptions) {
    this.#options = options;
  }

  /** Pages open now. */
  get size(): number {
    return this.#pages.size;
  }

  /** Serve the feed on `response` until the page goes. */
  open(response: ServerResponse): void {
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    });
    response.write('retry: 3000\n\n');
    const page = { blocked: false };
    this.#pages.set(response, page);
    response.on('close', () => {
      this.#pages.delete(response);
      if (this.#pages.size === 0) this.#stop();
    });
    this.#send(this.#options.frames(0), () => [[response, page]]);
    if (this.#timer === undefined) {
      this.#tick = 0;
      this.#timer = setInterval(() => this.#broadcast(), this.#options.intervalMs);
      this.#timer.unref();
    }
  }

  /** Send a frame to every open page now (a template reload). */
  publish(frame: ConsoleFrame): void {
    for (const [response, page] of this.#pages) this.#write(response, page, [frame]);
  }

  /** End every page's feed (the bridge is closing). */
  close(): void {
    this.#stop();
    for (const response of this.#pages.keys()) response.end();
    this.#pages.clear();
  }

  #broadcast(): void {
    this.#tick += 1;
    if (this.#pages.size === 0) return this.#stop();
    this.#send(this.#options.frames(this.#tick), () => this.#pages);
  }

  /** Write `frames` to `pages` (read when the frames are ready): at once, or when a promise of them settles. */
  #send(
    frames: ConsoleFrame[] | Promise<ConsoleFrame[]>,
    pages: () => Iterable<[ServerResponse, { blocked: boolean }]>,
  ): void {
    const write = (ready: ConsoleFrame[]): void => {
      for (const [response, page] of pages()) this.#write(response, page, ready);
    };
    if (Array.isArray(frames)) return write(frames);
    frames.then(write, (error: unknown) => this.#options.onError?.(error));
  }

  #write(response: ServerResponse, page: { blocked: boolean }, frames: ConsoleFrame[]): void {
    if (page.blocked || response.destroyed || frames.length === 0) return;
    if (!response.write(frames.map(encode).join(''))) {
      page.blocked = true;
      response.once('drain', () => (page.blocked = false));
    }
  }

  #stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
