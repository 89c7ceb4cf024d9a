/**
 * One conversation's SDK agent plus its `custom-user-tools` tool host. The agent is created at the first
 * run (it needs the model) and keeps its bound model selection for its life; each run's host tools and
 * their calls belong to `host-tools/` (mirrored on the session's MCP server, parked until the client
 * posts its result).
 */

import type { Agent as AgentClass, AgentOptions, ModelSelection, Run, SDKAgent, ToolName } from '@cursor/sdk';
import type { Logger } from 'pino';
import { BridgeError, createTurnError } from '../../turn/turn-error.js';
import type {
  UpstreamMode,
  UpstreamUsageReport,
  UpstreamRun,
  UpstreamRunInput,
  UpstreamSession,
  UpstreamWebTools,
} from '../upstream-port.js';
import { countCheckpointTurns, readCheckpointWebCalls } from './hosted-tools/checkpoint-web-calls.js';
import type { StoredCheckpoint } from './in-memory-agent-store.js';
import { CursorRun, type CursorRunOptions } from './cursor-run.js';
import { SessionHostTools } from './host-tools/session-host-tools.js';
import { mapCursorSdkError } from './map-cursor-error.js';
import { mapCursorUsage } from './map-cursor-usage.js';

/** Quiet period that ends a tool batch whose size the SDK never listed. */
const DEFAULT_BATCH_QUIET_MS = 60;

export type CursorSessionContext = {
  Agent: typeof AgentClass;
  apiKey: string;
  logger: Logger;
  mode: UpstreamMode;
  /** The session's scratch workspace. */
  workspaceDir: string;
  /** Agent mode only: `cursorCwd`, the agent's cwd instead of the scratch workspace. */
  agentCwd?: string;
  /** Cursor's hosted web tools the agent may use (absent: none); fixed for the agent's life. */
  webTools?: UpstreamWebTools;
  sandboxEnabled: boolean;
  enableAgentRetries: boolean;
  /** Bounds on a run's silence (see {@link CursorRunOptions}) and its batch quiet period; defaults when absent. */
  timeouts?: Pick<CursorRunOptions, 'firstEventTimeoutMs' | 'idleTimeoutMs'> & { batchQuietMs?: number };
  /** Resolves the model selection for a run (from the cached catalog). */
  selectModel: (input: UpstreamRunInput) => Promise<ModelSelection>;
  /**
   * A fresh in-memory store per agent: no conversation text on disk. `onRunRequest` is called with the id
   * of each run's backend request as the SDK records it (see {@link BackendFlow}).
   */
  createStore: (hooks?: {
    onRunRequest: (runId: string, requestId: string) => void;
    onCheckpoint: (agentId: string, checkpoint: StoredCheckpoint) => void;
  }) => NonNullable<NonNullable<Parameters<typeof AgentClass.create>[0]['local']>['store']>;
  /** Called once the session is disposed. */
  onDisposed?: () => void;
  /** Called when Cursor refused the API key: a create, a send or a run failed with an authentication error. */
  onKeyRefused?: () => void;
};

/**
 * Whether a run mirrors the client's tools (as `custom-user-tools`): in bridge mode only. Plan mode has no
 * tools; agent mode has Cursor's own.
 */
export const mirrorsHostTools = (context: Pick<CursorSessionContext, 'mode' | 'webTools'>): boolean =>
  context.mode === 'bridge' && context.webTools?.only !== true;

/**
 * The agent's cwd: `cursorCwd` in agent mode when set, else the session's scratch workspace (always for a
 * web-only session: it has no business in the user's project).
 */
const agentCwdOf = (
  context: Pick<CursorSessionContext, 'mode' | 'workspaceDir' | 'agentCwd' | 'webTools'>,
): string =>
  context.mode === 'agent' && context.webTools?.only !== true && context.agentCwd !== undefined
    ? context.agentCwd
    : context.workspaceDir;

/** The SDK tool names of the hosted web tools. */
const webToolNames = (webTools: UpstreamWebTools | undefined): ToolName[] =>
  webTools === undefined ? [] : webTools.fetch ? ['webSearch', 'webFetch'] : ['webSearch'];

/**
 * The SDK's `tools` allow-list and mode for a session: bridge mode `mcp` (the host's tools) plus the
 * hosted web tools it was given; plan mode only the hosted web tools; agent mode Cursor's defaults; a
 * web-only session (a search side call) nothing but the web tools, whatever the mode.
 */
const toolOptionsOf = (
  context: Pick<CursorSessionContext, 'mode' | 'webTools'>,
): Pick<AgentOptions, 'tools' | 'mode'> => {
  const web = webToolNames(context.webTools);
  if (context.webTools?.only === true) return { tools: web };
  if (context.mode === 'bridge') return { tools: ['mcp', ...web] };
  if (context.mode === 'plan') return { tools: web, mode: 'plan' };
  return {};
};

/** Whether the session loads the workspace's project settings (AGENTS.md, deny-hooks): bridge mode's agents. */
const loadsProjectSettings = (context: Pick<CursorSessionContext, 'mode' | 'webTools'>): boolean =>
  context.mode === 'bridge' && context.webTools?.only !== true;

/**
 * The agent options of a session — also what the upstream pre-warms an executor with: the SDK keys its
 * executors on the cwd, api key, setting sources, sandbox and retry options, so both must agree. The
 * one place the mode becomes SDK options (with {@link mirrorsHostTools} for each run's tools).
 */
export const buildAgentOptions = (
  context: Pick<CursorSessionContext, 'apiKey' | 'mode' | 'workspaceDir' | 'enableAgentRetries'> &
    Partial<Pick<CursorSessionContext, 'createStore' | 'agentCwd' | 'webTools'>>,
  choice: {
    model?: ModelSelection;
    sandbox: boolean;
    storeHooks?: Parameters<CursorSessionContext['createStore']>[0];
  },
): AgentOptions => ({
  apiKey: context.apiKey,
  ...(choice.model === undefined ? {} : { model: choice.model }),
  name: 'cursor-bridge',
  // `tools` and `settingSources` are not persisted by the SDK: they are passed on every create.
  ...toolOptionsOf(context),
  local: {
    cwd: agentCwdOf(context),
    // An agent's store (no conversation text on disk); not part of the executor key, so pre-warming has none.
    ...(context.createStore === undefined ? {} : { store: context.createStore(choice.storeHooks) }),
    enableAgentRetries: context.enableAgentRetries,
    sandboxOptions: { enabled: choice.sandbox },
    ...(loadsProjectSettings(context) ? { settingSources: ['project' as const] } : {}),
  },
});

/**
 * The SDK run of a send that resolved after its run had ended (the silence bound): cancelled as soon as it
 * exists. Outside the session, so the pending send holds nothing of the ended run.
 */
const retireLateRun = (sending: Promise<Run>, logger: Logger): void => {
  sending.then(
    (late) =>
      late.cancel().catch((error: unknown) => {
        logger.warn({ err: error }, 'run.cancel() after the silence bound failed');
      }),
    (error: unknown) => logger.debug({ err: error }, 'send() failed after the bound'),
  );
};

export class CursorSession implements UpstreamSession {
  readonly id: string;
  readonly #context: CursorSessionContext;
  readonly #hostTools: SessionHostTools;
  #agent: SDKAgent | undefined;
  /** The agent's id, kept after it is closed: its usage stays readable. */
  #agentId: string | undefined;
  #bound: ModelSelection | undefined;
  #active: CursorRun | undefined;
  /** Conversation checkpoints the agent's store saved so far. */
  #checkpoints = 0;
  /** The agent's latest checkpoint (where a run's hosted web calls are read, see checkpoint-web-calls.ts). */
  #checkpoint: StoredCheckpoint | undefined;
  /** Turns the checkpoint held when the active run was sent: the run's own turn comes after them. */
  #turnsBefore = 0;
  #disposed = false;

  constructor(id: string, context: CursorSessionContext) {
    this.id = id;
    this.#context = context;
    this.#hostTools = new SessionHostTools(context.logger);
  }

  async startRun(input: UpstreamRunInput): Promise<UpstreamRun> {
    if (this.#disposed) throw new BridgeError(createTurnError('api', 'The Cursor session was disposed.'));
    if (this.#active !== undefined && !this.#active.finished) {
      throw new BridgeError(createTurnError('api', 'The Cursor agent already has an active run.'));
    }
    const selection = await this.#context.selectModel(input);
    await this.#hostTools.mirror(mirrorsHostTools(this.#context) ? input.tools : []);
    const agent = await this.#ensureAgent(selection);

    const checkpointsBefore = this.#checkpoints;
    // Only a session with web tools reads its checkpoints (see #onCheckpoint).
    this.#turnsBefore =
      this.#context.webTools === undefined || this.#checkpoint === undefined
        ? 0
        : (countCheckpointTurns(this.#checkpoint.readBlob, this.#checkpoint.rootBlobId) ?? 0);
    const { batchQuietMs = DEFAULT_BATCH_QUIET_MS, ...bounds } = this.#context.timeouts ?? {};
    const run: CursorRun = new CursorRun({
      ...bounds,
      logger: this.#context.logger,
      historyAdvanced: () => this.#checkpoints !== checkpointsBefore,
      toolCalls: (sink) =>
        this.#hostTools.beginRun({
          ...sink,
          batchQuietMs,
          ...(input.checkToolCall === undefined ? {} : { check: input.checkToolCall }),
        }),
      // Let go of a finished run: its SDK `Run` keeps the run's whole request context (its executor
      // resources) reachable until the next turn, in every idle session up to the cap.
      onFinished: (event) => {
        if (this.#active === run) this.#active = undefined;
        if (event.type === 'error' && event.error.kind === 'authentication') this.#context.onKeyRefused?.();
      },
    });
    this.#active = run;
    const customTools = run.toolCalls.customTools();
    // A live agent keeps its bound selection; only a different model id is switched per send (the SDK
    // keeps a per-send model for the agent's later sends, so compare with the agent's current one).
    const current = agent.model?.id ?? this.#bound?.id;
    const modelOverride = current !== undefined && current !== selection.id ? { model: selection } : {};
    try {
      const sending = agent.send(
        {
          text: input.prompt.text,
          ...(input.prompt.images.length === 0
            ? {}
            : {
                images: input.prompt.images.map((image) => ({
                  data: image.data,
                  mimeType: image.mediaType,
                })),
              }),
        },
        { onDelta: run.onDelta, local: { customTools }, ...modelOverride },
      );
      // On a dead backend `send()` itself can take minutes: past the first-event bound the run already
      // holds its error, and the late SDK run is cancelled as soon as it exists.
      const sdkRun = await Promise.race([sending, run.expired.then(() => undefined)]);
      if (sdkRun === undefined) {
        retireLateRun(sending, this.#context.logger);
        return run;
      }
      run.attach(sdkRun);
      if ('model' in modelOverride) this.#bound = selection;
      return run;
    } catch (error) {
      run.abandon();
      throw this.#failed(error);
    }
  }

  /**
   * The agent's billed turns (`Agent.getUsage`: Cursor's billing API, asked with the API key; the agent
   * object is not needed, so it works after the agent is closed). No agent yet: no turns.
   */
  async usage(): Promise<UpstreamUsageReport> {
    const agentId = this.#agentId;
    if (agentId === undefined) return { turns: [] };
    const report = await this.#context.Agent.getUsage(agentId, { apiKey: this.#context.apiKey });
    return {
      turns: report.runs.map((run) => ({
        id: run.runId,
        usage: mapCursorUsage(run.usage),
        ...(run.cost === undefined
          ? {}
          : { cost: { rawCents: run.cost.rawCostCents, chargedCents: run.cost.chargedCents } }),
      })),
    };
  }

  async dispose(): Promise<void> {
    if (this.#disposed) return;
    this.#disposed = true;
    try {
      await this.#active?.cancel();
    } finally {
      const agent = this.#agent;
      this.#agent = undefined;
      agent?.close();
      await this.#hostTools.close('the Cursor session was disposed');
      this.#context.onDisposed?.();
    }
  }

  /**
   * The agent's store saved a checkpoint: the history moved, and with hosted web tools the active run's
   * web calls are read from it (the SDK reports them nowhere else). Runs inside the SDK's handling of the
   * backend's message, so what it finds reaches the run before anything the backend sent later.
   */
  #onCheckpoint(checkpoint: StoredCheckpoint): void {
    this.#checkpoints += 1;
    this.#checkpoint = checkpoint;
    const run = this.#active;
    if (this.#context.webTools === undefined || run === undefined || run.finished) return;
    const read = readCheckpointWebCalls(checkpoint.readBlob, checkpoint.rootBlobId, this.#turnsBefore);
    if (read.ok) run.webCalls(read.value.calls);
    else run.webCallsUnreadable(read.error);
  }

  /** An SDK failure as the bridge's error; a refused key is reported to {@link CursorSessionContext.onKeyRefused}. */
  #failed(error: unknown): BridgeError {
    const mapped = mapCursorSdkError(error);
    if (mapped.kind === 'authentication') this.#context.onKeyRefused?.();
    return new BridgeError(mapped, { cause: error });
  }

  async #ensureAgent(selection: ModelSelection): Promise<SDKAgent> {
    if (this.#agent !== undefined) return this.#agent;
    const { Agent, logger } = this.#context;
    const create = (sandbox: boolean): ReturnType<typeof Agent.create> =>
      Agent.create(
        buildAgentOptions(this.#context, {
          model: selection,
          sandbox,
          // The agent has one run at a time: the request recorded is the active run's (see BackendFlow).
          storeHooks: {
            onRunRequest: (_runId, requestId) => this.#active?.flow.expect(requestId),
            onCheckpoint: (_agentId, checkpoint) => this.#onCheckpoint(checkpoint),
          },
        }),
      );
    try {
      this.#agent = await create(this.#context.sandboxEnabled);
    } catch (error) {
      const sandboxRefused =
        this.#context.sandboxEnabled && error instanceof Error && /sandbox/i.test(error.message);
      if (!sandboxRefused) throw this.#failed(error);
      logger.warn(
        { err: error },
        'Cursor local sandboxing is not supported on this host; running without it',
      );
      try {
        this.#agent = await create(false);
      } catch (retryError) {
        throw this.#failed(retryError);
      }
    }
    this.#bound = selection;
    this.#agentId = this.#agent.agentId;
    return this.#agent;
  }
}
