/**
 * What a scenario sees of the bridge under test, whatever plays the model behind it: today the
 * in-process bridge with a scripted upstream (`scripted-bridge.ts`); later `cursor-bridge serve` with the
 * real `@cursor/sdk` against the fake Cursor backend, which only has to produce the same view.
 */

import type { SseFrame } from '../../../src/protocols/sse-frame.js';
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
  /** The JSON body, for the turn routes. */
  body?: unknown;
  /** What the protocol adapter made of it. */
  parsed?: { ok: true; turn: TurnRequest } | { ok: false; error: TurnError };
  /** Every SSE frame the bridge sent, in order, keepalives included. */
  frames: SseFrame[];
  /** How many of {@link frames} were keepalives. */
  keepalives: number;
  /** A non-streaming answer, or an error envelope. */
  json?: unknown;
};

/** One agent run as the model backend saw it. */
export type BackendRun = {
  /** The Cursor agent (SDK agent / upstream session) the run belongs to. */
  agentId: string;
  model: string;
  /** The full prompt text the agent received for this run. */
  prompt: string;
  /** The host tools mirrored for the run. */
  toolNames: string[];
  /** Whether the run carries the client's shell tool (the conversation, not a side request). */
  main: boolean;
  /** Tool results the run received, in arrival order. */
  toolResults: Array<{ toolCallId: string; text: string; isError: boolean }>;
  /** The scratch workspace the agent runs in. */
  workspaceDir: string;
};

export interface E2eBridge {
  /** The unix socket the bridge listens on (see `network-isolation.ts`). */
  readonly socketPath: string;
  /** Every HTTP exchange, in arrival order. */
  readonly exchanges: readonly RecordedExchange[];
  /** Exchanges on a turn route (requests that reached a protocol adapter). */
  turnExchanges(): RecordedExchange[];
  /** Turn exchanges that carry the client's shell tool: the conversation, without side requests. */
  mainExchanges(): RecordedExchange[];
  /** Every agent run, in start order. */
  runs(): BackendRun[];
  /** The runs with {@link BackendRun.main} set. */
  mainRuns(): BackendRun[];
  /** The bridge's `/metrics` counters (turns, resumed, slim, replayed, …). */
  metrics(): Promise<Record<string, unknown>>;
  /** Read a file of the scratch workspace a run's agent works in, while the session is live. */
  readWorkspaceFile(run: BackendRun, relativePath: string): Promise<string>;
  /** Exchanges (with the exact frames sent), runs and the bridge log, for a failure report. */
  describe(): string;
  close(): Promise<void>;
}
