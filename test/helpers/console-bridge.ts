/**
 * The console's test fixtures: the whole bridge (`createBridge`, as `serve` builds it, over a scripted
 * upstream) in a fresh HOME with its own template override and workspace directories, optionally watching
 * the templates; a raw HTTP request (to send any `Host` header); and a reader of the console's live feed.
 */

import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createBridge, type Bridge } from '../../src/bridge/create-bridge.js';
import { resolveConfig } from '../../src/config/load-config.js';
import { ScriptedUpstream, type ScriptSource } from '../../src/upstream/scripted/scripted-upstream.js';

export type ConsoleBridge = {
  bridge: Bridge;
  upstream: ScriptedUpstream;
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  home: string;
  /** The template override directory (`cursorTemplatesDir`); not created until something saves there. */
  templatesDir: string;
  workspacesDir: string;
  /** Close the bridge (idempotent) and remove its HOME. */
  close: () => Promise<void>;
};

/**
 * A bridge on 127.0.0.1:0 in a fresh HOME: a `cursor` provider serving composer-2, `cursorTemplatesDir`
 * and `cursorWorkspacesDir` inside HOME, then `config` on top (e.g. `APIKEY`).
 */
export const startConsoleBridge = async (options: {
  source: ScriptSource;
  config?: Record<string, unknown>;
  watchTemplates?: boolean;
}): Promise<ConsoleBridge> => {
  const home = await mkdtemp(join(tmpdir(), 'cursor-bridge-console-'));
  const templatesDir = join(home, 'templates');
  const workspacesDir = join(home, 'workspaces');
  const env = { HOME: home, CURSOR_API_KEY: 'crsr_test' };
  const raw = {
    Providers: [
      {
        name: 'cursor',
        api_base_url: 'https://cursor.com',
        api_key: '$CURSOR_API_KEY',
        models: ['composer-2'],
      },
    ],
    cursorTemplatesDir: templatesDir,
    cursorWorkspacesDir: workspacesDir,
    ...options.config,
  };
  const config = resolveConfig(raw, { path: join(home, 'config.json'), env, homedir: home });
  const upstream = new ScriptedUpstream(options.source);
  let bridge: Bridge;
  try {
    bridge = await createBridge({
      config,
      env,
      homedir: home,
      logger: pino({ level: 'silent' }),
      upstream,
      ...(options.watchTemplates === undefined ? {} : { watchTemplates: options.watchTemplates }),
    });
  } catch (error) {
    await rm(home, { recursive: true, force: true });
    throw error;
  }
  const close = async (): Promise<void> => {
    await bridge.close();
    await rm(home, { recursive: true, force: true });
  };
  try {
    await new Promise<void>((resolve) => bridge.server.listen(0, '127.0.0.1', resolve));
  } catch (error) {
    await close();
    throw error;
  }
  const { port } = bridge.server.address() as AddressInfo;
  return {
    bridge,
    upstream,
    url: `http://127.0.0.1:${port}`,
    port,
    home,
    templatesDir,
    workspacesDir,
    close,
  };
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
