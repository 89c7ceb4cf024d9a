/**
 * Wires a running bridge from a resolved config: logger → templates and workspaces → Cursor upstream →
 * engine → HTTP server. `close()` tears everything down in reverse order of creation. The CCR facade builds
 * the same parts without the public server ({@link createBridgeEngine}).
 */

import { isWebSearchCall } from '../engine/web-search-call.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import { resolveCursorApiKey } from '../config/cursor-auth.js';
import type { Env } from '../config/interpolate.js';
import type { BridgeConfig } from '../config/load-config.js';
import type { CatalogEntry } from '../config/find-catalog-entry.js';
import { mayRouteByTokenCount, resolveModelRoute } from '../config/model-route.js';
import { Engine, type EngineOptions } from '../engine/engine.js';
import { createImagePreparer, defaultImageSettings } from '../images/image-preparer.js';
import { BridgeMetrics } from '../metrics/bridge-metrics.js';
import { anthropicAdapter } from '../protocols/anthropic/anthropic-adapter.js';
import { openaiChatAdapter } from '../protocols/openai-chat/openai-chat-adapter.js';
import { openaiResponsesAdapter } from '../protocols/openai-responses/openai-responses-adapter.js';
import { countTurnTokens } from '../hosts/http/count-turn-tokens.js';
import { createBridgeServer } from '../hosts/http/create-server.js';
import { BridgeError, createTurnError } from '../turn/turn-error.js';
import type { TurnRequest } from '../turn/turn-request.js';
import { CursorUpstream, type CursorUpstreamOptions } from '../upstream/cursor/cursor-upstream.js';
import { InMemoryAgentStore } from '../upstream/cursor/in-memory-agent-store.js';
import type { UpstreamPort } from '../upstream/upstream-port.js';
import { PromptGrounding } from '../workspace/prompt-grounding.js';
import { ScratchPathGuards } from '../workspace/scratch-path-guards.js';
import { listBridgeModels } from './list-bridge-models.js';
import { previewGrounding, type GroundingPreview } from '../workspace/template-preview.js';
import { TemplateStore, type TemplateReloadReport } from '../workspace/template-store.js';
import { createTemplateWatcher, type TemplateWatcher } from '../workspace/template-watcher.js';
import { WorkspaceManager } from '../workspace/workspace-manager.js';
import { defaultTemplateOverrideDir, resolveDefaultTemplateDir } from '../workspace/workspace-paths.js';
import { WarmWorkspacePool, type WarmPoolState } from '../workspace/warm-workspace-pool.js';
import { WorkspaceService, type SessionGrounding } from '../workspace/workspace-service.js';
import { decideSandbox, detectContainer } from './sandbox.js';
import { createConsole } from '../hosts/console/create-console.js';
import { TemplateEditor } from '../workspace/template-editor.js';
import { sleep } from '../../lib/sleep.js';

export type CreateBridgeOptions = {
  config: BridgeConfig;
  env: Env;
  homedir: string;
  logger: Logger;
  /** Replace the Cursor upstream (tests use the scripted one). */
  upstream?: UpstreamPort;
  /** Passed to the Cursor upstream (tests load the SDK after pointing it at a fake backend). */
  cursor?: Pick<CursorUpstreamOptions, 'loadSdk' | 'enableAgentRetries' | 'batchQuietMs'>;
  /** Watch the template directories for edits (on in `serve`). */
  watchTemplates?: boolean;
  /** Idle time before an SSE keepalive frame (default 10 s). */
  keepaliveMs?: number;
  /** Engine tuning for a host whose clients behave differently (the CCR facade), or for tests. */
  engine?: Pick<EngineOptions, 'replayFailures' | 'idleTtlMs'>;
};

/** How a {@link Bridge.drain} ended. */
export type DrainResult = {
  /** Every live conversation finished before the deadline. */
  finished: boolean;
  /** Sessions still in flight at the deadline, ended by the close. */
  abandoned: number;
};

/** What the pre-warmed workspace pool holds (`size`) and is doing (`state`). */
export type WarmPoolView = { readonly size: number; readonly state: WarmPoolState };

export type Bridge = {
  server: Server;
  engine: Engine;
  /** The bridge's Prometheus registry, served at `GET /metrics`. */
  metrics: BridgeMetrics;
  upstream: UpstreamPort;
  workspaces: WorkspaceManager;
  /** The pre-warmed workspace pool; undefined when it is off. */
  warmPool: WarmPoolView | undefined;
  /**
   * Graceful stop (SIGTERM in `serve`): `/health` answers 503 `draining` and turns that would start a
   * new conversation get a retryable 503 with `retry-after`, while live conversations — in-flight turns
   * and runs parked on tool calls — go on, for at most `timeoutMs` (or until `signal` aborts). Then
   * {@link close}: whatever is left ends with the protocol's terminal events.
   */
  drain(timeoutMs: number, signal?: AbortSignal): Promise<DrainResult>;
  /**
   * Stop listening, end the engine (open streams end in-band with a retryable error and their terminal
   * events), let those responses flush (bounded), then cut the remaining connections and close the rest.
   * Idempotent.
   */
  close(): Promise<void>;
};

/** How long finished responses get to flush at close before their connections are cut. */
const closeFlushMs = 2_000;

/** Everything of a bridge but its HTTP server: what `serve` and the CCR facade share. */
export type BridgeEngine = {
  engine: Engine;
  upstream: UpstreamPort;
  workspaces: WorkspaceManager;
  /** The bridge's Prometheus registry, served at `GET /metrics`. */
  metrics: BridgeMetrics;
  /** The pre-warmed workspace pool; undefined when it is off. */
  warmPool: WarmPoolView | undefined;
  /** What the live conversations' agents are grounded with, served at `GET /debug/grounding`. */
  grounding: () => Promise<GroundingPreview>;
  /** The templates the bridge renders with. */
  templates: TemplateStore;
  /** The latest turn's host facts and workspace of each live conversation. */
  latestGrounding: () => SessionGrounding[];
  /** Hears every template reload that changed a template or found a problem (the watcher's). */
  onTemplatesReloaded: (listener: (report: TemplateReloadReport) => void) => void;
  /** Closes the engine, then the template watcher and the workspaces. */
  close(): Promise<void>;
};

export type EngineModelResolverOptions = {
  /**
   * Cursor's live catalog (the upstream's `listModels`, cached there). Without it, or while it rejects,
   * names resolve against the provider's `models` only — logged once per outage at `warn`.
   */
  catalog?: () => Promise<readonly CatalogEntry[]>;
  /**
   * Counts a request's input tokens (`count_tokens`' tokenizer), for `Router.longContext`. Called only when
   * a long-context route is configured and the Router decides the request's model; without it no request
   * routes by size.
   */
  countTokens?: (request: TurnRequest) => Promise<number>;
  logger?: Logger;
};

/** Whether the request's latest turn (what follows its last assistant message) carries an image. */
const latestTurnHasImages = (request: TurnRequest): boolean => {
  for (let index = request.messages.length - 1; index >= 0; index -= 1) {
    const message = request.messages[index];
    if (message === undefined || message.role === 'assistant') return false;
    if (
      (message.role === 'user' || message.role === 'tool') &&
      message.content.some((part) => part.type === 'image')
    )
      return true;
  }
  return false;
};

/**
 * The engine's image preparation with the config's fetch settings (the rest: the preparer's defaults). A
 * model the config lists as taking no images gets a note in place of each image.
 */
const imagePreparerOf = (images: BridgeConfig['images']): NonNullable<EngineOptions['prepareImages']> => {
  const preparer = createImagePreparer({
    ...defaultImageSettings,
    fetchUrls: images.fetchUrls,
    fetch: {
      ...defaultImageSettings.fetch,
      maxBytes: images.maxFetchBytes,
      totalTimeoutMs: images.fetchTimeoutMs,
      allowNetworks: images.allowNetworks,
    },
  });
  const textOnly = new Set(images.textOnlyModels.map((model) => model.toLowerCase()));
  return (messages, options) =>
    preparer.prepare(messages, {
      ...options,
      ...(textOnly.has(options.model.toLowerCase())
        ? {
            refuse: `the model ${options.model} takes no images (the config lists it in cursorImages.textOnlyModels; Router.image can send requests with images to a model that takes them)`,
          }
        : {}),
    });
};

/**
 * The engine's model resolution ({@link resolveModelRoute}): the route for the request's model against
 * Cursor's catalog and the config, or a 404 naming why there is none.
 */
export const engineModelResolver = (
  config: BridgeConfig,
  options: EngineModelResolverOptions = {},
): EngineOptions['resolveModel'] => {
  let catalogDown = false;
  const readCatalog = async (): Promise<readonly CatalogEntry[] | undefined> => {
    if (options.catalog === undefined) return undefined;
    try {
      const catalog = await options.catalog();
      if (catalogDown) options.logger?.info("Cursor's model catalog is readable again");
      catalogDown = false;
      return catalog;
    } catch (error) {
      if (!catalogDown) {
        options.logger?.warn(
          { err: error, models: config.cursor.models },
          "Cursor's model catalog could not be read; model names resolve against the provider's models only",
        );
      }
      catalogDown = true;
      return undefined;
    }
  };
  /** The request's token count, or `undefined` when it cannot be counted (then no route goes by size). */
  const countTokens = async (request: TurnRequest): Promise<number | undefined> => {
    try {
      return await options.countTokens?.(request);
    } catch (error) {
      options.logger?.warn(
        { err: error },
        'counting a request for Router.longContext failed; it routes as a short one',
      );
      return undefined;
    }
  };
  return async (request) => {
    const webSearchCall = isWebSearchCall(request);
    const routeRequest = {
      model: request.model,
      ...(latestTurnHasImages(request) ? { images: true } : {}),
      reasoningRequested: request.reasoning.requested,
      ...(request.webSearch === undefined
        ? {}
        : { webSearch: webSearchCall ? ('call' as const) : ('offered' as const) }),
      catalog: await readCatalog(),
    };
    let route = resolveModelRoute(config, routeRequest);
    // Counted only where the count can change the route: a search side call's model is Router.webSearch's.
    if (route.ok && !webSearchCall && mayRouteByTokenCount(config, route.value.route)) {
      const tokenCount = await countTokens(request);
      if (tokenCount !== undefined) route = resolveModelRoute(config, { ...routeRequest, tokenCount });
    }
    if (!route.ok) throw new BridgeError(createTurnError('not-found', route.error, { retryable: false }));
    const { model, route: kind, note } = route.value;
    return { model, route: kind, ...(note === undefined ? {} : { note }) };
  };
};

/** A bridge: {@link createBridgeEngine} plus the HTTP server over it (not listening yet). */

export const createBridge = async (options: CreateBridgeOptions): Promise<Bridge> => {
  const { config, logger } = options;
  const parts = await createBridgeEngine(options);
  const auth = resolveCursorApiKey(config.cursor.apiKeyConfigured, options.env);
  const cursorReadiness = auth.ok ? { ready: true } : { ready: false, reason: auth.error.message };
  const bridgeConsole = createConsole({
    logger,
    conversations: () => parts.engine.conversations(),
    process: async () => {
      const engine = await parts.engine.metrics();
      return {
        mode: config.cursor.mode,
        startedAt: new Date(startedAt).toISOString(),
        maxSessions: config.maxSessions,
        draining,
        warmPool:
          parts.warmPool === undefined ? null : { size: parts.warmPool.size, state: parts.warmPool.state },
        sessions: engine.sessions,
        inFlight: engine.inFlightSessions,
        parkedCalls: engine.parkedCalls,
      };
    },
    history: () => parts.metrics.history(),
    models: async () => ({
      models: (await listBridgeModels(config, parts.upstream, logger)).map((entry) =>
        typeof entry === 'string' ? { id: entry } : entry,
      ),
      router: { ...config.router },
    }),
    editor: new TemplateEditor({
      store: parts.templates,
      ...(config.cursor.cwd === undefined ? {} : { agentCwd: config.cursor.cwd }),
    }),
    templateState: () => ({
      defaultDir: parts.templates.defaultDir,
      overrideDir: parts.templates.overrideDir ?? null,
      problems: parts.templates.problems,
    }),
    grounding: parts.latestGrounding,
    exampleWorkspaceDir: join(config.workspacesDir, '<session-key>'),
  });
  parts.onTemplatesReloaded((report) => bridgeConsole.templatesReloaded(report));
  const startedAt = Date.now();
  const server = createBridgeServer({
    adapters: {
      anthropic: anthropicAdapter,
      openaiChat: openaiChatAdapter,
      openaiResponses: openaiResponsesAdapter,
    },
    handleTurn: parts.engine.handleTurn,
    logger,
    ...(config.apiKey === undefined ? {} : { apiKey: config.apiKey }),
    listModels: () => listBridgeModels(config, parts.upstream, logger),
    ...(options.keepaliveMs === undefined ? {} : { keepaliveMs: options.keepaliveMs }),
    stallTimeoutMs: config.stallTimeoutMs,
    metrics: parts.metrics,
    groundingPreview: parts.grounding,
    conversations: () => parts.engine.conversations(),
    draining: () => draining,
    console: bridgeConsole.handle,
    // The Cursor upstream's key, resolved as it resolves it; an injected upstream (tests) needs none.
    ...(options.upstream === undefined ? { cursorReadiness: () => cursorReadiness } : {}),
  });
  let draining = false;
  let closing: Promise<void> | undefined;

  const closeAll = async (): Promise<void> => {
    let serverClosed = false;
    const stopped = new Promise<void>((resolve) => {
      server.close(() => {
        serverClosed = true;
        resolve();
      });
    });
    bridgeConsole.close();
    try {
      await parts.engine.close();
    } finally {
      try {
        // Responses that just ended leave idle keep-alive connections; streams still flushing their
        // terminal events get a bounded moment.
        const deadline = Date.now() + closeFlushMs;
        while (!serverClosed && Date.now() < deadline) {
          server.closeIdleConnections();
          await Promise.race([stopped, sleep(25, { unref: true })]);
        }
        server.closeAllConnections();
        await stopped;
      } finally {
        await parts.close();
      }
    }
  };

  return {
    server,
    engine: parts.engine,
    metrics: parts.metrics,
    upstream: parts.upstream,
    workspaces: parts.workspaces,
    warmPool: parts.warmPool,
    drain: async (timeoutMs, signal) => {
      draining = true;
      const inFlight = async (): Promise<number> => (await parts.engine.metrics()).inFlightSessions;
      logger.info(
        { inFlight: await inFlight(), timeoutMs },
        'draining: no new conversations; live ones finish',
      );
      let timer: NodeJS.Timeout | undefined;
      const finished = await Promise.race([
        parts.engine.drain().then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), timeoutMs);
          signal?.addEventListener('abort', () => resolve(false), { once: true });
        }),
      ]);
      clearTimeout(timer);
      const abandoned = finished ? 0 : await inFlight();
      if (finished) logger.info('drained: every live conversation finished');
      else logger.warn({ abandoned }, 'drain deadline passed; ending the conversations still in flight');
      closing ??= closeAll();
      await closing;
      return { finished, abandoned };
    },
    close: () => (closing ??= closeAll()),
  };
};

/** Templates and workspaces → Cursor upstream → engine, from a resolved config; no server. */
export const createBridgeEngine = async (options: CreateBridgeOptions): Promise<BridgeEngine> => {
  const { config, env, logger } = options;
  const cursor = config.cursor;

  const templateDirs = {
    defaultDir: resolveDefaultTemplateDir(),
    overrideDir: config.templatesDir ?? defaultTemplateOverrideDir(options.homedir),
  };
  const templates = await TemplateStore.load({ ...templateDirs, logger, mode: cursor.mode });
  for (const problem of templates.problems) logger.warn({ problem }, 'workspace template problem');
  const workspaces = new WorkspaceManager({ root: config.workspacesDir, templates, logger });
  workspaces.startSweeping();
  const auth = resolveCursorApiKey(cursor.apiKeyConfigured, env);
  if (!auth.ok) logger.warn(auth.error.message);
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
      auth: auth.ok ? { ok: true, apiKey: auth.value.apiKey } : { ok: false, message: auth.error.message },
      logger,
      mode: cursor.mode,
      ...(cursor.cwd === undefined ? {} : { agentCwd: cursor.cwd }),
      sandboxEnabled: sandbox.enabled,
      createStore: (hooks) => new InMemoryAgentStore(hooks),
      ...(cursor.timeouts === undefined ? {} : { timeouts: cursor.timeouts }),
      ...options.cursor,
    });

  const metrics = new BridgeMetrics({ processMetrics: true });
  // Bridge mode only: plan mode's executors are cheap (no project settings), agent mode runs in cursorCwd.
  const prewarm = upstream.prewarm?.bind(upstream);
  const pool =
    cursor.mode === 'bridge' && prewarm !== undefined && auth.ok && config.warmWorkspaces > 0
      ? new WarmWorkspacePool({
          manager: workspaces,
          warm: (workspaceDir) => prewarm({ workspaceDir }),
          logger,
          size: config.warmWorkspaces,
          onClaim: (hit) => metrics.warmWorkspaceClaimed(hit),
          // Every live session's workspace holds an executor: at the cap, the pool stops warming at a few
          // more, and warms a fresh entry as an evicted session's executor is released.
          executorsInUse: () => workspaces.liveCount,
          executorLimit: config.maxSessions + config.warmWorkspacesAtCap,
          // A warm-up forks and loads on the cores live turns need, so none starts while a turn is in
          // progress (a session parked on its client's tool run is not). The engine exists by the time the
          // pool first warms: after the first conversation.
          turnsInFlight: (): number => engine.turnsInProgress(),
        })
      : undefined;
  metrics.readWarmWorkspacesFrom(() => pool?.size ?? 0);
  let watcher: TemplateWatcher | undefined;
  const reloadListeners: Array<(report: TemplateReloadReport) => void> = [];
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
          await Promise.all([workspaces.rerenderAll(), pool?.invalidate()]);
        }
        if (report.changed.length > 0 || report.problems.length > 0)
          for (const listener of reloadListeners) listener(report);
      },
    });
  }

  const guard = new ScratchPathGuards({
    logger,
    scratchRoot: config.workspacesDir,
    homeDir: options.homedir,
    onViolation: (corrected) => metrics.scratchPathViolation(corrected),
  });
  const workspace = new WorkspaceService(
    workspaces,
    new PromptGrounding(templates, cursor.cwd === undefined ? {} : { agentCwd: cursor.cwd }),
    pool,
  );
  const engine = new Engine({
    upstream,
    metrics,
    workspace,
    guard,
    logger,
    maxSessions: config.maxSessions,
    countTokens: countTurnTokens,
    prepareImages: imagePreparerOf(config.images),
    resolveModel: engineModelResolver(config, {
      ...(upstream.listModels === undefined ? {} : { catalog: upstream.listModels.bind(upstream) }),
      countTokens: countTurnTokens,
      logger,
    }),
    ...options.engine,
  });

  return {
    engine,
    upstream,
    workspaces,
    metrics,
    warmPool: pool,
    grounding: () => previewGrounding(templates, workspace.latestGrounding()),
    templates,
    latestGrounding: () => workspace.latestGrounding(),
    onTemplatesReloaded: (listener) => void reloadListeners.push(listener),
    close: async () => {
      try {
        await pool?.close();
        await engine.close();
      } finally {
        await watcher?.close();
        await workspaces.close();
      }
    },
  };
};
