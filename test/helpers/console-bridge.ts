/**
 * The console's test fixtures: the whole bridge (`createBridge`, as `serve` builds it, over a scripted
 * upstream) in a fresh HOME, optionally watching the templates; a raw HTTP request (to send any `Host` header); and a reader of the console's live feed.
 */

import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { ScriptSource } from '../../src/upstream/scripted/scripted-upstream.js';
import { defaultTemplateOverrideDir } from '../../src/workspace/workspace-paths.js';
import { startScriptedBridge, type ScriptedBridge } from './scripted-bridge.js';

export type ConsoleBridge = ScriptedBridge & {
  /** The template override directory (the default one in HOME); not created until something saves there. */
  templatesDir: string;
};

/**
 * The bridge as `serve` builds it, over a scripted upstream (`startScriptedBridge`), on 127.0.0.1:0 in a
 * fresh HOME, `config` on top (e.g. `APIKEY`), watching its templates when asked.
 */
export const startConsoleBridge = async (options: {
  source: ScriptSource;
  config?: Record<string, unknown>;
  watchTemplates?: boolean;
}): Promise<ConsoleBridge> => {
  const bridge = await startScriptedBridge(options);
  return { ...bridge, templatesDir: defaultTemplateOverrideDir(bridge.home) };
};

export type RawAnswer = { status: number; headers: IncomingHttpHeaders; body: string };

/** One request with exactly these headers (`fetch` will not send a `Host` of the test's choosing). */
export const rawRequest = (
  port: number,
  options: { method?: string; path: string; headers?: Record<string, string>; body?: string },
): Promise<RawAnswer> =>
  new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'GET',
        path: options.path,
        headers: options.headers ?? {},
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(options.body);
  });

export type ConsoleFeedFrame = { event: string; data: unknown };

export type ConsoleFeed = {
  /** The response's status and headers, once they arrived. */
  response: Promise<Response>;
  /** Everything received so far. */
  text: () => string;
  /** The complete frames received so far (`event:` + `data:` blocks; the `retry:` line is skipped). */
  frames: () => ConsoleFeedFrame[];
  /** Settles when the stream ended (the server closed it, or `abort()`). */
  done: Promise<void>;
  /** Leave as a closing page does. */
  abort: () => void;
};

/** Read the console's live feed (`GET /console/api/events`) in the background. */
export const openConsoleFeed = (url: string, headers: Record<string, string> = {}): ConsoleFeed => {
  const controller = new AbortController();
  let text = '';
  const response = fetch(`${url}/console/api/events`, { headers, signal: controller.signal });
  const done = (async () => {
    const reader = (await response).body?.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const chunk = await reader?.read();
      if (chunk === undefined || chunk.done) return;
      text += decoder.decode(chunk.value, { stream: true });
    }
  })().catch(() => undefined);
  const frames = (): ConsoleFeedFrame[] =>
    text
      .split('\n\n')
      .slice(0, -1)
      .flatMap((block) => {
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        return event === undefined || data === undefined
          ? []
          : [{ event, data: JSON.parse(data) as unknown }];
      });
  return { response, text: () => text, frames, done, abort: () => controller.abort() };
};
