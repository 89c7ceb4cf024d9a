/**
 * The whole bridge (config → templates → workspaces → engine → HTTP server) in this process, over a
 * scripted upstream: what `serve` builds, minus the SDK. For tests that read what the upstream received,
 * what the workspace holds on disk, or what a route answers. For the HTTP server alone over a scripted
 * engine, with the server's and the engine's options in the test's hands, see `scripted-bridge-server.ts`.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createBridge, type Bridge } from '../../src/bridge/create-bridge.js';
import { resolveConfig } from '../../src/config/load-config.js';
import { ScriptedUpstream, type ScriptSource } from '../../src/upstream/scripted/scripted-upstream.js';

export type ScriptedBridge = {
  bridge: Bridge;
  upstream: ScriptedUpstream;
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** The bridge's HOME (its default template override and workspace directories are below it). */
  home: string;
  /** Stop the bridge and remove its HOME. */
  close: () => Promise<void>;
};

/**
 * Starts the bridge on 127.0.0.1:0 in a fresh HOME with `config` as its config.json content (a `cursor`
 * provider serving composer-2 unless `config` has Providers) and `CURSOR_API_KEY=crsr_test` plus `env`.
 */
export const startScriptedBridge = async (options: {
  source: ScriptSource;
  config?: Record<string, unknown>;
  env?: Record<string, string>;
  /** Watch the template directories, as `serve` does. */
  watchTemplates?: boolean;
}): Promise<ScriptedBridge> => {
  const home = await mkdtemp(join(tmpdir(), 'cursor-bridge-scripted-'));
  const env = { HOME: home, CURSOR_API_KEY: 'crsr_test', ...options.env };
  const raw = {
    Providers: [
      {
        name: 'cursor',
        api_base_url: 'https://cursor.com',
        api_key: '$CURSOR_API_KEY',
        models: ['composer-2'],
      },
    ],
    ...options.config,
  };
  const config = resolveConfig(raw, { path: join(home, 'config.json'), env, homedir: home });
  const upstream = new ScriptedUpstream(options.source);
  const bridge = await createBridge({
    config,
    env,
    homedir: home,
    logger: pino({ level: 'silent' }),
    upstream,
    ...(options.watchTemplates === undefined ? {} : { watchTemplates: options.watchTemplates }),
  });
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
  return { bridge, upstream, url: `http://127.0.0.1:${port}`, port, home, close };
};
