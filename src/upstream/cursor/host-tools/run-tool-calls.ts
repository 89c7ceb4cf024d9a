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
 * {@link ToolCallLedger} is its record keeping, one record per call whatever ids it is known by. Two id
 * spaces meet there: the SDK's `tool-call-started` update carries `callId` (the record's `sdkCallId`);
 * `execute`, and so the parked MCP call, carries `McpArgs.toolCallId` (the record's `toolCallId`), a
 * different wire field that the backend may leave empty. One private `#match` is the one place that pairs
 * them: by id, else by tool and arguments, else by tool, in the order the calls started (the SDK executes
 * calls in that order).
 *
 * Batch rule (the SDK's own signals instead of a fixed settle window): `tool-requests-listed` announces
 * `callCount`; each call has `tool-call-started` and then parks (or is corrected). A batch is complete when
 * every call started in it has parked or been corrected, and at least the listed number has. It is checked
 * on every park, correction and listing, and ends the moment it is complete: the SDK executes calls apart
 * from delivering updates, so the listing may reach the run before or after the calls park (the order
 * recorded from Cursor's server has it after the batch's execs). Only a batch whose size was never listed
 * waits for a short quiet period.
 *
 * Bound: one record per tool call of the run; the records live and die with their run.
 */

import { randomUUID } from 'node:crypto';
import type { SDKCustomTool, SDKJsonValue } from '@cursor/sdk';
import type { InProcessClient, MirroredTool, ParkedCall } from '../../../../mcp/index.js';
import { createErrorResult, type ToolCallResult } from '../../../../mcp/index.js';
import type { TurnUserPart } from '../../../turn/turn-request.js';
import type { UpstreamEvent, UpstreamToolCallCheck, UpstreamToolResult } from '../../upstream-port.js';

/**
 * `started`: announced by the SDK, not yet executed (a `toolCallId` set here was claimed for an
 * `execute` without one). `corrected`: answered with a correction when it executed, never parked.
 * `parked`: announced to the engine, waiting for the client's result. `resolved`: the client's result
 * went to the tool host. `abandoned`: settled without a result (the run was cancelled or ended).
 */
export type ToolCallState = 'started' | 'corrected' | 'parked' | 'resolved' | 'abandoned';

export type ToolCallRecord = {
  /** The started update's `callId`; undefined when the call parked without a started update. */
  readonly sdkCallId: string | undefined;
  /** The id the call parks and is announced under; undefined until it parks or is claimed. */
  readonly toolCallId: string | undefined;
  readonly toolName: string;
  /** The started update's arguments, replaced by the executed ones when the call parks. */
  readonly args: unknown;
  readonly state: ToolCallState;
};

/** `open`: calls are still on their way; `complete`: the listed batch has parked; `unlisted`: every known call parked but the SDK never listed how many. */
export type ToolBatchStatus = 'open' | 'complete' | 'unlisted';

/** What {@link ToolCallLedger.resolve} found: forward the result, ignore it (settled before), or report it. */
export type ToolCallResolution = 'resolved' | 'settled' | 'unknown';

type MutableRecord = { -readonly [Key in keyof ToolCallRecord]: ToolCallRecord[Key] } & {
  batch: number;
  /** Position in park order, for {@link ToolCallLedger.pending}. */
  parkOrder: number;
  /** When the call parked (epoch ms). */
  parkedAt: number;
  /** Handed out by {@link ToolCallLedger.takeAnnounceable}. */
  announced: boolean;
  /** The correction a `corrected` call was answered with (repeated to an SDK retry of it). */
  correction: string | undefined;
};

/** A parked call to announce to the client. */
export type AnnouncedCall = { toolCallId: string; toolName: string; args: unknown; parkedAt: number };

const sameJson = (left: unknown, right: unknown): boolean => JSON.stringify(left) === JSON.stringify(right);

export class ToolCallLedger {
  /** In start order (calls that parked without a started update in park order). */
  readonly #records: MutableRecord[] = [];
  #batch = 0;
  #listed: number | undefined;
  #parks = 0;

  /**
   * A `tool-call-started` update. A retried stream replays started updates: an id already known (as
   * either id) is not a new call. Returns whether the call is new.
   */
  started(sdkCallId: string, toolName: string, args: unknown): boolean {
    if (this.#byId(sdkCallId) !== undefined) return false;
    this.#add(sdkCallId, toolName, args);
    return true;
  }

  /**
   * The id for an `execute` that came without `context.toolCallId`: the matching started call's own id,
   * reserved so the call parks under it. Undefined when no started call of that tool is waiting.
   */
  claim(toolName: string, args: unknown): string | undefined {
    const record = this.#match({ toolName, args });
    if (record !== undefined) record.toolCallId = record.sdkCallId;
    return record?.toolCallId;
  }

  /**
   * An executed call was answered with `correction` instead of being parked (it keeps its place in its
   * batch). Returns the correction it was answered with before, when an SDK retry executes it again.
   */
  correct(call: { toolCallId: string; toolName: string; args: unknown }, correction: string): string {
    const found = this.#match(call);
    if (found !== undefined && found.state !== 'started') return found.correction ?? correction;
    const record = found ?? this.#add(undefined, call.toolName, call.args);
    record.toolCallId = call.toolCallId;
    record.args = call.args;
    record.state = 'corrected';
    record.correction = correction;
    return correction;
  }

  /** The correction the call with this id was answered with, if it was corrected. */
  correctionFor(toolCallId: string): string | undefined {
    return this.#byId(toolCallId)?.correction;
  }

  /**
   * A call reached the tool host. Returns its record when it is newly parked (announce it), undefined
   * when it was parked before (an SDK retry re-executes with the same id).
   */
  park(call: {
    toolCallId: string;
    toolName: string;
    args: unknown;
    parkedAt?: number;
  }): ToolCallRecord | undefined {
    const found = this.#match(call);
    if (found !== undefined && found.state !== 'started') return undefined;
    const record = found ?? this.#add(undefined, call.toolName, call.args);
    record.toolCallId = call.toolCallId;
    record.args = call.args;
    record.state = 'parked';
    record.parkOrder = this.#parks++;
    record.parkedAt = call.parkedAt ?? Date.now();
    return record;
  }

  /**
   * Parked calls not announced yet, in the order the model made them (start order; calls that parked
   * without a started update last, in park order). The SDK executes a batch's calls concurrently, so they
   * may park in another order: a call waits while a call of the current batch started before it has not
   * parked — unless `all` (the wait is bounded by the caller), which hands out every parked call.
   */
  takeAnnounceable(all = false): AnnouncedCall[] {
    const ready: AnnouncedCall[] = [];
    for (const record of this.#records) {
      if (record.announced) continue;
      if (record.state === 'started') {
        if (!all && record.batch === this.#batch) break;
        continue;
      }
      if (record.state !== 'parked' || record.toolCallId === undefined) continue;
      record.announced = true;
      ready.push({
        toolCallId: record.toolCallId,
        toolName: record.toolName,
        args: record.args,
        parkedAt: record.parkedAt,
      });
    }
    return ready;
  }

  /** Whether a parked call waits to be announced (see {@link takeAnnounceable}). */
  get holding(): boolean {
    return this.#records.some((record) => record.state === 'parked' && !record.announced);
  }

  /**
   * The one matching rule. The record a call belongs to: the one known by `toolCallId` (as either id),
   * else the oldest started call not yet claimed with the same tool and arguments, else with the same tool.
   */
  #match(call: { toolCallId?: string; toolName: string; args: unknown }): MutableRecord | undefined {
    const byId = call.toolCallId === undefined ? undefined : this.#byId(call.toolCallId);
    if (byId !== undefined) return byId;
    const waiting = this.#records.filter(
      (record) =>
        record.state === 'started' && record.toolCallId === undefined && record.toolName === call.toolName,
    );
    return waiting.find((record) => sameJson(record.args, call.args)) ?? waiting[0];
  }

  /** The client's result for `toolCallId` arrived. Only a parked call moves (to `resolved`). */
  resolve(toolCallId: string): ToolCallResolution {
    const record = this.#records.find((candidate) => candidate.toolCallId === toolCallId);
    if (record === undefined || record.state === 'started') return 'unknown';
    if (record.state !== 'parked') return 'settled';
    record.state = 'resolved';
    return 'resolved';
  }

  /** Every parked call is settled without a result (the run was cancelled or ended). */
  abandonAll(): void {
    for (const record of this.#records) if (record.state === 'parked') record.state = 'abandoned';
  }

  /** Ids of the parked calls, in park order. */
  pending(): string[] {
    return this.#records
      .filter((record) => record.state === 'parked')
      .sort((left, right) => left.parkOrder - right.parkOrder)
      .flatMap((record) => (record.toolCallId === undefined ? [] : [record.toolCallId]));
  }

  /** A snapshot of every record, in start order. */
  records(): ToolCallRecord[] {
    return this.#records.map(({ sdkCallId, toolCallId, toolName, args, state }) => ({
      sdkCallId,
      toolCallId,
      toolName,
      args,
      state,
    }));
  }

  /** `tool-requests-listed`: the current batch has `callCount` calls. */
  listed(callCount: number): void {
    this.#listed = callCount;
  }

  get batchStatus(): ToolBatchStatus {
    const batch = this.#records.filter((record) => record.batch === this.#batch);
    const parked = batch.filter((record) => record.state !== 'started').length;
    if (parked === 0 || parked < batch.length) return 'open';
    if (this.#listed === undefined) return 'unlisted';
    return parked >= this.#listed ? 'complete' : 'open';
  }

  /** The current batch was announced as ended; later calls belong to the next one. */
  endBatch(): void {
    this.#batch += 1;
    this.#listed = undefined;
  }

  #byId(id: string): MutableRecord | undefined {
    return this.#records.find((record) => record.toolCallId === id || record.sdkCallId === id);
  }

  #add(sdkCallId: string | undefined, toolName: string, args: unknown): MutableRecord {
    const record: MutableRecord = {
      sdkCallId,
      toolCallId: undefined,
      toolName,
      args,
      state: 'started',
      batch: this.#batch,
      parkOrder: -1,
      parkedAt: 0,
      announced: false,
      correction: undefined,
    };
    this.#records.push(record);
    return record;
  }
}

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
