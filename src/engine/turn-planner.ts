/**
 * Decides how a request continues a conversation's agent: resume the parked run with the client's tool
 * results, send a slim follow-up to an idle agent that holds the history, or replay the whole transcript
 * to a fresh agent. Anything that does not line up exactly is replayed — never forced.
 */

import type { TurnMessage } from '../turn/turn-request.js';
import type { UpstreamToolResult } from '../upstream/upstream-port.js';
import { startsWith } from './transcript-digest.js';
import type { TrailingTurn } from './turn-classifier.js';

export type Plan =
  | { kind: 'resume'; results: UpstreamToolResult[] }
  /** `held`: the transcript the agent holds once any parked run is retired; the new messages follow it. */
  | { kind: 'slim'; newMessages: TurnMessage[]; held: readonly string[] }
  | { kind: 'replay'; reason: string };

export type AgentView = {
  /** The agent exists and holds history. */
  hasAgent: boolean;
  /** Ids of tool calls the live run has parked, awaiting results. */
  parkedToolCallIds: readonly string[];
  /** Digests of the transcript the agent holds, when known exactly. */
  committed: readonly string[] | undefined;
  /** The last turn's stream died mid-turn; the agent holds a partial answer the client may not show. */
  interrupted: boolean;
  /**
   * The request offers a different set of tools than the parked run was started with (Claude Code's
   * ToolSearch loads deferred tools this way). The SDK fixes a run's tools at `send`, so such a run
   * cannot call the new ones.
   */
  toolsChanged: boolean;
  /** Digests of the transcript the agent held before the parked run started, when known exactly. */
  heldBeforeRun: readonly string[] | undefined;
  /**
   * The agent was created with other hosted web tools than the request offers (Codex turned live web
   * search on or off). The SDK binds them when it creates an agent, so only a new agent has the new set;
   * a parked run still finishes its turn with the set it had.
   */
  webToolsChanged?: boolean;
};

export const planTurn = (
  agent: AgentView,
  messages: readonly TurnMessage[],
  digests: readonly string[],
  trailing: TrailingTurn,
): Plan => {
  if (!agent.hasAgent) return { kind: 'replay', reason: 'no agent yet' };
  const committed = agent.committed;
  if (committed === undefined) return { kind: 'replay', reason: 'agent history unknown' };
  if (!startsWith(digests, committed)) return { kind: 'replay', reason: 'transcript diverged' };
  const suffix = messages.slice(committed.length);

  if (agent.parkedToolCallIds.length > 0) {
    const results = suffix.filter((message) => message.role === 'tool');
    const rest = suffix.filter((message) => message.role !== 'tool');
    const ids = new Set(results.map((message) => message.toolCallId));
    const exact =
      ids.size === agent.parkedToolCallIds.length && agent.parkedToolCallIds.every((id) => ids.has(id));
    if (!exact) return { kind: 'replay', reason: 'tool results do not match the parked calls' };
    // Only exactly the parked results with no steering resume the run; a rejected result with
    // replacement text, new user text or an interrupt retire it and replay.
    if (trailing.kind !== 'tool-results' || rest.some((message) => message.role !== 'user')) {
      return { kind: 'replay', reason: `trailing turn is ${trailing.kind}` };
    }
    if (agent.toolsChanged) {
      // The re-sent turn would go to the agent that holds the old web tools: only a new one has the new set.
      if (agent.webToolsChanged === true) return { kind: 'replay', reason: 'the hosted web tools changed' };
      // Retire the parked run and re-send its turn (request, calls and their results) with the new tools
      // to the agent that still holds everything before it; nothing is executed again.
      const held = agent.heldBeforeRun;
      if (held === undefined || !startsWith(digests, held)) {
        return { kind: 'replay', reason: 'the tool set changed while tool calls were parked' };
      }
      return { kind: 'slim', newMessages: messages.slice(held.length), held };
    }
    return {
      kind: 'resume',
      results: results.flatMap((message) =>
        message.role === 'tool'
          ? [{ toolCallId: message.toolCallId, content: message.content, isError: message.isError }]
          : [],
      ),
    };
  }

  if (agent.webToolsChanged === true) return { kind: 'replay', reason: 'the hosted web tools changed' };
  if (suffix.length === 1 && suffix[0]?.role === 'user')
    return { kind: 'slim', newMessages: suffix, held: committed };
  // The last run was cut short (a cancelled run checkpoints nothing): the agent holds `committed`, and
  // the cut turn — its request, a partial answer, the calls a resumed run had made and their results —
  // is new to it, sent slim ahead of the new user text.
  if (
    agent.interrupted &&
    suffix.at(-1)?.role === 'user' &&
    suffix.every((message) => message.role !== 'system')
  ) {
    return { kind: 'slim', newMessages: suffix, held: committed };
  }
  return {
    kind: 'replay',
    reason: suffix.length === 0 ? 'nothing new to send' : 'more than one new message',
  };
};
