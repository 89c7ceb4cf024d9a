/**
 * A run's host tool calls as records: one record per call whatever ids it is known by, and the one place
 * that decides which record an id belongs to.
 *
 * Two id spaces meet here: the SDK's `tool-call-started` update carries `callId` (the record's
 * `sdkCallId`); `execute`, and so the parked MCP call, carries `McpArgs.toolCallId` (the record's
 * `toolCallId`), a different wire field that the backend may leave empty. One private `#match` is the one
 * place that pairs them: by id, else by tool and arguments, else by tool, in the order the calls started
 * (the SDK executes calls in that order).
 *
 * Batch rule: `tool-requests-listed` announces `callCount`; each call has `tool-call-started` and then
 * parks (or is corrected). A batch is complete when every call started in it has parked or been corrected,
 * and at least the listed number has; when every known call has but the size was never listed, the batch
 * is `unlisted` (its owner decides when to end it).
 *
 * Upstream-neutral (no SDK, no tool host): the Cursor adapter's `RunToolCalls`
 * (`cursor/host-tools/run-tool-calls.ts`) keeps its calls here, and so does the scripted upstream
 * (`scripted/`), so the engine's tests meet the same id rules as a Cursor run.
 *
 * Bound: one record per tool call of the run; the records live and die with their run.
 */

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
