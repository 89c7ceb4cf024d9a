/**
 * {@link RunContext} over one {@link FakeStream}: turns scenario actions into `AgentServerMessage`s,
 * matches exec / KV answers by id, and records the turn so it can write a conversation checkpoint the
 * way Cursor's server does (KV `setBlob` for each structure, then `conversationCheckpointUpdate`).
 */

import { createHash } from 'node:crypto';

import type { ClientMessage, JsonObject } from './client-message.js';
import type { ConnectErrorCode } from './connect-envelope.js';
import type { FakeStream } from './fake-stream.js';
import { fakeLimitTexts } from './limit-texts.js';
import { decodeReceivedImages, receivedImage, type FakeReceivedImage } from './received-images.js';
import type {
  FakeConversationTooLongOptions,
  FakeCursorLimit,
  FakeExecKind,
  FakeFailOptions,
  FakeHistoryTurn,
  FakeHostedOutcome,
  FakeLimitOptions,
  FakeRunRequest,
  FakeToolCallSpec,
  FakeToolContent,
  FakeToolResult,
  FakeUsage,
  FakeWebFetchSpec,
  FakeWebSearchSpec,
  RunContext,
  ToolBatchOptions,
} from './run-context.js';
import { FakeExecAbortedError, FakeStreamClosedError } from './run-context.js';
import type { ProtoRegistry } from './sdk-proto-registry.js';
import { isRecord } from '../../../lib/is-record.js';

type Pending<T> = { resolve: (value: T) => void; reject: (error: Error) => void };

type RecordedStep =
  | { type: 'text'; text: string }
  | { type: 'thinking'; text: string; durationMs: number }
  | { type: 'tool-call'; toolCall: JsonObject };

const asObject = (value: unknown): JsonObject => (isRecord(value) ? value : {});
const asString = (value: unknown): string => (typeof value === 'string' ? value : '');
const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const base64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');

export type FakeRunOptions = {
  registry: ProtoRegistry;
  stream: FakeStream;
  request: FakeRunRequest;
  /** Write a conversation checkpoint at `end()`. */
  checkpoints: boolean;
  /** Shared counter for default call ids across the backend. */
  nextCallNumber: () => number;
  /** Told of the usage each `turnEnded` reports (the backend bills it). */
  onUsage?: (usage: FakeUsage) => void;
  /** Told of each image a tool result carries. */
  onImage?: (image: FakeReceivedImage) => void;
};

export class FakeRun implements RunContext {
  readonly request: FakeRunRequest;
  private readonly onUsage: ((usage: FakeUsage) => void) | undefined;
  private readonly onImage: ((image: FakeReceivedImage) => void) | undefined;
  private readonly registry: ProtoRegistry;
  private readonly stream: FakeStream;
  private readonly checkpoints: boolean;
  private readonly nextCallNumber: () => number;
  private nextExecId = 1;
  private nextKvId = 1;
  private readonly pendingExecs = new Map<number, Pending<JsonObject | undefined>>();
  /** Execs sent through {@link exec}: resolved with the whole `execClientMessage`. */
  private readonly pendingRawExecs = new Map<number, Pending<JsonObject>>();
  private readonly pendingKv = new Map<number, Pending<Uint8Array | undefined>>();
  private readonly pendingQueries = new Map<number, Pending<JsonObject>>();
  private nextQueryId = 1;
  private stepId = 0;
  private stepOpen = false;
  private stepStartedAt = 0;
  private readonly steps: RecordedStep[] = [];
  private ended = false;
  private turnEndSent = false;

  constructor(options: FakeRunOptions) {
    this.registry = options.registry;
    this.stream = options.stream;
    this.request = options.request;
    this.checkpoints = options.checkpoints;
    this.nextCallNumber = options.nextCallNumber;
    this.onUsage = options.onUsage;
    this.onImage = options.onImage;
    this.stream.signal.addEventListener('abort', () => this.rejectPending(), { once: true });
  }

  get prompt(): string {
    return this.request.text;
  }

  get toolNames(): readonly string[] {
    return this.request.mcpTools.map((tool) => tool.toolName);
  }

  get signal(): AbortSignal {
    return this.stream.signal;
  }

  get open(): boolean {
    return this.stream.open;
  }

  get writeBacklog(): number {
    return this.stream.writeBacklog;
  }

  /** Routes exec and KV answers to the pending actions. */
  handleClientMessage(message: ClientMessage): void {
    if (
      (message.kind === 'exec-result' || message.kind === 'exec-control') &&
      this.pendingRawExecs.has(message.id)
    ) {
      if (message.kind === 'exec-result') this.settle(this.pendingRawExecs, message.id, message.json);
      else if (message.control !== 'heartbeat') {
        const pending = this.pendingRawExecs.get(message.id);
        this.pendingRawExecs.delete(message.id);
        pending?.reject(
          new FakeExecAbortedError(
            `exec ${message.id} ended by the SDK with ${message.control}${message.error ? `: ${message.error}` : ''}`,
          ),
        );
      }
    } else if (message.kind === 'exec-result') {
      this.settle(this.pendingExecs, message.id, message.mcpResult ?? { other: message.json });
    } else if (message.kind === 'exec-control' && message.control !== 'heartbeat') {
      this.settle(this.pendingExecs, message.id, { error: { error: message.error ?? message.control } });
    } else if (message.kind === 'kv-result') {
      this.settle(this.pendingKv, message.id, message.blobData);
    } else if (message.kind === 'interaction-response') {
      this.settle(this.pendingQueries, message.id, message.json);
    }
  }

  thinking(text: string): void {
    this.beginStep();
    const last = this.steps.at(-1);
    if (last?.type === 'thinking') last.text += text;
    else this.steps.push({ type: 'thinking', text, durationMs: 0 });
    this.update({ thinkingDelta: { text } });
  }

  thinkingCompleted(durationMs = 1): void {
    const last = this.steps.at(-1);
    if (last?.type === 'thinking') last.durationMs = durationMs;
    this.update({ thinkingCompleted: { thinkingDurationMs: durationMs } });
  }

  text(text: string): void {
    this.beginStep();
    const last = this.steps.at(-1);
    if (last?.type === 'text') last.text += text;
    else this.steps.push({ type: 'text', text });
    this.update({ textDelta: { text } });
  }

  async toolCall(call: FakeToolCallSpec, options?: ToolBatchOptions): Promise<FakeToolResult> {
    const [result] = await this.toolCalls([call], options);
    if (!result) throw new Error('unreachable: one call, one result');
    return result;
  }

  async toolCalls(
    calls: readonly FakeToolCallSpec[],
    options: ToolBatchOptions = {},
  ): Promise<FakeToolResult[]> {
    const listed = options.listed ?? 'after-exec';
    this.beginStep();
    const prepared = calls.map((call) => {
      const number = this.nextCallNumber();
      const callId = call.callId ?? `toolu_fake_${number}`;
      const mcpArgs: JsonObject = {
        name: `custom-user-tools-${call.toolName}`,
        args: call.args ?? {},
        toolCallId: call.toolCallId ?? callId,
        providerIdentifier: call.providerIdentifier ?? 'custom-user-tools',
        toolName: call.toolName,
      };
      return { callId, modelCallId: call.modelCallId ?? `model-call-${number}`, mcpArgs };
    });
    const sendListing = async (): Promise<void> => {
      await options.listedAfter;
      this.update({ toolRequestsListed: { callCount: calls.length } });
    };
    const start = ({ callId, modelCallId, mcpArgs }: (typeof prepared)[number]): void => {
      const toolCall = { mcpToolCall: { args: mcpArgs }, toolCallId: callId };
      this.update({ toolCallStarted: { callId, modelCallId, toolCall } });
    };
    const exec = ({ mcpArgs }: (typeof prepared)[number]): Promise<JsonObject | undefined> => {
      const id = this.nextExecId++;
      const answer = this.expect(this.pendingExecs, id);
      this.stream.send({ execServerMessage: { id, execId: `exec-${id}`, mcpArgs } });
      return answer;
    };
    let answers: Array<Promise<JsonObject | undefined>>;
    if (listed === 'after-exec' || listed === 'none') {
      answers = prepared.map((call) => (start(call), exec(call)));
    } else {
      if (listed === 'before-started') await sendListing();
      prepared.forEach(start);
      if (listed === 'after-started') await sendListing();
      answers = prepared.map(exec);
    }
    // The listing goes out while the answers are awaited, so a stream that closes meanwhile rejects
    // them with a handler attached.
    const [mcpResults] = await Promise.all([
      Promise.all(answers),
      listed === 'after-exec' ? sendListing() : undefined,
    ]);
    const results = prepared.map(({ callId, mcpArgs }, index) =>
      decodeMcpResult(callId, asString(mcpArgs.toolCallId), mcpResults[index] ?? {}),
    );
    const images = results.flatMap((result) =>
      result.status === 'success'
        ? result.content.flatMap((item) =>
            item.type === 'image'
              ? [
                  receivedImage(Buffer.from(item.data, 'base64'), {
                    source: 'tool-result',
                    runRequestIndex: this.request.index,
                    toolCallId: result.toolCallId,
                    ...(item.mimeType === undefined ? {} : { mimeType: item.mimeType }),
                  }),
                ]
              : [],
          )
        : [],
    );
    // The records' pixel fields are set before the completions (and so the client's answer) go out.
    if (images.length > 0) await decodeReceivedImages(images);
    for (const image of images) this.onImage?.(image);
    prepared.forEach(({ callId, modelCallId, mcpArgs }, index) => {
      const toolCall = {
        mcpToolCall: { args: mcpArgs, result: toToolResult(mcpResults[index] ?? {}) },
        toolCallId: callId,
      };
      this.steps.push({ type: 'tool-call', toolCall });
      this.update({ toolCallCompleted: { callId, modelCallId, toolCall } });
    });
    this.completeStep();
    return results;
  }

  webSearch(spec: FakeWebSearchSpec): Promise<FakeHostedOutcome> {
    const outcome = spec.outcome;
    return this.hostedCall({
      ...spec,
      query: 'webSearchRequestQuery',
      response: 'webSearchRequestResponse',
      tool: 'webSearchToolCall',
      prefix: 'ws_fake',
      args: (toolCallId) => ({ searchTerm: spec.query, toolCallId }),
      result:
        'references' in outcome
          ? { success: { references: outcome.references } }
          : 'error' in outcome
            ? { error: { error: outcome.error } }
            : { rejected: { reason: outcome.rejected } },
    });
  }

  webFetch(spec: FakeWebFetchSpec): Promise<FakeHostedOutcome> {
    const outcome = spec.outcome;
    return this.hostedCall({
      ...spec,
      query: 'webFetchRequestQuery',
      response: 'webFetchRequestResponse',
      tool: 'webFetchToolCall',
      prefix: 'wf_fake',
      args: (toolCallId) => ({ url: spec.url, toolCallId }),
      result:
        'markdown' in outcome
          ? { success: { url: spec.url, markdown: outcome.markdown } }
          : 'error' in outcome
            ? { error: { url: spec.url, error: outcome.error } }
            : { rejected: { reason: outcome.rejected } },
    });
  }

  /** The approval query, the SDK's answer, then the tool call's started / completed updates and its step. */
  private async hostedCall(call: {
    query: string;
    response: string;
    tool: string;
    prefix: string;
    callId?: string;
    toolCallId?: string;
    askApproval?: boolean;
    args: (toolCallId: string) => JsonObject;
    result: JsonObject;
  }): Promise<FakeHostedOutcome> {
    this.beginStep();
    const number = this.nextCallNumber();
    const callId = call.callId ?? `${call.prefix}_${number}`;
    const args = call.args(call.toolCallId ?? callId);
    let approval: FakeHostedOutcome['approval'] = { status: 'not-asked' };
    if (call.askApproval ?? true) {
      const id = this.nextQueryId++;
      const answer = this.expect(this.pendingQueries, id);
      this.stream.send({ interactionQuery: { id, [call.query]: { args } } });
      const response = asObject((await answer)[call.response]);
      approval = response.rejected
        ? { status: 'rejected', reason: asString(asObject(response.rejected).reason) }
        : { status: 'approved' };
    }
    const result = approval.status === 'rejected' ? { rejected: { reason: approval.reason } } : call.result;
    const modelCallId = `model-call-${number}`;
    this.update({ toolCallStarted: { callId, modelCallId, toolCall: { [call.tool]: { args } } } });
    const toolCall = { [call.tool]: { args, result }, toolCallId: callId };
    this.steps.push({ type: 'tool-call', toolCall });
    this.update({ toolCallCompleted: { callId, modelCallId, toolCall } });
    this.completeStep();
    const resultCase = result.success ? 'success' : result.error ? 'error' : 'rejected';
    return { approval, result: resultCase, callId };
  }

  async exec(kind: FakeExecKind, args: JsonObject): Promise<JsonObject> {
    const id = this.nextExecId++;
    // Encode first so a bad kind or args throws here, not inside the stream.
    const message = { execServerMessage: { id, execId: `exec-${id}`, [kind]: args } };
    this.registry.get('agent.v1.AgentServerMessage').fromJson(message);
    const answer = this.expect(this.pendingRawExecs, id);
    this.stream.send(message);
    return answer;
  }

  turnEnded(usage?: FakeUsage): void {
    this.completeStep();
    this.turnEndSent = true;
    this.update({ turnEnded: usage ? { ...usage } : {} });
    // Cursor bills every turn, one that reported no usage too.
    this.onUsage?.(usage ?? { inputTokens: 0, outputTokens: 0 });
  }

  fail(message: string, code: ConnectErrorCode = 'internal', options: FakeFailOptions = {}): void {
    // Encode first so bad details throw in the scenario, not as a half-written trailer.
    const details =
      options.errorDetails === undefined
        ? undefined
        : [
            {
              type: 'aiserver.v1.ErrorDetails',
              value: base64(
                this.registry.get('aiserver.v1.ErrorDetails').fromJson(options.errorDetails).toBinary(),
              )
                // Connect sends error detail bytes as base64 without padding.
                .replace(/=+$/, ''),
            },
          ];
    this.ended = true;
    this.stream.end({ code, message, ...(details ? { details } : {}) }, options.metadata);
  }

  failConversationTooLong(options: FakeConversationTooLongOptions = {}): void {
    const title = options.title ?? 'Conversation too long';
    const detail =
      options.detail ??
      'Your conversation is too long. Please try creating a new conversation or shortening your messages.';
    this.fail(`${title}: ${detail}`, options.code ?? 'resource_exhausted', {
      errorDetails: {
        error: 'ERROR_CONVERSATION_TOO_LONG',
        details: { title, detail, isRetryable: false },
      },
      metadata: { 'x-cursor-inference-request-error-type': ['CONVERSATION_TOO_LONG'] },
    });
  }

  failLimit(limit: FakeCursorLimit, options: FakeLimitOptions = {}): void {
    const text = fakeLimitTexts[limit];
    const title = options.title ?? text.title;
    const when =
      options.retryAfterSeconds === undefined
        ? ''
        : ` Please try again in ${options.retryAfterSeconds} seconds.`;
    const detail = `${options.detail ?? text.detail}${when}`;
    this.fail(options.message ?? 'Error', options.code ?? text.code, {
      errorDetails: {
        error: limit,
        details: { title, detail, isRetryable: options.isRetryable ?? text.kind === 'rate' },
      },
      metadata: { 'x-cursor-inference-request-error-type': [limit.replace(/^ERROR_/, '')] },
    });
  }

  disconnect(): void {
    this.ended = true;
    this.stream.destroy();
  }

  async stall(ms: number): Promise<void> {
    this.stream.stallUntil(Date.now() + ms);
    if (!this.open) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.signal.addEventListener('abort', done, { once: true });
    });
  }

  async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    // The SDK treats a stream that closes before `turnEnded` as broken and retries it.
    if (!this.turnEndSent) this.turnEnded();
    this.completeStep();
    if (this.checkpoints && this.open && (this.steps.length > 0 || this.request.text)) {
      await this.writeCheckpoint().catch(() => undefined);
    }
    this.stream.end();
  }

  async checkpoint(): Promise<void> {
    await this.writeCheckpoint();
  }

  async history(): Promise<FakeHistoryTurn[]> {
    const turnIds = asArray(this.request.conversationState.turns).map(asString);
    const turns: FakeHistoryTurn[] = [];
    for (const turnId of turnIds) {
      const turnJson = asObject(await this.readBlob('agent.v1.ConversationTurnStructure', turnId));
      const agentTurn = asObject(turnJson.agentConversationTurn);
      const user = asObject(await this.readBlob('agent.v1.UserMessage', asString(agentTurn.userMessage)));
      const steps: FakeHistoryTurn['steps'] = [];
      for (const stepId of asArray(agentTurn.steps).map(asString)) {
        const step = asObject(await this.readBlob('agent.v1.ConversationStep', stepId));
        if (step.assistantMessage)
          steps.push({ type: 'text', text: asString(asObject(step.assistantMessage).text) });
        if (step.thinkingMessage)
          steps.push({ type: 'thinking', text: asString(asObject(step.thinkingMessage).text) });
        const hosted = asObject(step.toolCall).webSearchToolCall ?? asObject(step.toolCall).webFetchToolCall;
        if (hosted !== undefined) {
          const call = asObject(hosted);
          const kind = asObject(step.toolCall).webSearchToolCall === undefined ? 'webFetch' : 'webSearch';
          steps.push({ type: 'hosted', kind, args: asObject(call.args), result: asObject(call.result) });
        } else if (step.toolCall) {
          const mcp = asObject(asObject(step.toolCall).mcpToolCall);
          const args = asObject(mcp.args);
          steps.push({
            type: 'tool-call',
            toolName: asString(args.toolName),
            args: asObject(args.args),
            result: mcp.result === undefined ? undefined : asObject(mcp.result),
          });
        }
      }
      turns.push({ user: asString(user.text), steps });
    }
    return turns;
  }

  sendRaw(message: JsonObject): void {
    this.stream.send(message);
  }

  private update(interactionUpdate: JsonObject): void {
    this.stream.send({ interactionUpdate });
  }

  private beginStep(): void {
    if (this.stepOpen) return;
    this.stepOpen = true;
    this.stepId += 1;
    this.stepStartedAt = Date.now();
    this.update({ stepStarted: { stepId: this.stepId } });
  }

  private completeStep(): void {
    if (!this.stepOpen) return;
    this.stepOpen = false;
    this.update({ stepCompleted: { stepId: this.stepId, stepDurationMs: Date.now() - this.stepStartedAt } });
  }

  private expect<T>(table: Map<number, Pending<T>>, id: number): Promise<T> {
    if (!this.open) return Promise.reject(new FakeStreamClosedError('stream is closed'));
    return new Promise<T>((resolve, reject) => table.set(id, { resolve, reject }));
  }

  private settle<T>(table: Map<number, Pending<T>>, id: number, value: T): void {
    const pending = table.get(id);
    table.delete(id);
    pending?.resolve(value);
  }

  private rejectPending(): void {
    const error = new FakeStreamClosedError(`stream ${this.stream.requestId} closed`);
    for (const table of [
      this.pendingExecs,
      this.pendingRawExecs,
      this.pendingKv,
      this.pendingQueries,
    ] as Array<Map<number, Pending<unknown>>>) {
      for (const pending of table.values()) pending.reject(error);
      table.clear();
    }
  }

  /** Stores `typeName` JSON as a content-addressed blob in the SDK's KV store; returns its base64 id. */
  private async writeBlob(typeName: string, json: JsonObject): Promise<string> {
    const data = this.registry.get(typeName).fromJson(json).toBinary();
    const blobId = createHash('sha256').update(data).digest();
    const id = this.nextKvId++;
    const answer = this.expect(this.pendingKv, id);
    this.stream.send({
      kvServerMessage: { id, setBlobArgs: { blobId: base64(blobId), blobData: base64(data) } },
    });
    await answer;
    return base64(blobId);
  }

  private async readBlob(typeName: string, blobId: string): Promise<unknown> {
    if (!blobId) return {};
    const id = this.nextKvId++;
    const answer = this.expect(this.pendingKv, id);
    this.stream.send({ kvServerMessage: { id, getBlobArgs: { blobId } } });
    const data = await answer;
    return data ? this.registry.get(typeName).fromBinary(data).toJson() : {};
  }

  /** Appends this turn to the conversation state and sends it as `conversationCheckpointUpdate`. */
  private async writeCheckpoint(): Promise<void> {
    const userMessage = await this.writeBlob('agent.v1.UserMessage', { text: this.request.text });
    const stepIds: string[] = [];
    for (const step of this.steps) {
      const json =
        step.type === 'text'
          ? { assistantMessage: { text: step.text } }
          : step.type === 'thinking'
            ? { thinkingMessage: { text: step.text, durationMs: step.durationMs } }
            : { toolCall: step.toolCall };
      stepIds.push(await this.writeBlob('agent.v1.ConversationStep', json));
    }
    const turn = await this.writeBlob('agent.v1.ConversationTurnStructure', {
      agentConversationTurn: { userMessage, steps: stepIds, requestId: this.request.requestId },
    });
    const previous = this.request.conversationState;
    const turns = [...asArray(previous.turns).map(asString), turn];
    this.stream.send({ conversationCheckpointUpdate: { ...previous, turns } });
  }
}

/** `agent.v1.McpResult` JSON → the `McpToolResult` JSON that goes into `toolCallCompleted`. */
const toToolResult = (mcpResult: JsonObject): JsonObject => {
  if (mcpResult.success) return { success: mcpResult.success };
  if (mcpResult.rejected) return { rejected: mcpResult.rejected };
  if (mcpResult.permissionDenied) return { permissionDenied: mcpResult.permissionDenied };
  const error = asObject(mcpResult.error);
  return { error: { error: asString(error.error) || 'tool failed' } };
};

const decodeMcpResult = (callId: string, toolCallId: string, mcpResult: JsonObject): FakeToolResult => {
  const ids = { callId, toolCallId };
  if (mcpResult.success) {
    const success = asObject(mcpResult.success);
    const content = asArray(success.content).map((item): FakeToolContent => {
      const entry = asObject(item);
      if (entry.image) {
        const image = asObject(entry.image);
        const mimeType = asString(image.mimeType);
        return { type: 'image', data: asString(image.data), ...(mimeType ? { mimeType } : {}) };
      }
      return { type: 'text', text: asString(asObject(entry.text).text) };
    });
    return {
      ...ids,
      status: 'success',
      content,
      isError: success.isError === true,
      ...(success.structuredContent === undefined
        ? {}
        : { structuredContent: asObject(success.structuredContent) }),
    };
  }
  if (mcpResult.error) return { ...ids, status: 'error', error: asString(asObject(mcpResult.error).error) };
  if (mcpResult.rejected)
    return { ...ids, status: 'rejected', reason: asString(asObject(mcpResult.rejected).reason) };
  return { ...ids, status: 'other', json: mcpResult };
};
