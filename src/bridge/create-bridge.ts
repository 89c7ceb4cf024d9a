/**
 * Wires a running bridge from a resolved config: logger → templates and workspaces → Cursor upstream →
 * engine → HTTP server. `close()` tears everything down in reverse order of creation.
 */

import { existsSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import { resolveCursorApiKey } from '../config/cursor-auth.js';
import type { Env } from '../config/interpolate.js';
import type { BridgeConfig } from '../config/load-config.js';
import { resolveModelRoute } from '../config/model-route.js';
import { Engine } from '../engine/engine.js';
import { BridgeMetrics } from '../metrics/bridge-metrics.js';
import { anthropicAdapter } from '../protocols/anthropic/anthropic-adapter.js';
import { openaiChatAdapter } from '../protocols/openai-chat/openai-chat-adapter.js';
import { openaiResponsesAdapter } from '../protocols/openai-responses/openai-responses-adapter.js';
import { createBridgeServer } from '../server/create-server.js';
import { BridgeError, createTurnError } from '../turn/turn-error.js';
import { CursorUpstream, type CursorUpstreamOptions } from '../upstream/cursor/cursor-upstream.js';
import { InMemoryAgentStore } from '../upstream/cursor/in-memory-agent-store.js';
import type { UpstreamPort } from '../upstream/upstream-port.js';
import { PromptGrounding } from '../workspace/prompt-grounding.js';
import { ScratchPathGuards } from '../workspace/scratch-path-guards.js';
import { TemplateStore } from '../workspace/template-store.js';
import { createTemplateWatcher, type TemplateWatcher } from '../workspace/template-watcher.js';
import { WorkspaceManager } from '../workspace/workspace-manager.js';
import { defaultTemplateOverrideDir, resolveDefaultTemplateDir } from '../workspace/workspace-paths.js';
import { WorkspaceService } from '../workspace/workspace-service.js';
import { decideSandbox, detectContainer } from './sandbox.js';

export type CreateBridgeOptions = {
  config: BridgeConfig;
  env: Env;
  homedir: string;
  logger: Logger;
  /** Replace the Cursor upstream (tests use the scripted one). */
  upstream?: UpstreamPort;
  /** Passed to the Cursor upstream (tests load the SDK after pointing it at a fake backend). */
  cursor?: Pick<CursorUpstreamOptions, 'loadSdk' | 'enableAgentRetries'>;
  /** Watch the template directories for edits (on in `serve`). */
  watchTemplates?: boolean;
  /** Idle time before an SSE keepalive frame (default 10 s). */
  keepaliveMs?: number;
};

export type Bridge = {
  server: Server;
  engine: Engine;
  /** The bridge's Prometheus registry, served at `GET /metrics`. */
  metrics: BridgeMetrics;
  upstream: UpstreamPort;
  workspaces: WorkspaceManager;
  close(): Promise<void>;
};

export const createBridge = async (options: CreateBridgeOptions): Promise<Bridge> => {
  const { config, env, logger } = options;
  const cursor = config.cursor;

  const templateDirs = {
    defaultDir: resolveDefaultTemplateDir(),
    overrideDir: config.templatesDir ?? defaultTemplateOverrideDir(options.homedir),
  };
  const templates = await TemplateStore.load({ ...templateDirs, logger });
  for (const problem of templates.problems) logger.warn({ problem }, 'workspace template problem');
  const workspaces = new WorkspaceManager({ root: config.workspacesDir, templates, logger });
  workspaces.startSweeping();
  let watcher: TemplateWatcher | undefined;
  if (options.watchTemplates === true) {
    watcher = await createTemplateWatcher({
      dirs: [templateDirs.defaultDir, templateDirs.overrideDir],
      logger,
      onChange: async () => {
        const report = await templates.reload();
        for (const problem of report.problems)
          logger.warn({ problem }, 'workspace template problem; keeping the last good render');
        if (report.changed.length > 0) {
          logger.info(
            { changed: report.changed },
            'workspace templates changed; re-rendering live workspaces',
          );
          await workspaces.rerenderAll();
        }
      },
    });
  }

  const auth = resolveCursorApiKey(cursor.apiKeyConfigured, env);
  if (!auth.ok) logger.warn(auth.message);
  const sandbox = decideSandbox(cursor.sandboxEnabled, {
    inContainer: detectContainer(env),
    platform: process.platform,
  });
  if (cursor.sandboxEnabled || sandbox.enabled)
    logger.info({ enabled: sandbox.enabled, reason: sandbox.reason }, 'Cursor local sandbox');
  if (
    cursor.mode === 'agent' &&
    cursor.cwd !== undefined &&
    detectContainer(env) &&
    !existsSync(cursor.cwd)
  ) {
    logger.warn(
      { cursorCwd: cursor.cwd },
      'cursorCwd does not exist in this container: the SDK will create it, an empty phantom directory; do not point cursorCwd at the host project path',
    );
  }

  const upstream =
    options.upstream ??
    new CursorUpstream({
      auth: auth.ok ? { ok: true, apiKey: auth.apiKey } : { ok: false, message: auth.message },
      logger,
      mode: cursor.mode,
      ...(cursor.cwd === undefined ? {} : { agentCwd: cursor.cwd }),
      sandboxEnabled: sandbox.enabled,
      createStore: () => new InMemoryAgentStore(),
      ...options.cursor,
    });

  const metrics = new BridgeMetrics({ processMetrics: true });
  const guard = new ScratchPathGuards({
    logger,
    scratchRoot: config.workspacesDir,
    onViolation: (corrected) => metrics.scratchPathViolation(corrected),
  });
  const engine = new Engine({
    upstream,
    metrics,
    workspace: new WorkspaceService(workspaces, new PromptGrounding(templates)),
    guard,
    logger,
    mode: cursor.mode,
    resolveModel: (request) => {
      const route = resolveModelRoute(config, {
        model: request.model,
        reasoningRequested: request.reasoning.requested,
      });
      if (!route.ok) throw new BridgeError(createTurnError('not-found', route.message, { retryable: false }));
      return { model: route.model };
    },
  });

  const server = createBridgeServer({
    adapters: {
      anthropic: anthropicAdapter,
      openaiChat: openaiChatAdapter,
      openaiResponses: openaiResponsesAdapter,
    },
    handleTurn: engine.handleTurn,
    logger,
    ...(config.apiKey === undefined ? {} : { apiKey: config.apiKey }),
    listModels: () => cursor.models,
    ...(options.keepaliveMs === undefined ? {} : { keepaliveMs: options.keepaliveMs }),
    metrics,
  });

  return {
    server,
    engine,
    metrics,
    upstream,
    workspaces,
    close: async () => {
      try {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
      } finally {
        try {
          await engine.close();
        } finally {
          await watcher?.close();
          await workspaces.close();
        }
      }
    },
  };
};
