/**
 * The "model" of an e2e scenario, as a small declarative description: `fake-backend-model.ts` plays it
 * as the project's fake Cursor backend, behind the real `@cursor/sdk` inside `cursor-bridge serve`.
 *
 * A scenario is one entry per user turn of the conversation (one agent run each). A turn is a list of
 * steps; every step but the last calls tools and waits for their results, the last one answers.
 * Runs that do not offer the client's shell tool (OpenCode's title request) are side requests and get
 * {@link ModelScenario.sideReply}; they never consume a turn.
 */

import type {
  ConnectErrorCode,
  FakeCursorLimit,
  FakeLimitOptions,
  FakeWebSearchSpec,
} from '../../fakes/cursor-backend/index.js';

/** How the model calls one client's shell tool. */
export type ShellTool = {
  name: string;
  /** The tool input for running `command`. */
  input(command: string): Record<string, unknown>;
};

/** What the model knows when it writes a step. */
export type ModelContext = {
  /** The scratch workspace the Cursor agent runs in (as the bridge's prompt names it). */
  workspaceDir: string;
  /** The prompt text the backend received for this run. */
  prompt: string;
  /** The results of this run's tool calls so far, in call order. */
  toolResults: Array<{ toolCallId: string; text: string; isError: boolean }>;
};

/** A string, or one computed from what the model has seen. */
export type ModelText = string | ((context: ModelContext) => string);

/**
 * A host tool call: the client's own shell tool (Bash / exec_command / bash) running a command, or any
 * tool of the client by name with a literal input (a custom tool such as Codex's `apply_patch` takes
 * `{ input: "<raw text>" }`).
 */
export type ModelToolCall =
  | { shell: ModelText }
  | { tool: string; input: Record<string, unknown> | ((context: ModelContext) => Record<string, unknown>) };

/**
 * The backend ends the run's stream with a Connect error. The SDK reports `[<code>] <message>` as the
 * run's error at once for `permission_denied` and `unauthenticated` (the default here); after any other
 * code it re-sends the same run request (after ~2.7 s, up to three times, ~16 s in all), and the turn is
 * played again from its first step.
 */
export type ModelFailure = {
  message: string;
  code?: ConnectErrorCode;
  /** Fail only the first this many attempts of the turn; later SDK retries play on. Default: all. */
  attempts?: number;
};

export type ModelStep = {
  /**
   * The model is silent before the step until the bridge has sent the client a keepalive (as the
   * recording proxy saw it), so a test can assert keepalives without racing the bridge's interval.
   */
  silentUntilKeepalive?: true;
  /** A thinking block, streamed before the step's text. */
  thinking?: string;
  /**
   * Hosted web searches the model runs on "Cursor's servers" before the step's text (the fake's
   * `RunContext.webSearch`: approval query, the SDK's answer, the search and its result).
   */
  webSearches?: FakeWebSearchSpec[];
  text?: ModelText;
  /** Host tool calls of this step, emitted as one batch. Only the last step may have none. */
  toolCalls?: ModelToolCall[];
  /** The run fails after the step's text (a mid-stream upstream error); ends the turn. */
  fail?: ModelFailure;
  /**
   * After the step's text, the backend refuses the run as longer than the model's context window, as
   * Cursor does (`RunContext.failConversationTooLong`: final, the SDK does not re-send it); ends the turn.
   */
  conversationTooLong?: true;
  /**
   * After the step's text, the backend refuses the run with one of Cursor's rate or usage limits, as
   * Cursor does (`RunContext.failLimit`: `error` is the `ErrorDetails.Error`); ends the turn.
   */
  limit?: { error: FakeCursorLimit } & FakeLimitOptions;
};

export type ModelTurn = { steps: ModelStep[] };

export type ModelScenario = {
  turns: ModelTurn[];
  /** The answer to side requests. Default `E2E side answer`. */
  sideReply?: string;
  /**
   * How the model plays a search side call (a run whose prompt is a client's web search request, such
   * as Claude Code's "Perform a web search for the query: …"): the searches it makes, then its answer.
   * Without it such a run gets {@link sideReply}, as any side request.
   */
  searchSideCall?: { searches: FakeWebSearchSpec[]; answer: ModelText };
  /**
   * `reject`: the backend answers the API-key exchange and `/v1/models` with 401; `no-key`: the bridge
   * runs without `CURSOR_API_KEY` (and has none in its config). Default `ok`.
   */
  cursorAuth?: 'ok' | 'reject' | 'no-key';
};

/** Resolve a {@link ModelText}. */
export const resolveModelText = (text: ModelText, context: ModelContext): string =>
  typeof text === 'string' ? text : text(context);

/** The text of every tool result of the turn so far, one per line; for answers that quote them. */
export const quoteToolResults = (context: ModelContext): string =>
  context.toolResults.map((result) => result.text).join('\n');
