/**
 * The bridge's HTTP server (`createBridgeServer`) over the engine and a scripted upstream, on 127.0.0.1:0 in
 * this process: no config, templates or workspaces on disk (the engine's workspace is a static one unless
 * `engineOptions` gives another). The test sets what `serve` would wire — the server's logger, drain state,
 * warning interval, the engine's model resolver — and reads the engine, the upstream and the metrics. For
 * the whole bridge as `serve` builds it, over a scripted upstream, see `scripted-bridge.ts`.
 */

import type { AddressInfo } from 'node:net';
import type { EngineOptions } from '../../src/engine/engine.js';
import { BridgeMetrics } from '../../src/metrics/bridge-metrics.js';
import { createBridgeServer, type BridgeServerOptions } from '../../src/hosts/http/create-server.js';
import { anthropicAdapter } from '../../src/protocols/anthropic/anthropic-adapter.js';
import { openaiChatAdapter } from '../../src/protocols/openai-chat/openai-chat-adapter.js';
import { openaiResponsesAdapter } from '../../src/protocols/openai-responses/openai-responses-adapter.js';
import type { ScriptSource } from '../../src/upstream/scripted/scripted-upstream.js';
import { createTestEngine, silentLogger } from './engine-helpers.js';

/** Starts the server; `options` and `engineOptions` override the defaults below. */
export const startScriptedBridgeServer = async (
  source: ScriptSource,
  options: Partial<Omit<BridgeServerOptions, 'adapters' | 'handleTurn'>> = {},
  engineOptions: Partial<EngineOptions> = {},
) => {
  const metrics = new BridgeMetrics();
  const { engine, upstream } = createTestEngine(source, { metrics, ...engineOptions });
  const server = createBridgeServer({
    adapters: {
      anthropic: anthropicAdapter,
      openaiChat: openaiChatAdapter,
      openaiResponses: openaiResponsesAdapter,
    },
    handleTurn: engine.handleTurn,
    logger: silentLogger,
    listModels: () => ['composer-2', 'gpt-5.4'],
    metrics,
    ...options,
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    engine,
    upstream,
    metrics,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await engine.close();
    },
  };
};
