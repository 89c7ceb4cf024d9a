/**
 * What the engine needs from the workspace layer, as narrow ports so the engine can be tested with
 * plain objects. The CLI wires them to `src/workspace/`.
 */

import type { TurnMessage, TurnRequest } from '../turn/turn-request.js';
import type { Grounding } from './prompt-builder.js';

export type PreparedWorkspace = {
  /** The scratch directory the agent runs in. */
  workspaceDir: string;
  /** Grounding head and tail for this turn's prompt, stating the current host facts. */
  grounding: Grounding;
  /** The host's project root when the request reported one. */
  hostRoot?: string;
};

export interface WorkspacePort {
  /**
   * Re-read the host facts from every text of the request, make sure the session's scratch workspace
   * exists with its files up to date (AGENTS.md and deny-hooks in bridge mode; rewritten only when the
   * facts changed), and render the prompt grounding.
   */
  prepare(sessionKey: string, request: TurnRequest): Promise<PreparedWorkspace>;
  /**
   * Remove the session's scratch workspace (only ever inside the workspace root) and release what it
   * holds; called once the session's agent is disposed. Nothing of it serves another session.
   */
  remove(sessionKey: string): Promise<void>;
  /**
   * A scratch directory for a one-off agent that loads no project settings and uses no local tool (a
   * search side call), belonging to no session; `release` removes it (only ever inside the root).
   */
  scratch(): Promise<{ workspaceDir: string; release: () => Promise<void> }>;
}

export type ToolCallCheck = { forward: true } | { forward: false; correction: string };

/** Checks each host tool call before it reaches the client (scratch-path detection). */
export interface ToolCallGuard {
  check(
    sessionKey: string,
    call: { toolCallId: string; toolName: string; input: Record<string, unknown> },
    context: { workspaceDir: string; hostRoot?: string },
  ): ToolCallCheck;
  /** Called once per client response, for the per-turn summary. */
  endTurn(sessionKey: string): void;
  /** Forget the session's counters. */
  forget(sessionKey: string): void;
  /** The session's counts so far (none: no checked call yet, or a guard that keeps none). */
  metrics?(sessionKey: string): { scratchPathViolations: number; scratchPathCorrections: number } | undefined;
}

/** A workspace port for tests and plan mode: a fixed directory, empty grounding. */
export const createStaticWorkspace = (
  workspaceDir: string,
  grounding: Grounding = { head: '', tail: '' },
): WorkspacePort => ({
  prepare: async () => ({ workspaceDir, grounding }),
  remove: async () => {},
  scratch: async () => ({ workspaceDir, release: async () => {} }),
});

export const allowAllToolCalls: ToolCallGuard = {
  check: () => ({ forward: true }),
  endTurn: () => {},
  forget: () => {},
};

/** What {@link PrepareImages} did to the images of a turn's messages. */
export type PreparedTurnImages = {
  messages: TurnMessage[];
  /** Images sent, and how many of them were re-encoded or scaled down. */
  sent: number;
  converted: number;
  /** Images replaced by a note to the model, and why (no image data: the log gets these). */
  problems: ReadonlyArray<{ image: string; reason: string }>;
};

/**
 * Makes the images of the messages a turn sends ready for the model (fetched, converted, bounded), each
 * image it cannot send replaced by a note that says why; never rejects for an image. `replay`: the
 * messages are a whole transcript for a fresh agent. The bridge wires `src/images/`.
 */
export type PrepareImages = (
  messages: readonly TurnMessage[],
  options: { replay: boolean; model: string; signal?: AbortSignal },
) => Promise<PreparedTurnImages>;
