/**
 * The upstream port over `@cursor/sdk`, in-process. The SDK is imported on first use, or by {@link
 * CursorUpstream.load} (`serve` loads it before it listens): it reads `CURSOR_BACKEND_URL` once at
 * import, and the bridge never overrides it.
 */

import { clipText } from '../../../lib/clip-text.js';
import type * as CursorSdk from '@cursor/sdk';
import type { ModelSelection } from '@cursor/sdk';
import type { Logger } from 'pino';
import { BridgeError, createTurnError } from '../../turn/turn-error.js';
import type { TurnReasoning } from '../../turn/turn-request.js';
import type {
  UpstreamMode,
  UpstreamPort,
  UpstreamSession,
  UpstreamSessionOptions,
} from '../upstream-port.js';
import { buildAgentOptions, CursorSession, type CursorSessionContext } from './cursor-session.js';
import { mapCursorSdkError } from './map-cursor-error.js';
import { createModelCatalog, selectModel, type CatalogModel, type ModelCatalog } from './model-selection.js';
import { sdkAccessTokenShare, type FetchHost } from './sdk-access-token.js';
import { sdkCatalogPublisher, type SdkEnv } from './sdk-catalog-env.js';

export type CursorAuth = { ok: true; apiKey: string } | { ok: false; message: string };

export type CursorUpstreamOptions = {
  auth: CursorAuth;
  logger: Logger;
  mode: UpstreamMode;
  /** Agent mode only: the SDK cwd (`cursorCwd`); bridge and plan modes run in the scratch workspace. */
  agentCwd?: string;
  sandboxEnabled: boolean;
  createStore: CursorSessionContext['createStore'];
  /** The SDK's own retry of stalled streams; on by default (a retry re-calls `execute` with the same id). */
  enableAgentRetries?: boolean;
  catalogTtlMs?: number;
  /** Bounds on a run's silence: to its first upstream event and between events (ms; 0 disables). */
  timeouts?: { firstEventTimeoutMs?: number; idleTimeoutMs?: number };
  /**
   * The quiet period that ends a tool batch whose size the SDK never announced (default in
   * {@link CursorRunOptions}); tests that cut a stream between a tool call and its batch's end widen it.
   */
  batchQuietMs?: number;
  /** Loads the SDK; tests set `CURSOR_BACKEND_URL` first. */
  loadSdk?: () => Promise<typeof CursorSdk>;
  /**
   * The environment the SDK reads at each `Agent.create` (default `process.env`): each catalog this
   * upstream lists is handed to the SDK's model check there (see `sdk-catalog-env.ts`).
   */
  sdkEnv?: SdkEnv;
  /**
   * What holds the `fetch` the SDK exchanges the API key with (default `globalThis`): once the SDK is
   * loaded, its exchanges of this upstream's key are answered from one token per process (see
   * `sdk-access-token.ts`).
   */
  fetchHost?: FetchHost;
};

/**
 * Imports `@cursor/sdk` (Node keeps one instance per process: later imports share it). For a host that
 * loads it ahead of its first engine, as the CCR 1/2 transformer does at CCR's start.
 */
export const importCursorSdk = (): Promise<typeof CursorSdk> => import('@cursor/sdk');

export class CursorUpstream implements UpstreamPort {
  readonly #options: CursorUpstreamOptions;
  readonly #sessions = new Set<CursorSession>();
  #sdk: Promise<typeof CursorSdk> | undefined;
  #catalog: ModelCatalog | undefined;
  #sessionCount = 0;
  #platform: Promise<CursorSdk.CursorAgentPlatform> | undefined;
  readonly #catalogEnv: ReturnType<typeof sdkCatalogPublisher>;
  readonly #accessToken: ReturnType<typeof sdkAccessTokenShare>;

  constructor(options: CursorUpstreamOptions) {
    this.#options = options;
    this.#catalogEnv = sdkCatalogPublisher(options.sdkEnv ?? process.env);
    this.#accessToken = sdkAccessTokenShare(options.fetchHost ?? globalThis);
  }

  /** Imports the SDK (its first import is the bulk of a start's CPU); later calls share it. */
  async load(): Promise<void> {
    await this.#loadSdk();
  }

  async preflight(input: { model: string; reasoning: TurnReasoning }): Promise<void> {
    await this.#select(input.model, input.reasoning);
  }

  /**
   * The catalog as the SDK lists it (for `model get cursor`, and the bridge's model resolution): cached
   * for `catalogTtlMs` (10 min), shared with {@link preflight}; a failed refresh serves the last catalog.
   */
  async listModels(): Promise<readonly CatalogModel[]> {
    return (await this.#catalogFor(this.#apiKey()).get()).models;
  }

  async createSession(options: UpstreamSessionOptions): Promise<UpstreamSession> {
    const apiKey = this.#apiKey();
    const sdk = await this.#loadSdk();
    const session = new CursorSession(`cursor-${++this.#sessionCount}`, {
      Agent: sdk.Agent,
      apiKey,
      logger: this.#options.logger,
      mode: this.#options.mode,
      workspaceDir: options.workspaceDir,
      ...(this.#options.agentCwd === undefined ? {} : { agentCwd: this.#options.agentCwd }),
      ...(options.webTools === undefined ? {} : { webTools: options.webTools }),
      sandboxEnabled: this.#options.sandboxEnabled,
      enableAgentRetries: this.#options.enableAgentRetries ?? true,
      ...(this.#options.timeouts === undefined && this.#options.batchQuietMs === undefined
        ? {}
        : {
            timeouts: {
              ...this.#options.timeouts,
              ...(this.#options.batchQuietMs === undefined
                ? {}
                : { batchQuietMs: this.#options.batchQuietMs }),
            },
          }),
      selectModel: (input) => this.#select(input.model, input.reasoning),
      createStore: this.#options.createStore,
      onDisposed: () => this.#sessions.delete(session),
      onKeyRefused: () => this.#accessToken.forget(apiKey),
    });
    this.#sessions.add(session);
    return session;
  }

  /**
   * Builds the SDK executor a session in `workspaceDir` will use, through the SDK's public
   * `CursorAgentPlatform.prewarmLocalWorkspace`, with exactly the options the session's agent gets (the
   * executor is shared by key, and reference counted: the lease is held until the returned release).
   * The platform is only a handle on the SDK's process-wide executor cache; its store is never written.
   *
   * Each call for a new directory talks to Cursor, and nothing public lets executors share it: the SDK
   * (1.0.32) gives every new executor a dashboard transport of its own, fetches the team's admin settings
   * over it (`GetTeamAdminSettingsOrEmptyIfNotInTeam`, applied because an API key is set), and reports an
   * `sdk.executor.startup` analytics event. Privacy mode, server config and the Statsig bootstrap are
   * cached per API key for the process (the bootstrap only once it returned a config). Neither
   * `createAgentPlatform`, `configureCursorSdk` nor the agent options take a transport or settings, and
   * leaving the key out would build a different executor without the admin controls. So callers warm
   * only for demand a user caused (the warm pool). The key exchange each new SDK client makes (the
   * executor's transports, and its agent client at its first run) is answered from the process's token
   * (`sdk-access-token.ts`), so neither the warm-up nor the warm executor's first run waits for one.
   */
  async prewarm(options: UpstreamSessionOptions): Promise<() => Promise<void>> {
    const apiKey = this.#apiKey();
    if (this.#options.mode === 'agent') {
      throw new BridgeError(createTurnError('api', 'agent mode runs in cursorCwd: nothing to pre-warm'));
    }
    const sdk = await this.#loadSdk();
    const platform = await (this.#platform ??= sdk
      .createAgentPlatform({ localStore: this.#options.createStore() })
      .catch((error: unknown) => {
        this.#platform = undefined;
        throw error;
      }));
    const agentOptions = buildAgentOptions(
      {
        apiKey,
        mode: this.#options.mode,
        workspaceDir: options.workspaceDir,
        enableAgentRetries: this.#options.enableAgentRetries ?? true,
      },
      { sandbox: this.#options.sandboxEnabled },
    );
    try {
      return await platform.prewarmLocalWorkspace(agentOptions);
    } catch (error) {
      throw new BridgeError(mapCursorSdkError(error), { cause: error });
    }
  }

  async close(): Promise<void> {
    try {
      await Promise.all([...this.#sessions].map((session) => session.dispose()));
    } finally {
      this.#catalogEnv.withdraw(this);
      this.#accessToken.leave(this);
    }
  }

  #apiKey(): string {
    const auth = this.#options.auth;
    if (!auth.ok)
      throw new BridgeError(createTurnError('authentication', auth.message, { retryable: false }));
    return auth.apiKey;
  }

  #loadSdk(): Promise<typeof CursorSdk> {
    if (this.#sdk === undefined) {
      // Before the SDK can exchange the key: every client it builds from now on shares one token.
      if (this.#options.auth.ok) this.#accessToken.join(this, this.#options.auth.apiKey);
      this.#sdk = (this.#options.loadSdk ?? importCursorSdk)();
    }
    return this.#sdk;
  }

  #catalogFor(apiKey: string): ModelCatalog {
    return (this.#catalog ??= createModelCatalog(
      async () => {
        const sdk = await this.#loadSdk();
        const models = await sdk.Cursor.models.list({ apiKey });
        // Before any agent is created with it: the SDK's per-create model check reads it instead of
        // listing the catalog again on the new conversation's path.
        this.#catalogEnv.publish(this, models);
        return models;
      },
      { ttlMs: this.#options.catalogTtlMs ?? 10 * 60_000 },
    ));
  }

  async #select(model: string, reasoning: TurnReasoning): Promise<ModelSelection> {
    const apiKey = this.#apiKey();
    let snapshot;
    try {
      snapshot = await this.#catalogFor(apiKey).get();
    } catch (error) {
      const mapped = mapCursorSdkError(error);
      if (mapped.kind === 'authentication') this.#accessToken.forget(apiKey);
      throw new BridgeError(mapped, { cause: error });
    }
    if (snapshot.refreshError !== undefined) {
      this.#options.logger.warn(
        { err: snapshot.refreshError },
        'Cursor model catalog refresh failed; using the last catalog',
      );
    }
    const result = selectModel(snapshot.models, model, {
      requested: reasoning.requested,
      ...(reasoning.effort === undefined ? {} : { effort: reasoning.effort }),
    });
    if (!result.ok) throw new BridgeError(createTurnError('not-found', result.error, { retryable: false }));
    for (const warning of result.warnings) {
      this.#options.logger.debug({ model: clipText(model), warning: clipText(warning) }, 'model selection');
    }
    return result.selection;
  }
}
