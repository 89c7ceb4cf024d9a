/**
 * The engine's view of a model backend. The Cursor adapter (`cursor/`) implements it over `@cursor/sdk`;
 * `scripted/` implements it for tests.
 *
 * A run can span several client requests: when the model calls host tools the run emits `tool-call`
 * events (each call is *parked* upstream), then `tool-batch-end`; the engine ends the client's response
 * with a tool-use stop and keeps the run. The next client request carries the results; the engine passes
 * them to {@link UpstreamRun.resolveToolCalls} and keeps reading the same event iterator.
 */

import type { TurnError } from '../turn/turn-error.js';
import type { TurnReasoning, TurnTool, TurnUserPart } from '../turn/turn-request.js';
import type { TurnCost } from '../turn/turn-account.js';
import type { TurnUsage } from '../turn/turn-usage.js';

/** How the upstream agent may act: `bridge` = client hosts the tools; `plan` = text only; `agent` = Cursor's own tools. */
export type UpstreamMode = 'bridge' | 'plan' | 'agent';

export type UpstreamPrompt = {
  text: string;
  images: Array<{ mediaType: string; data: string }>;
};

/** Whether a host tool call may reach the client, or is answered to the model with a correction. */
export type UpstreamToolCallCheck = { forward: true } | { forward: false; correction: string };

export interface UpstreamRunInput {
  prompt: UpstreamPrompt;
  /**
   * The client's tools, which the upstream mirrors for this run when its mode hosts them (replacing the
   * previous run's set).
   */
  tools: TurnTool[];
  /** The model id, provider prefix already removed. */
  model: string;
  reasoning: TurnReasoning;
  /**
   * Checks each host tool call of the run before it is parked or announced: a call it corrects is answered
   * to the model with the correction at once and never becomes a `tool-call` event. Default: every call
   * is announced.
   */
  checkToolCall?: (call: {
    toolCallId: string;
    toolName: string;
    input: Record<string, unknown>;
  }) => UpstreamToolCallCheck;
}

/**
 * Events of one run. Ordering contract:
 * - `reasoning-delta`s of one thinking block are followed by `reasoning-end` before text of the same step;
 * - every `tool-call` of a step is emitted before that step's `tool-batch-end`; the upstream decides
 *   batch completeness from its own signals (or a short bounded wait when they are absent);
 * - `usage` is per model turn (not cumulative);
 * - the stream ends with exactly one `end` or `error`, then the iterator completes.
 */
export type UpstreamEvent =
  | { type: 'text-delta'; text: string }
  | { type: 'reasoning-delta'; text: string }
  | { type: 'reasoning-end' }
  /**
   * A host tool call, parked until {@link UpstreamRun.resolveToolCalls} settles it. `parkedAt`: when the
   * SDK's `execute` parked it (epoch ms), for the tool-call latency metric.
   */
  | {
      type: 'tool-call';
      toolCallId: string;
      toolName: string;
      input: Record<string, unknown>;
      parkedAt: number;
    }
  | { type: 'tool-batch-end' }
  /**
   * A hosted web call of the run (sessions with {@link UpstreamWebTools} only), as soon as the backend's
   * record of it is readable — at the latest before the run's terminal event; calls in the order made.
   */
  | { type: 'web-call'; call: UpstreamWebCall }
  | { type: 'usage'; usage: TurnUsage }
  | { type: 'end'; status: 'finished' | 'cancelled' }
  | { type: 'error'; error: TurnError };

/** How a hosted web call ended. */
export type UpstreamWebResult<Success> =
  | ({ status: 'success' } & Success)
  | { status: 'error'; message: string }
  | { status: 'rejected'; reason: string };

/**
 * A web search or page fetch the backend ran on its own servers (Cursor's hosted `webSearch` /
 * `webFetch`), complete, with its result: nothing of it runs on the client.
 */
export type UpstreamWebCall =
  | {
      id: string;
      kind: 'search';
      query: string;
      result: UpstreamWebResult<{ references: Array<{ title: string; url: string; chunk: string }> }>;
    }
  | { id: string; kind: 'fetch'; url: string; result: UpstreamWebResult<{ url: string; markdown: string }> };

/**
 * The backend's hosted web tools an agent may use. They are bound when the agent is created (the SDK
 * sends them with every run), so a session keeps the set it was created with.
 */
export type UpstreamWebTools = {
  /** Page fetches besides searches. */
  fetch: boolean;
  /**
   * Nothing but the hosted web tools: no host tools, none of the backend's local tools, no project
   * settings — an agent whose only job is a search (a client's search side call).
   */
  only: boolean;
};

export type UpstreamToolResult = { toolCallId: string; content: TurnUserPart[]; isError: boolean };

export interface UpstreamRun {
  readonly id: string;
  /** Single consumer. Completes after the terminal `end` / `error` event. */
  readonly events: AsyncIterator<UpstreamEvent>;
  /** Ids of tool calls emitted and not yet resolved. */
  pendingToolCalls(): string[];
  /**
   * Settle parked calls. Unknown ids are ignored and returned, so the engine can decide to replay.
   * Resolving the same id twice is a no-op.
   */
  resolveToolCalls(results: UpstreamToolResult[]): { unknown: string[] };
  /** Cancel the run for real; parked calls are settled; resolves when the run has retired. */
  cancel(): Promise<void>;
  /**
   * Whether the agent saved a conversation checkpoint while this run went on. A run cut short normally
   * checkpoints nothing (the agent holds what it held before it); when this is true the agent holds part
   * of the cut turn, so nothing short of a full replay on a new agent lines up with the transcript.
   */
  historyAdvanced(): boolean;
}

/** One billed turn (a run, on Cursor's side) of an agent. `cost` is absent until the backend reports it. */
export type UpstreamBilledTurn = { id: string; usage: TurnUsage; cost?: TurnCost };

/** An agent's billed usage so far: one entry per turn. */
export type UpstreamUsageReport = { turns: UpstreamBilledTurn[] };

export interface UpstreamSession {
  readonly id: string;
  /**
   * Optional: the billed usage and cost of the session's agent so far, per turn, from the backend's
   * billing (eventually consistent: a turn appears, and its cost arrives, some time after the run ended).
   * Readable after {@link dispose}; rejects when the backend cannot be asked.
   */
  usage?(): Promise<UpstreamUsageReport>;
  /**
   * Start a run. Resolves once the run has started; failures before that (auth, model, network) reject
   * with a BridgeError, failures after it arrive as an `error` event. One active run at a time.
   */
  startRun(input: UpstreamRunInput): Promise<UpstreamRun>;
  /** Cancel any active run, settle every parked call, release the agent. Idempotent. */
  dispose(): Promise<void>;
}

export interface UpstreamSessionOptions {
  /** The session's scratch workspace (the agent's cwd, unless the upstream's mode says otherwise). */
  workspaceDir: string;
  /** The hosted web tools the session's agent may use; absent: none. */
  webTools?: UpstreamWebTools;
}

export interface UpstreamPort {
  /**
   * Check, before the client's response starts, everything that can fail as a plain HTTP error:
   * credentials, the model catalog, the model and reasoning selection. Fast once cached. Rejects with a
   * BridgeError (e.g. `authentication` with retryable false).
   */
  preflight(input: { model: string; reasoning: TurnReasoning }): Promise<void>;
  createSession(options: UpstreamSessionOptions): Promise<UpstreamSession>;
  /**
   * Optional: load now the code every turn needs (no network, no credentials), so that the first request
   * after a start does not wait for it. Idempotent; rejects when that code cannot load.
   */
  load?(): Promise<void>;
  /**
   * Optional: the backend's model catalog (ids and aliases), from the same cache {@link preflight} reads:
   * the network is asked at most once per refresh interval, and a failed refresh serves the last catalog.
   * Rejects when no catalog was ever read (no credentials, backend down).
   */
  listModels?(): Promise<ReadonlyArray<{ id: string; aliases?: readonly string[] }>>;
  /**
   * Optional: build, ahead of any session, what a session's first run in `workspaceDir`
   * would otherwise build on its request path. Resolves to the release of what it holds; rejects when
   * it cannot (no credentials, backend down), which only means the first run pays as before.
   */
  prewarm?(options: UpstreamSessionOptions): Promise<() => Promise<void>>;
  /** Release shared resources; every session must be disposed first or is disposed here. */
  close(): Promise<void>;
}
