/**
 * A run's host tool calls, from the SDK's `execute` to the client's result: the one owner of a call's id.
 *
 * {@link RunToolCalls} builds the run's SDK custom tools from what the session's `custom-user-tools` server
 * lists. Each `execute` gets its id once (the SDK's `context.toolCallId`, else the started call it
 * matches, else a fresh `mcp-call-<uuid>`), is checked (a scratch-path correction answers the model at
 * once: the call is never parked nor announced), and otherwise becomes a `tools/call` on that server, which
 * parks it in the session's broker. The parked call comes back here, is announced as a `tool-call` event in
 * the model's order, and the batch ends (`tool-batch-end`) as soon as it is known to be complete. The
 * client's results settle the parked calls through the broker; cancellation and the run's end settle the
 * rest.
 *
 * Its record keeping — which record an id belongs to, the model's order, when a batch is complete — is a
 * {@link ToolCallLedger} (`src/upstream/tool-call-ledger.ts`); this adds the SDK's tools, the broker and
 * the timers.
 *
 * Batch end (the SDK's own signals instead of a fixed settle window): the batch is checked on every park,
 * correction and listing, and ends the moment the ledger finds it complete: the SDK executes calls apart
 * from delivering updates, so the listing may reach the run before or after the calls park (the order
 * recorded from Cursor's server has it after the batch's execs). Only a batch whose size was never listed
 * waits for a short quiet period.
 */

import { randomUUID } from 'node:crypto';
import type { SDKCustomTool, SDKJsonValue } from '@cursor/sdk';
import type { InProcessClient, MirroredTool, ParkedCall } from '../../../../mcp/index.js';
import { createErrorResult, type ToolCallResult } from '../../../../mcp/index.js';
import type { TurnUserPart } from '../../../turn/turn-request.js';
import { ToolCallLedger } from '../../tool-call-ledger.js';
import type { UpstreamEvent, UpstreamToolCallCheck, UpstreamToolResult } from '../../upstream-port.js';

/** The session's parked-call broker as a run sees it. */
export interface ParkedCallSettler {
  /** Settle a parked call with the client's result; false when the id is not pending. */
  resolve(toolCallId: string, result: ToolCallResult): boolean;
  /** Settle every pending call with an error result naming the reason. */
  settleAll(reason: string): void;
}

/** What a run's tool calls tell the run: its `tool-call` / `tool-batch-end` events, and waiting changes. */
export type RunToolCallSink = {
  /** The run's host tool calls and batch ends, in order. */
  emit(event: Extract<UpstreamEvent, { type: 'tool-call' | 'tool-batch-end' }>): void;
  /** Whether the run waits on the client may have changed (a call parked or was settled). */
  onWaitingChanged(): void;
};

export type RunToolCallsOptions = RunToolCallSink & {
  broker: ParkedCallSettler;
  /** The session's link to its `custom-user-tools` server and what that server lists for this run. */
  server?: { link: Pick<InProcessClient, 'callTool'>; tools: readonly MirroredTool[] };
  /** Checks each executed call before it is parked (the scratch-path guard). Default: every call parks. */
  check?: (call: {
    toolCallId: string;
    toolName: string;
    input: Record<string, unknown>;
  }) => UpstreamToolCallCheck;
  /** Quiet period that ends a batch whose size was never listed, and bounds holding a call for an earlier one. */
  batchQuietMs: number;
};

/**
 * Client tool-result parts → the MCP result the SDK accepts from `execute`. (The tool host's
 * `toToolCallResult` narrows what an MCP peer sent; this converts what the client sent.)
 */
export const convertTurnPartsToToolCallResult = (
  content: readonly TurnUserPart[],
  isError: boolean,
): ToolCallResult => ({
  content: content.map((part) =>
    part.type === 'text'
      ? { type: 'text' as const, text: part.text }
      : part.source.kind === 'base64'
        ? { type: 'image' as const, data: part.source.data, mimeType: part.source.mediaType }
        : { type: 'text' as const, text: `[image: ${part.source.url}]` },
  ),
  ...(isError ? { isError: true } : {}),
});

const ignore = (): void => undefined;

/** One run's host tool calls (see the file's header). */
export class RunToolCalls {
  /** Without the sink: a stopped run's calls must not keep the run itself reachable (see {@link stop}). */
  readonly #options: Omit<RunToolCallsOptions, keyof RunToolCallSink>;
  readonly #ledger = new ToolCallLedger();
  #sink: RunToolCallSink;
  #stopped = false;
  /** Ends a batch whose size was never listed once it stays quiet. */
  #batchTimer: NodeJS.Timeout | undefined;
  /** Bounds how long a parked call waits for an earlier call of its batch (see {@link parked}). */
  #holdTimer: NodeJS.Timeout | undefined;

  constructor(options: RunToolCallsOptions) {
    const { emit, onWaitingChanged, ...rest } = options;
    this.#options = rest;
    this.#sink = { emit, onWaitingChanged };
  }

  /**
   * The run's SDK custom tools: exactly what the session's `custom-user-tools` server lists, each
   * `execute` a call on that server that parks until the client's result settles it.
   */
  customTools(): Record<string, SDKCustomTool> {
    const server = this.#options.server;
    const tools: Record<string, SDKCustomTool> = {};
    if (server === undefined) return tools;
    for (const tool of server.tools) {
      tools[tool.name] = {
        ...(tool.description === undefined ? {} : { description: tool.description }),
        inputSchema: tool.inputSchema as Record<string, SDKJsonValue>,
        ...(tool.annotations === undefined ? {} : { annotations: tool.annotations }),
        execute: async (args, context) => {
          const result = await this.#execute(server.link, tool.name, args, context.toolCallId);
          return {
            content: result.content,
            ...(result.isError === true ? { isError: true } : {}),
            // It crossed MCP as JSON, so its values are JSON values.
            ...(result.structuredContent === undefined
              ? {}
              : { structuredContent: result.structuredContent as Record<string, SDKJsonValue> }),
          };
        },
      };
    }
    return tools;
  }

  /** A `tool-call-started` update for a host tool. */
  started(sdkCallId: string, toolName: string, args: unknown): void {
    this.#ledger.started(sdkCallId, toolName, args);
  }

  /**
   * A `tool-requests-listed` update: the current batch has `callCount` calls. When its calls have parked
   * already, the batch ends now (not after the quiet period a batch without a listing waits).
   */
  listed(callCount: number): void {
    this.#ledger.listed(callCount);
    if (!this.#stopped) this.#checkBatch();
  }

  /**
   * The id for an `execute` that came without `context.toolCallId`: the started call it matches (the
   * SDK reports calls in the order it executes them), or undefined.
   */
  claim(toolName: string, args: unknown): string | undefined {
    return this.#ledger.claim(toolName, args);
  }

  /**
   * A call parked in the session's broker: announce it once (an SDK retry parks the same id again), in the
   * order the model made the batch's calls — one that parks before an earlier call waits for it, at most
   * `batchQuietMs`.
   */
  parked(call: ParkedCall): void {
    if (this.#stopped || this.#ledger.park(call) === undefined) return;
    this.#announce(false);
    this.#sink.onWaitingChanged();
    this.#checkBatch();
  }

  /** Ids of the parked calls still waiting for the client, in park order. */
  pending(): string[] {
    return this.#ledger.pending();
  }

  /** Whether the run waits on the client for a tool result. */
  get waiting(): boolean {
    return this.#ledger.pending().length > 0;
  }

  /**
   * Settle parked calls with the client's results. Unknown ids are returned; an id settled before is
   * ignored.
   */
  resolve(results: readonly UpstreamToolResult[]): { unknown: string[] } {
    const unknown: string[] = [];
    for (const result of results) {
      const resolution = this.#ledger.resolve(result.toolCallId);
      if (resolution === 'unknown') unknown.push(result.toolCallId);
      if (resolution !== 'resolved') continue;
      this.#options.broker.resolve(
        result.toolCallId,
        convertTurnPartsToToolCallResult(result.content, result.isError),
      );
    }
    this.#sink.onWaitingChanged();
    return { unknown };
  }

  /** Settle every parked call without a result (`reason` reaches the model). */
  abandon(reason: string): void {
    this.#options.broker.settleAll(reason);
    this.#ledger.abandonAll();
  }

  /**
   * The run is over: settle what is parked, stop the timers, and let go of the run (the session's tool host
   * keeps its last run's calls until the next run begins, and a finished run's SDK `Run` holds the run's
   * whole request context).
   */
  stop(reason: string): void {
    this.#stopped = true;
    clearTimeout(this.#batchTimer);
    clearTimeout(this.#holdTimer);
    this.abandon(reason);
    this.#sink = { emit: ignore, onWaitingChanged: ignore };
  }

  async #execute(
    link: Pick<InProcessClient, 'callTool'>,
    toolName: string,
    args: Record<string, unknown>,
    sdkToolCallId: string | undefined,
  ): Promise<ToolCallResult> {
    // The id is assigned here, once: the SDK's, else the started call's, else a fresh one.
    const toolCallId = sdkToolCallId ?? this.claim(toolName, args) ?? `mcp-call-${randomUUID()}`;
    const corrected = this.#ledger.correctionFor(toolCallId);
    if (corrected !== undefined) return createErrorResult(corrected);
    const check = this.#options.check?.({ toolCallId, toolName, input: args });
    if (check !== undefined && !check.forward) {
      // Answered at once: the model reads the correction, the client never sees the call.
      const correction = this.#ledger.correct({ toolCallId, toolName, args }, check.correction);
      if (!this.#stopped) {
        this.#announce(false);
        this.#checkBatch();
      }
      return createErrorResult(correction);
    }
    return link.callTool(toolName, args, toolCallId);
  }

  #announce(all: boolean): void {
    for (const call of this.#ledger.takeAnnounceable(all)) {
      this.#sink.emit({
        type: 'tool-call',
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        input: call.args as Record<string, unknown>,
        parkedAt: call.parkedAt,
      });
    }
    clearTimeout(this.#holdTimer);
    this.#holdTimer = undefined;
    if (this.#ledger.holding) {
      this.#holdTimer = setTimeout(() => {
        this.#holdTimer = undefined;
        if (this.#stopped) return;
        this.#announce(true);
        this.#checkBatch();
      }, this.#options.batchQuietMs);
      this.#holdTimer.unref();
    }
  }

  #checkBatch(): void {
    clearTimeout(this.#batchTimer);
    this.#batchTimer = undefined;
    const status = this.#ledger.batchStatus;
    if (status === 'open') return;
    if (status === 'complete') return this.#endBatch();
    this.#batchTimer = setTimeout(() => {
      this.#batchTimer = undefined;
      if (!this.#stopped && this.#ledger.batchStatus !== 'open') this.#endBatch();
    }, this.#options.batchQuietMs);
    this.#batchTimer.unref();
  }

  #endBatch(): void {
    this.#announce(true);
    this.#ledger.endBatch();
    this.#sink.emit({ type: 'tool-batch-end' });
  }
}
