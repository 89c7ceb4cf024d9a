/**
 * cursor-bridge as a Claude Code Router 3 plugin (CCR 3.1, whose plugins register HTTP backends): the same bridge as `serve` — engine,
 * protocols, server routes, API key check — served in CCR's own process through
 * `ctx.registerHttpBackend` on a fixed loopback port, behind an `anthropic_messages` provider whose
 * `api_key` is the plugin's `apiKey`. `ccr/ccr3-plugin.mjs` is the file CCR imports; it holds no state.
 *
 * The engine outlives the plugin instance: CCR re-imports the entry and calls `setup` again after every
 * gateway restart (config saves included), and a run parked on a tool call must still be there for the
 * tool result. {@link EngineRegistry} keeps it while the settings stay equal.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { pino } from 'pino';
import { createBridge, type Bridge, type DrainResult } from '../../bridge/create-bridge.js';
import type { Env } from '../../config/interpolate.js';
import { createLogger } from '../../logging/logger.js';
import type { UpstreamPort } from '../../upstream/upstream-port.js';
import { EngineRegistry, type EngineRegistryOptions } from './ccr3-engine-registry.js';
import { resolveCcr3PluginConfig } from './ccr3-plugin-config.js';
import { ccr3PluginId } from './ccr3-plugin-id.js';

type RequestHandler = (request: IncomingMessage, response: ServerResponse) => void;

/** The part of CCR 3's plugin context this plugin uses. */
export type Ccr3PluginContext = {
  pluginConfig?: unknown;
  logger?: { info(message: string): void; warn(message: string): void };
  paths: { configDir: string; pluginDataDir: string };
  registerHttpBackend(backend: {
    id: string;
    host: string;
    port: number;
    handler: RequestHandler;
  }): Promise<{ url: string; port: number }> | { url: string; port: number };
};

export type Ccr3Plugin = {
  setup(context: Ccr3PluginContext): Promise<void>;
  /** `reason`: `"reload"` (gateway restart, still enabled), `"disabled"`, `"stop"` (CCR stops). */
  stop(options?: { reason?: string }): Promise<void>;
};

export type Ccr3PluginHost = {
  /** CCR's environment (the plugin runs in CCR's process): `CURSOR_API_KEY`, `CURSOR_BACKEND_URL`, … */
  env: Env;
  homedir: string;
  /** Tests: a scripted upstream instead of `@cursor/sdk`. */
  upstream?: UpstreamPort;
  registry?: Partial<EngineRegistryOptions>;
};

/** One engine the registry holds: the bridge, its request listener, and its log file. */
export type Ccr3Engine = {
  bridge: Bridge;
  handler: RequestHandler;
  drain(timeoutMs: number): Promise<DrainResult>;
};

const logFileName = 'cursor-bridge.log';

export const createCcr3Plugin = (
  host: Ccr3PluginHost,
): Ccr3Plugin & { registry: EngineRegistry<Ccr3Engine> } => {
  const registry = new EngineRegistry<Ccr3Engine>(host.registry);

  const createEngine = async (
    context: Ccr3PluginContext,
    settings: ReturnType<typeof resolveCcr3PluginConfig>,
  ) => {
    const { config } = settings;
    // Never CCR's stdout (its daemon's goes to /dev/null anyway); no conversation text is logged.
    const destination = pino.destination({
      dest: join(context.paths.pluginDataDir, logFileName),
      mkdir: true,
      sync: false,
    });
    const logger = createLogger({ level: config.log ? config.logLevel : 'silent', destination }).child({
      component: 'ccr3-plugin',
    });
    for (const warning of config.warnings) {
      logger.warn(warning);
      context.logger?.warn(`cursor-bridge: ${warning}`);
    }
    let bridge: Bridge;
    try {
      bridge = await createBridge({
        config,
        env: host.env,
        homedir: host.homedir,
        logger,
        watchTemplates: true,
        ...(host.upstream === undefined ? {} : { upstream: host.upstream }),
      });
    } catch (error) {
      destination.end();
      throw error;
    }
    // The bridge's routes are its server's one request listener; CCR's backend server calls it instead.
    const [listener] = bridge.server.listeners('request');
    if (typeof listener !== 'function')
      throw new Error('cursor-bridge: the bridge server has no request listener');
    logger.info({ mode: config.cursor.mode, workspaces: config.workspacesDir }, 'engine ready');
    return {
      bridge,
      handler: listener as RequestHandler,
      drain: async (timeoutMs: number) => {
        try {
          const result = await bridge.drain(timeoutMs);
          logger.info(result, 'engine closed');
          return result;
        } finally {
          destination.end();
        }
      },
    };
  };

  return {
    registry,
    setup: async (context) => {
      const settings = resolveCcr3PluginConfig(context.pluginConfig, {
        configDir: context.paths.configDir,
        env: host.env,
        homedir: host.homedir,
      });
      const { engine, reused } = await registry.acquire(settings.engineKey, () =>
        createEngine(context, settings),
      );
      let backend: { url: string };
      try {
        backend = await context.registerHttpBackend({
          id: ccr3PluginId,
          host: '127.0.0.1',
          port: settings.port,
          handler: (request, response) => engine.handler(request, response),
        });
      } catch (error) {
        // CCR disables a plugin whose setup throws and never calls its stop: nothing could reach this
        // engine, so close it now (e.g. the port is taken).
        await registry.release('setup failed');
        throw error;
      }
      context.logger?.info(
        `cursor-bridge: ${reused ? 'kept its engine' : 'engine started'} on ${backend.url} (log: ${join(context.paths.pluginDataDir, logFileName)})`,
      );
    },
    stop: async (options) => {
      await registry.release(options?.reason);
    },
  };
};

let plugin: Ccr3Plugin | undefined;

/**
 * The process's one plugin (the entry file calls this on every import: CCR re-imports it on each reload,
 * this module stays evaluated).
 */
export const getCcr3Plugin = (host: Ccr3PluginHost): Ccr3Plugin => {
  plugin ??= createCcr3Plugin(host);
  return plugin;
};
