/**
 * What a scenario sees of the bridge under test: the HTTP exchanges between the client and the bridge,
 * and the agent runs as the model backend received them. `serve-bridge.ts` produces it for
 * `cursor-bridge serve` (the real CLI, the real `@cursor/sdk`) against the project's fake Cursor
 * backend.
 */

import type { SseFrame } from '../../../src/protocols/sse-frame.js';
import type { FakeReceivedImage } from '../../fakes/cursor-backend/received-images.js';
import type { TurnError } from '../../../src/turn/turn-error.js';
import type { TurnProtocol, TurnRequest } from '../../../src/turn/turn-request.js';

/** One HTTP exchange between the client and the bridge. */
export type RecordedExchange = {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  /** Set when the response finished. */
  status?: number;
  protocol?: TurnProtocol;
  /** The JSON body, for the turn routes and `count_tokens`. */
  body?: unknown;
  /** What the protocol adapter made of it. */
  parsed?: { ok: true; turn: TurnRequest } | { ok: false; error: TurnError };
  /** Every SSE frame the bridge sent, in order, keepalives included. */
  frames: SseFrame[];
  /** How many of {@link frames} were keepalives. */
  keepalives: number;
  /** A non-streaming answer, or an error envelope. */
  json?: unknown;
  /** Set when the exchange broke (the client hung up, the bridge was unreachable). */
  error?: string;
};

/** One agent run as the model backend saw it (one `AgentRunRequest`). */
export type BackendRun = {
  /** The Cursor agent the run belongs to (the run request's `conversationId`). */
  agentId: string;
  /** The SDK re-sent an earlier, failed run request (its stream retry), replaying the same turn. */
  replay: boolean;
  model: string;
  /** The full prompt text the agent received for this run (the user message of the run request). */
  prompt: string;
  /** How many earlier turns the run request's conversation state carried (the SDK's checkpoint). */
  historyTurns: number;
  /** The host tools mirrored for the run. */
  toolNames: string[];
  /** Whether the run carries the client's shell tool (the conversation, not a side request). */
  main: boolean;
  /** The images of the run's user message, as the backend received them. */
  images: FakeReceivedImage[];
  /** Tool results the backend received for the run, in call order, with their images. */
  toolResults: Array<{ toolCallId: string; text: string; isError: boolean; images: FakeReceivedImage[] }>;
  /** The scratch workspace the agent runs in, as the prompt names it. */
  workspaceDir: string;
};

export interface E2eBridge {
  /** The unix socket that reaches the bridge, for the clients' namespace relay (`network-isolation.ts`). */
  readonly socketPath: string;
  /** Every HTTP exchange, in arrival order. */
  readonly exchanges: readonly RecordedExchange[];
  /** Exchanges on a turn route (requests that reached a protocol adapter). */
  turnExchanges(): RecordedExchange[];
  /** Turn exchanges that carry the client's shell tool: the conversation, without side requests. */
  mainExchanges(): RecordedExchange[];
  /** Every HTTP request the model backend received (auth, models, agent streams), in arrival order. */
  backendRequests(): Array<{ method: string; path: string }>;
  /** Every agent run, in start order. */
  runs(): BackendRun[];
  /** The runs with {@link BackendRun.main} set. */
  mainRuns(): BackendRun[];
  /** The bridge's `GET /metrics` counters (turns, resumed, slim, replayed, …), read from its Prometheus text. */
  metrics(): Promise<Record<string, unknown>>;
  /** Read a file of the scratch workspace a run's agent works in, while the session is live. */
  readWorkspaceFile(run: BackendRun, relativePath: string): Promise<string>;
  /**
   * For a failure report: the exchanges (with the exact frames sent), the backend's runs and request
   * log, and the bridge's own output.
   */
  describe(): string;
  close(): Promise<void>;
}
