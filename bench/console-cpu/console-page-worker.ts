/**
 * The browser of `console-cpu.bench.ts`: a process of its own beside `serve` (as a browser is), so nothing
 * it does runs in the driver's process, which plays the fake Cursor backend every conversation waits on.
 * The driver asks it over IPC (the protocol of `side-by-side/child-process.ts` `ipc`) to open the console
 * of a `serve` (`connect` first, before the measurement; `open`: the page's requests, then its live feed read continuously) and later to close it
 * (`close`: answers what the page and its feed received). Forked with IPC and `--experimental-strip-types`,
 * without the tsx loader: it imports nothing but Node's modules.
 *
 * What it requests, in the browser's order: `GET /console`, the files the page names and the modules they
 * import (found by reading them, so a file the page gains is fetched too), `GET /console/api/state` (the
 * page's login check), then the live feed `GET /console/api/events` with `/console/api/models` and
 * `/console/api/templates`.
 */

import { performance } from 'node:perf_hooks';

/** A request from the driver; each gets one {@link ConsolePageReply} with the same `id`. */
export type ConsolePageRequest = {
  id: number;
  op: 'connect' | 'open' | 'close';
  /** `connect`, `open`: the `serve`, `http://127.0.0.1:<port>`. */
  base?: string;
};

export type ConsolePageReply = { id: number; tally?: ConsoleTally; error?: string };

/** What the page's requests and its live feed received. */
export type ConsoleTally = {
  /** Page files fetched (the page, its styles, scripts and the modules they import). */
  files: number;
  /** JSON routes fetched. */
  apiCalls: number;
  /** ms from the page's first request until the feed and the JSON routes had answered. */
  openMs: number;
  /** Live-feed frames received, by event name. */
  frames: Record<string, number>;
};

/** The `/console/…` paths a page file names: `href` / `src` in the HTML, relative imports in a module. */
const referencedPaths = (path: string, text: string): string[] => {
  const found = new Set<string>();
  for (const match of text.matchAll(/(?:href|src)="(\/console\/[^"]+)"/g)) found.add(match[1]!);
  for (const match of text.matchAll(/(?:from|import)\s*["'](\.{1,2}\/[^"']+)["']/g)) {
    found.add(new URL(match[1]!, `http://page${path}`).pathname);
  }
  return [...found];
};

/**
 * Opens the console on `base` as a browser does (see the header) and reads its live feed until `close`,
 * which answers what was received. Rejects when a request of the page does not answer 200.
 */
const openConsole = async (base: string): Promise<{ close: () => Promise<ConsoleTally> }> => {
  const startedAt = performance.now();
  const tally: ConsoleTally = { files: 0, apiCalls: 0, openMs: 0, frames: {} };
  const get = async (path: string): Promise<Response> => {
    const response = await fetch(`${base}${path}`);
    if (response.status !== 200) {
      throw new Error(
        `console: GET ${path} answered ${response.status}: ${(await response.text()).slice(0, 300)}`,
      );
    }
    return response;
  };
  // The page, then what it names, then what those import, as the browser finds them.
  const seen = new Set<string>();
  const fetchFile = async (path: string): Promise<void> => {
    if (seen.has(path)) return;
    seen.add(path);
    const text = await (await get(path)).text();
    tally.files += 1;
    const relative = path === '/console' ? '/console/index.html' : path;
    if (/\.(html|m?js)$/.test(relative)) await Promise.all(referencedPaths(relative, text).map(fetchFile));
  };
  await fetchFile('/console');
  const json = async (route: string): Promise<void> => {
    await (await get(`/console/api/${route}`)).json();
    tally.apiCalls += 1;
  };
  await json('state');
  const feed = new AbortController();
  const events = await fetch(`${base}/console/api/events`, { signal: feed.signal });
  if (events.status !== 200 || !(events.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    throw new Error(`console: the live feed answered ${events.status} ${events.headers.get('content-type')}`);
  }
  const reading = (async () => {
    const reader = events.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        let newline: number;
        while ((newline = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          if (line.startsWith('event: ')) {
            const name = line.slice('event: '.length).trim();
            tally.frames[name] = (tally.frames[name] ?? 0) + 1;
          }
        }
      }
    } catch (error) {
      if (!feed.signal.aborted) throw error;
    }
  })();
  // Surfaced by `close`, not unhandled before then.
  reading.catch(() => undefined);
  await Promise.all([json('models'), json('templates')]);
  tally.openMs = performance.now() - startedAt;
  return {
    close: async () => {
      feed.abort();
      await reading;
      return tally;
    },
  };
};

let page: Awaited<ReturnType<typeof openConsole>> | undefined;

const answer = async (request: ConsolePageRequest): Promise<ConsoleTally | undefined> => {
  if (request.op === 'connect' || request.op === 'open') {
    if (request.base === undefined) throw new Error(`${request.op} without a base`);
    // `fetch` loads and starts its HTTP client on first use: `connect` (before any measurement, on both
    // sides: one `GET /health`) does that, so it is not in a measurement.
    if (request.op === 'connect') return void (await (await fetch(`${request.base}/health`)).text());
    if (page !== undefined) throw new Error('the console is open already');
    page = await openConsole(request.base);
    return undefined;
  }
  const open = page;
  page = undefined;
  return open?.close();
};

process.on('message', (request: ConsolePageRequest) => {
  answer(request).then(
    (tally) => process.send?.({ id: request.id, ...(tally === undefined ? {} : { tally }) }),
    (error: unknown) =>
      process.send?.({ id: request.id, error: error instanceof Error ? error.stack : String(error) }),
  );
});
// Without the driver there is nothing to do (it died or is done).
process.on('disconnect', () => process.exit(0));
process.send?.({ id: 0 } satisfies ConsolePageReply);
