/**
 * The scenario API of the fake Cursor backend: a {@link Scenario} plays the model for each
 * `AgentRunRequest` through a {@link RunContext}.
 *
 * Wire order produced by the actions (what the SDK turns into `onDelta` updates):
 * - the first output of a step emits `stepStarted{stepId}` (step ids count from 1 per run attempt);
 * - `toolCalls` emits, per call, `toolCallStarted` followed by its `execServerMessage{mcpArgs}`, then one
 *   `toolRequestsListed{callCount}` after the batch's last exec (Cursor's order as far as it is known; see
 *   {@link ToolBatchOptions.listed} for the others), waits for every `execClientMessage{mcpResult}`, emits
 *   `toolCallCompleted` per call in call order and `stepCompleted` — the next output starts a new step;
 * - `exec` sends one bare `execServerMessage{<kind>}` (a built-in tool, `requestContextArgs`, …) and
 *   waits for the SDK's `execClientMessage`; it emits no update and does not touch the step;
 * - `turnEnded` closes the open step (`stepCompleted`) before `turnEnded`;
 * - `end` (also implied when the scenario returns) sends `turnEnded` (without usage) if the scenario did
 *   not, writes the conversation checkpoint (unless disabled) and closes the stream with an OK trailer.
 *   The SDK treats a stream that closes OK before `turnEnded` as broken and retries the run.
 */

import type { FakeReceivedImage } from './received-images.js';
import type { ConnectErrorCode } from './connect-envelope.js';
import type { JsonObject } from './client-message.js';

/** One custom tool as the SDK offered it in `AgentRunRequest.mcpTools`. */
export type FakeOfferedTool = {
  /** `custom-user-tools-<toolName>` for SDK custom tools. */
  name: string;
  toolName: string;
  providerIdentifier: string;
  description: string;
  inputSchema: unknown;
};

/** A decoded `AgentRunRequest` (one per RunSSE attempt, including SDK retries). */
export type FakeRunRequest = {
  /** 0-based position in the backend's `runRequests`. */
  index: number;
  /** The Bidi request id of the RunSSE stream. */
  requestId: string;
  /**
   * The run's id (`AgentRunRequest.runId`): the first attempt's request id, kept by the SDK's re-sends of
   * the same run (after a transport fault, a retryable error or its stall detector), so one run is one id
   * however many requests it took.
   */
  runId: string;
  conversationId: string;
  /** The `ConversationAction` case: `userMessageAction`, `resumeAction`, … */
  actionKind: string;
  /** The user message text (empty for non-message actions). */
  text: string;
  /**
   * The user message's images (`selectedContext.selectedImages`), as received; their pixel fields are set
   * before the scenario plays the request.
   */
  images: FakeReceivedImage[];
  requestedModel?: { modelId: string; parameters: Array<{ id: string; value: string }> };
  mcpTools: FakeOfferedTool[];
  customSystemPrompt?: string;
  /** proto3 JSON of `ConversationStateStructure` the SDK sent (its latest checkpoint). */
  conversationState: JsonObject;
  /** proto3 JSON of the whole `AgentRunRequest`. */
  json: JsonObject;
};

/** A tool call the fake model makes. */
export type FakeToolCallSpec = {
  toolName: string;
  args?: Record<string, unknown>;
  /** `callId` of toolCallStarted/Completed. Default: `toolu_fake_<n>`. */
  callId?: string;
  /** `McpArgs.toolCallId` (what `execute` gets as `context.toolCallId`). Default: the callId. */
  toolCallId?: string;
  /** Default: `model-call-<n>`. */
  modelCallId?: string;
  /** `McpArgs.providerIdentifier`. Default `custom-user-tools`. */
  providerIdentifier?: string;
};

/** Content item of an MCP tool result. Images carry base64 data. */
export type FakeToolContent =
  { type: 'text'; text: string } | { type: 'image'; data: string; mimeType?: string };

/** What the SDK answered for one tool call (decoded `McpResult`). */
export type FakeToolResult = { callId: string; toolCallId: string } & (
  | { status: 'success'; content: FakeToolContent[]; isError: boolean; structuredContent?: JsonObject }
  | { status: 'error'; error: string }
  | { status: 'rejected'; reason: string }
  | { status: 'other'; json: JsonObject }
);

export type ToolBatchOptions = {
  /**
   * Where `toolRequestsListed{callCount}` (`InteractionUpdate` field 27) goes.
   *
   * - `after-exec` (default): each call's `toolCallStarted` is followed by its `execServerMessage`, and
   *   the listing comes after the batch's last exec — the count of the calls the model's generation made,
   *   known once it ended. @cursor/sdk 1.0.32 only maps the update (it neither sends nor orders it); this
   *   order is the live one recorded by a client of Cursor's raw agent protocol
   *   (nkoynov/cursor-opencode-provider, `test/tool-call-order.test.ts`: "Live order": the listing follows
   *   the step's execs). Not verified against Cursor's server from here.
   * - `after-started`: every `toolCallStarted`, then the listing, then every exec.
   * - `before-started`: the listing, then every `toolCallStarted`, then every exec.
   * - `none`: as `after-exec` without a listing (a backend that never announces the count).
   */
  listed?: 'after-exec' | 'after-started' | 'before-started' | 'none';
  /**
   * Holds the listing until this settles (what comes after it in the chosen order waits too): a
   * generation whose end reaches the SDK later than its calls' execs.
   */
  listedAfter?: Promise<unknown>;
};

/** One search result as Cursor's hosted search reports it (`agent.v1.WebSearchReference`). */
export type FakeWebReference = { title: string; url: string; chunk: string };

/**
 * A hosted web search the fake model runs on "Cursor's servers" (see {@link RunContext.webSearch}).
 * `outcome` is what the search returns when the SDK approves it: references, an error (the search
 * failed), or a rejection (e.g. a team that turned web search off).
 */
export type FakeWebSearchSpec = {
  query: string;
  outcome: { references: FakeWebReference[] } | { error: string } | { rejected: string };
  /** `callId` of toolCallStarted/Completed. Default: `ws_fake_<n>`. */
  callId?: string;
  /** `WebSearchArgs.toolCallId`. Default: the callId. */
  toolCallId?: string;
  /** Ask the SDK to approve first (`interactionQuery.webSearchRequestQuery`). Default true. */
  askApproval?: boolean;
};

/** A hosted web fetch (see {@link RunContext.webFetch}). */
export type FakeWebFetchSpec = {
  url: string;
  outcome: { markdown: string } | { error: string } | { rejected: string };
  callId?: string;
  toolCallId?: string;
  askApproval?: boolean;
};

/**
 * How a hosted search or fetch went: the SDK's answer to the approval query (`approved` /
 * `rejected` with its reason; `not-asked` without a query) and the result case the fake reported.
 */
export type FakeHostedOutcome = {
  approval: { status: 'approved' } | { status: 'rejected'; reason: string } | { status: 'not-asked' };
  result: 'success' | 'error' | 'rejected';
  callId: string;
};

/** Per-turn usage reported by `turnEnded`. */
export type FakeUsage = {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  reasoningTokens?: number;
};

/** A previous turn, read back from the SDK's checkpoint (see {@link RunContext.history}). */
export type FakeHistoryTurn = {
  user: string;
  steps: Array<
    | { type: 'text'; text: string }
    | { type: 'thinking'; text: string }
    | { type: 'tool-call'; toolName: string; args: JsonObject; result: JsonObject | undefined }
    /** A hosted web search or fetch (`args` / `result` as proto3 JSON of its `WebSearch…` / `WebFetch…`). */
    | { type: 'hosted'; kind: 'webSearch' | 'webFetch'; args: JsonObject; result: JsonObject }
  >;
};

/** Extra parts of a failing trailer (see {@link RunContext.fail}). */
export type FakeFailOptions = {
  /**
   * Cursor's `aiserver.v1.ErrorDetails` as proto3 JSON, sent as a Connect error detail, e.g.
   * `{error: "ERROR_CONVERSATION_TOO_LONG", details: {title, detail, isRetryable: false}}`. The SDK's
   * agent loop reads it (`findDetails`): `details.isRetryable: false` ends the run without a retry, and the
   * run's error message becomes `"<title> <detail>"` (without the `[code]` prefix).
   */
  errorDetails?: JsonObject;
  /** Trailer metadata (`ConnectError.metadata`), e.g. `x-cursor-inference-request-error-type`. */
  metadata?: Readonly<Record<string, readonly string[]>>;
};

/**
 * Cursor's context-window refusal as the fake sends it: Connect code `code` (default
 * `resource_exhausted`), `ErrorDetails{error: CONVERSATION_TOO_LONG (43), details: {title, detail,
 * isRetryable: false}}` and the trailer `x-cursor-inference-request-error-type: CONVERSATION_TOO_LONG`.
 * The enum value and the retry rules are the SDK's (1.0.32); the code and texts Cursor's server really
 * uses are not verified (the defaults follow the Cursor app's "Your conversation is too long" message).
 */
export type FakeConversationTooLongOptions = {
  title?: string;
  detail?: string;
  code?: ConnectErrorCode;
};

/**
 * Cursor's rate and usage limits (`aiserver.v1.ErrorDetails.Error`). Rate limits pass with time; usage
 * limits (plan quota, spend limit, pricing, a blocked account) need the user to act.
 */
export type FakeCursorLimit =
  | 'ERROR_RATE_LIMITED'
  | 'ERROR_RATE_LIMITED_CHANGEABLE'
  | 'ERROR_API_KEY_RATE_LIMIT'
  | 'ERROR_GENERIC_RATE_LIMIT_EXCEEDED'
  | 'ERROR_FREE_USER_RATE_LIMIT_EXCEEDED'
  | 'ERROR_PRO_USER_RATE_LIMIT_EXCEEDED'
  | 'ERROR_FREE_USER_USAGE_LIMIT'
  | 'ERROR_PRO_USER_USAGE_LIMIT'
  | 'ERROR_USAGE_PRICING_REQUIRED'
  | 'ERROR_USAGE_PRICING_REQUIRED_CHANGEABLE'
  | 'ERROR_SUSPICIOUS_USAGE_BLOCKED';

/**
 * A limit as the fake sends it (see {@link RunContext.failLimit}). The title and detail default to the
 * limit's own in `limit-texts.ts` (Cursor's where its users reported them).
 */
export type FakeLimitOptions = {
  title?: string;
  detail?: string;
  /** Appends "Please try again in N seconds." to the detail: Cursor saying when. */
  retryAfterSeconds?: number;
  /**
   * The Connect error's own message. Default `Error`: what Cursor's server puts there, the text being in
   * the details (seen on a `resource_exhausted` "High Load" refusal).
   */
  message?: string;
  /** `details.isRetryable`. Default: true for a rate limit, false for a usage limit. */
  isRetryable?: boolean;
  /** Default `resource_exhausted` (`permission_denied` for SUSPICIOUS_USAGE_BLOCKED). */
  code?: ConnectErrorCode;
};

/** Thrown by pending actions when the stream closes first (client abort, cancel, stall retry). */
export class FakeStreamClosedError extends Error {
  override readonly name = 'FakeStreamClosedError';
}

/**
 * A server-initiated exec the SDK executes locally: the `ExecServerMessage` oneof case, named by its
 * proto3 JSON key. The SDK answers each with the matching `…Result` case of `ExecClientMessage`
 * (`requestContextArgs` → `requestContextResult`, `shellArgs` → `shellResult`, `readArgs` →
 * `readResult`, …). Any other case of the oneof can be given as a string.
 */
export type FakeExecKind =
  | 'requestContextArgs'
  | 'shellArgs'
  | 'shellStreamArgs'
  | 'readArgs'
  | 'writeArgs'
  | 'deleteArgs'
  | 'lsArgs'
  | 'grepArgs'
  | (string & {});

/** Thrown by {@link RunContext.exec} when the SDK closes the exec without a result (`throw` / `streamClose`). */
export class FakeExecAbortedError extends Error {
  override readonly name = 'FakeExecAbortedError';
}

/** The fake model's handle on one run attempt. */
export interface RunContext {
  readonly request: FakeRunRequest;
  /** Prompt text of the user message (same as `request.text`). */
  readonly prompt: string;
  /** Names (`toolName`) of the custom tools offered. */
  readonly toolNames: readonly string[];
  /** Aborted when the stream closes (client abort, `end`, `fail`). */
  readonly signal: AbortSignal;
  /** Whether the stream is still open. */
  readonly open: boolean;
  /**
   * Bytes this run wrote that the socket has not taken yet: stays near 0 while the SDK reads the stream,
   * grows (past the kernel's socket buffers) when it stops reading.
   */
  readonly writeBacklog: number;
  thinking(text: string): void;
  thinkingCompleted(durationMs?: number): void;
  text(text: string): void;
  /** One custom tool call; resolves with the SDK's answer (a one-call batch). */
  toolCall(call: FakeToolCallSpec, options?: ToolBatchOptions): Promise<FakeToolResult>;
  /** Several calls in one step; results in call order. */
  toolCalls(calls: readonly FakeToolCallSpec[], options?: ToolBatchOptions): Promise<FakeToolResult[]>;
  /**
   * Sends `execServerMessage{id, execId, <kind>: args}` (proto3 JSON, checked against the SDK's
   * registry) and resolves with the SDK's `execClientMessage` as proto3 JSON: the `…Result` case plus
   * `id`, `localExecutionTimeMs` and `hookAdditionalContexts` when set (1.0.32 does not echo `execId`).
   * Resolves on the first answer: a streaming exec (`shellStreamArgs`) that sends several
   * `execClientMessage`s is only read up to its first one. Sends nothing else (no
   * tool-call updates, no step). Rejects with {@link FakeExecAbortedError} when the SDK answers with an
   * exec control `throw` / `streamClose` instead, and {@link FakeStreamClosedError} when the stream
   * closes first.
   */
  exec(kind: FakeExecKind, args: JsonObject): Promise<JsonObject>;
  /**
   * Plays Cursor's hosted web search, in the order the SDK's protocol defines it: the approval query
   * (`interactionQuery{id, webSearchRequestQuery{args{searchTerm, toolCallId}}}`), the SDK's
   * `interactionResponse` (1.0.32 approves every search of a local run), then `toolCallStarted` and
   * `toolCallCompleted` with `toolCall.webSearchToolCall{args, result}` — `success{references}`,
   * `error{error}` or `rejected{reason}` (a rejection by the SDK becomes `rejected` with its reason).
   * The call is one step of its own and is written into the conversation checkpoint like every step.
   * @cursor/sdk maps neither update to `onDelta` nor to `run.stream()`.
   */
  webSearch(spec: FakeWebSearchSpec): Promise<FakeHostedOutcome>;
  /** The same for a hosted fetch (`webFetchRequestQuery`, `webFetchToolCall{args{url}, result}`). */
  webFetch(spec: FakeWebFetchSpec): Promise<FakeHostedOutcome>;
  /** Closes the open step, then reports the turn's usage. */
  turnEnded(usage?: FakeUsage): void;
  /**
   * Ends the stream with a Connect error trailer (default code `internal`). With the SDK's default
   * `enableAgentRetries`, only `unauthenticated` / `permission_denied` end the run at once (`status: ERROR`
   * in ≈0.3–1 s); other codes make the SDK re-send the run request 3 more times (the scenario plays
   * again each time) and report ERROR after ≈16 s. With `local.enableAgentRetries: false` every code
   * ends the run at once.
   */
  fail(message: string, code?: ConnectErrorCode, options?: FakeFailOptions): void;
  /**
   * Ends the stream the way Cursor refuses a conversation longer than the model's context window (see
   * {@link FakeConversationTooLongOptions}). The SDK does not retry it (`isRetryable: false`) and reports
   * `status: ERROR`, `wait()` → `{status: "error", error: {message: "<title> <detail>"}}`: the SDK joins the
   * details' title and detail and drops the Connect code and the `CONVERSATION_TOO_LONG` enum, so the text
   * is all a bridge sees.
   */
  failConversationTooLong(options?: FakeConversationTooLongOptions): void;
  /**
   * Ends the stream with one of Cursor's rate or usage limits: Connect code, `ErrorDetails{error: limit,
   * details: {title, detail, isRetryable}}` (the Connect message is `Error`, as Cursor's) and the trailer
   * `x-cursor-inference-request-error-type: <limit without ERROR_>`. What the SDK (1.0.32) makes of it:
   * every limit but ERROR_API_KEY_RATE_LIMIT and ERROR_SUSPICIOUS_USAGE_BLOCKED ends the run at once
   * (Cursor's client treats them as "upgrade" / "payment" actions), as do those two with `isRetryable:
   * false`; the run's error is then `"<title> <detail>"`. Those two with `isRetryable: true` are re-sent
   * 3 more times (the scenario plays again each time, about 16 s in all) and end as `"[<code>] Error"`:
   * only the Connect code is left. The enum, `isRetryable` and the trailer never reach the run's error.
   */
  failLimit(limit: FakeCursorLimit, options?: FakeLimitOptions): void;
  /** Destroys the socket without a trailer (a network drop). */
  disconnect(): void;
  /** Sends nothing, heartbeats included, for `ms` (or until the stream closes). */
  stall(ms: number): Promise<void>;
  /** Sends `turnEnded` if still due, writes the conversation checkpoint (unless disabled), ends the stream OK. Idempotent. */
  end(): Promise<void>;
  /** Previous turns, fetched from the SDK's blob store through KV `getBlob` using `conversationState`. */
  history(): Promise<FakeHistoryTurn[]>;
  /**
   * Write a conversation checkpoint of the turn so far (its user message and finished steps), as a server
   * that checkpoints mid-turn would; the checkpoint at the run's end replaces it.
   */
  checkpoint(): Promise<void>;
  /** Escape hatch: sends one `AgentServerMessage` given as proto3 JSON. */
  sendRaw(message: JsonObject): void;
}

/** Plays the model for one run attempt. Returning ends the stream (`end()`); throwing fails it. */
export type Scenario = (run: RunContext) => Promise<void> | void;

export type { ConnectErrorCode };
