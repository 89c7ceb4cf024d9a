/**
 * The `cursor-sdk` transformer's implementation inside Claude Code Router: the same engine as `serve`
 * (sessions, workspaces, grounding, parked tools, model selection), built by {@link createBridgeEngine}
 * without the public server, once per process for each distinct set of transformer options and Cursor key,
 * on the first request (it needs that request's key); what takes longest, the SDK's import, is started when
 * CCR constructs the transformer (`preloadCursorSdk` in ccr-transformer.ts). `ccr/cursor-sdk.cjs` is the
 * CommonJS shell CCR loads; it passes the host's environment in (only entry points read `process.env`).
 */
import { randomBytes } from 'node:crypto';
import { pino, type Logger } from 'pino';
import { createBridgeEngine, type BridgeEngine } from '../../bridge/create-bridge.js';
import type { ConfigOverrides } from '../../config/config-overrides.js';
import type { Env } from '../../config/interpolate.js';
import { resolveLogLevel } from '../../config/log-level.js';
import { defaultConfigPath, loadConfig, type BridgeConfig } from '../../config/load-config.js';
import { createLogger } from '../../logging/logger.js';
import type { RepeatLimiter } from '../../logging/repeat-limiter.js';
import type { ParseResult } from '../../protocols/protocol-adapter.js';
import { checkRequestDepth } from '../../protocols/shared/parse-request-json.js';
import { createTurnError } from '../../turn/turn-error.js';
import type { UpstreamPort } from '../../upstream/upstream-port.js';
import { createWarningLimiter, runTurnRequest } from '../turn-pipeline.js';
import { convertCcrRequestToTurn, watchClientConnection, type CcrContext } from './ccr-turn-request.js';
import { createCcrTurnWriter, createErrorTurnResponse } from './create-turn-response.js';
import { LoopbackListener } from './loopback-listener.js';
import { errorMessage } from '../../../lib/error-message.js';
import { isRecord } from '../../../lib/is-record.js';

/** What the CommonJS entry knows about its host process. */
export type CcrHost = {
  env: Env;
  homedir: string;
  /** Replace the Cursor upstream (tests use the scripted one). */
  upstream?: UpstreamPort;
};

/** What `transformRequestIn` returns to llms: the body unchanged, and where the answer is. */
export type CcrTransformResult = {
  body: unknown;
  config: {
    /** The ready answer, for a CCR build that honours it and skips its own fetch of the provider URL. */
    __providerResponse: Response;
    /** The same answer behind a one-time loopback URL, for upstream CCR, which always fetches `config.url`. */
    url: URL;
    /** No proxy between CCR and its own process, whatever `PROXY_URL` says. */
    httpsProxy: undefined;
  };
};

/** An engine, shared by every transformer instance with the same options and key. */
type Runtime = {
  bridge: BridgeEngine;
  config: BridgeConfig;
  logger: Logger;
  /** The `tolerated unsupported input` rate limit (per warning code). */
  warnings: RepeatLimiter;
};

export class CcrFacade {
  readonly #host: CcrHost;
  readonly #runtimes = new Map<string, Promise<Runtime>>();
  /** One listener per process, also for answers of an engine that could not start. */
  #loopback: Promise<LoopbackListener> | undefined;

  constructor(host: CcrHost) {
    this.#host = host;
  }

  /**
   * llms' `transformRequestIn(request, provider, context)` with the transformer's options first. Never
   * rejects for a turn's own failure: errors become a Response with the error's status, which llms turns
   * into `provider_response_error`.
   */
  async transformRequestIn(
    options: unknown,
    request: unknown,
    provider: unknown,
    context: CcrContext | undefined,
  ): Promise<CcrTransformResult> {
    const loopback = await this.#listener();
    let runtime: Runtime;
    try {
      runtime = await this.#runtime(options, providerApiKey(provider));
    } catch (error) {
      const message = errorMessage(error);
      const failure = createTurnError('api', `cursor-sdk transformer cannot start: ${message}`, {
        retryable: false,
      });
      return this.#answer(request, createErrorTurnResponse(failure), loopback);
    }
    return this.#answer(request, await this.#respond(runtime, request, context), loopback);
  }

  /** Closes every engine and the loopback listener (CCR itself just exits; tests call this). */
  async close(): Promise<void> {
    const runtimes = await Promise.allSettled([...this.#runtimes.values()]);
    this.#runtimes.clear();
    for (const runtime of runtimes) {
      if (runtime.status !== 'fulfilled') continue;
      runtime.value.warnings.close();
      await runtime.value.bridge.close();
    }
    const loopback = await this.#loopback?.catch(() => undefined);
    this.#loopback = undefined;
    await loopback?.close();
  }

  #listener(): Promise<LoopbackListener> {
    if (this.#loopback === undefined) {
      const logger = createLogger({ level: 'warn', destination: pino.destination({ fd: 2, sync: false }) });
      this.#loopback = LoopbackListener.start({ logger: logger.child({ component: 'ccr-loopback' }) });
      this.#loopback.catch(() => (this.#loopback = undefined));
    }
    return this.#loopback;
  }

  #respond(runtime: Runtime, request: unknown, context: CcrContext | undefined): Promise<Response> {
    const requestId = randomBytes(6).toString('hex');
    let child: Logger | undefined;
    const log = (): Logger => (child ??= runtime.logger.child({ requestId }));
    // Both bodies the turn may be read from: CCR's unified request and Claude Code's original one.
    const tooDeep = checkRequestDepth(context?.req?.body) ?? checkRequestDepth(request);
    const parsed: ParseResult =
      tooDeep === undefined ? convertCcrRequestToTurn(request, context) : { ok: false, error: tooDeep };
    const { providerName } = runtime.config.cursor;
    return runTurnRequest({
      parsed,
      // CCR's router already chose the model (its Router, longContext counts, `/model`): serve exactly that
      // one, named explicitly so the engine's own routing cannot pick another. The answer names the Cursor
      // model that runs (a catalog alias resolved to its id), else CCR's choice.
      handleTurn: (turn, signal) =>
        runtime.bridge.engine.handleTurn(
          turn.model.includes(',') ? turn : { ...turn, model: `${providerName},${turn.model}` },
          signal,
        ),
      log,
      warnings: runtime.warnings,
      idPrefix: 'chatcmpl-',
      watchClient: (abort) => watchClientConnection(context, abort),
      writer: createCcrTurnWriter(log),
    });
  }

  /** Both hand-over paths for one Response. */
  #answer(body: unknown, response: Response, loopback: LoopbackListener): CcrTransformResult {
    const url = new URL(loopback.park(response));
    return { body, config: { __providerResponse: response, url, httpsProxy: undefined } };
  }

  #runtime(options: unknown, apiKey: string | undefined): Promise<Runtime> {
    const key = JSON.stringify([sortedOptions(options), apiKey ?? null]);
    let runtime = this.#runtimes.get(key);
    if (runtime === undefined) {
      runtime = this.#createRuntime(options, apiKey);
      // A failed start is retried by the next request (the config may have been fixed meanwhile).
      runtime.catch(() => this.#runtimes.delete(key));
      this.#runtimes.set(key, runtime);
    }
    return runtime;
  }

  async #createRuntime(options: unknown, apiKey: string | undefined): Promise<Runtime> {
    const { env, homedir } = this.#host;
    const path = defaultConfigPath(env, homedir);
    const overrides = createTransformerOverrides(options, apiKey);
    const config = await loadConfig({ path, env, homedir, overrides });
    const logLevel = resolveLogLevel(env, config.logLevel);
    const level = logLevel.ok ? logLevel.value : config.logLevel;
    // stderr: CCR's stdout is its own; its pino logger is not handed to plugins that are functions.
    const logger = createLogger({
      level: config.log ? level : 'silent',
      destination: pino.destination({ fd: 2, sync: false }),
    }).child({ component: 'ccr' });
    for (const warning of config.warnings) logger.warn(warning);
    if (!logLevel.ok) logger.warn(`${logLevel.error}; using ${level}`);
    const bridge = await createBridgeEngine({
      config,
      env,
      homedir,
      logger,
      watchTemplates: true,
      // Through CCR an in-stream error reaches Claude Code in AnthropicTransformer's own shape, which it
      // answers with a non-streaming retry of the same turn (never the continuation it sends `serve`).
      // Replaying the failure to that retry, as `serve` does, would make Claude Code retry a 503 for
      // minutes; the retry gets a fresh run instead. A finished answer is still replayed to an identical
      // retry within the replay window.
      engine: { replayFailures: false },
      ...(this.#host.upstream === undefined ? {} : { upstream: this.#host.upstream }),
    });
    logger.info({ mode: config.cursor.mode, config: path }, 'cursor-sdk transformer ready');
    return { bridge, config, logger, warnings: createWarningLimiter(logger) };
  }
}

const providerApiKey = (provider: unknown): string | undefined => {
  if (typeof provider !== 'object' || provider === null) return undefined;
  const key = (provider as { apiKey?: unknown }).apiKey;
  return typeof key === 'string' && key.trim() !== '' ? key : undefined;
};

const sortedOptions = (options: unknown): unknown =>
  isRecord(options) ? Object.fromEntries(Object.entries(options).sort(([a], [b]) => a.localeCompare(b))) : {};

/**
 * What CCR hands one transformer instance, as overrides of the config file: the options CCR passed it (CCR
 * interpolated them with the rest of its config; an invalid one is named `transformer options.<name>`) and the
 * key it passes as `provider.apiKey`.
 */
export const createTransformerOverrides = (
  options: unknown,
  apiKey: string | undefined,
): ConfigOverrides => ({
  fieldPath: ['transformer options'],
  interpolate: false,
  cursorOptions: options ?? {},
  ...(apiKey === undefined ? {} : { cursorApiKey: apiKey }),
});

let facade: CcrFacade | undefined;

/** The process's one facade (the CommonJS entry calls this on every request). */
export const getCcrFacade = (host: CcrHost): CcrFacade => {
  facade ??= new CcrFacade(host);
  return facade;
};
