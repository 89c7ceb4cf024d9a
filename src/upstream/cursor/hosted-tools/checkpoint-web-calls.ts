/**
 * Cursor's hosted web searches and fetches, read from the conversation checkpoint the agent's store
 * receives.
 *
 * Why the checkpoint: Cursor runs these tools on its servers and reports them as `web_search_tool_call` /
 * `web_fetch_tool_call` tool calls, which @cursor/sdk (1.0.32) does not map — neither `onDelta`,
 * `run.stream()` nor `onStep` carries them, only the answer text does. What the bridge *can* read is the
 * conversation state Cursor's server writes into the client's blob store (`kvServerMessage.setBlobArgs`, then
 * `conversationCheckpointUpdate`): every step of the turn, in order, the hosted calls with their complete
 * results among them — the same record the server reads back to continue the conversation. The store is
 * the bridge's own (`InMemoryAgentStore`), so this is a public seam: the SDK hands every blob to it.
 *
 * The blobs are protobuf (`agent.v1.*`). Only the few messages and fields on the path to a hosted call are
 * declared here, by their field numbers in @cursor/sdk 1.0.32 (a test compares them with the SDK's own
 * descriptors); every other field is skipped by the decoder.
 */

import { proto3, ScalarType, type AnyMessage, type MessageType } from '@bufbuild/protobuf';
import type { Result } from '../../../../lib/result.js';
import type { UpstreamWebCall } from '../../upstream-port.js';
import { errorMessage } from '../../../../lib/error-message.js';

/** One source of a hosted search (`agent.v1.WebSearchReference`). */
export type WebReference = { title: string; url: string; chunk: string };

/** How a hosted call ended; `pending` while a mid-turn checkpoint holds it without its result yet. */
export type WebCallResult<Success> =
  | ({ status: 'success' } & Success)
  | { status: 'error'; message: string }
  | { status: 'rejected'; reason: string }
  | { status: 'pending' };

/** A hosted call of the turn, in the order the model made it. */
export type CheckpointWebCall =
  | { id: string; kind: 'search'; query: string; result: WebCallResult<{ references: WebReference[] }> }
  | { id: string; kind: 'fetch'; url: string; result: WebCallResult<{ url: string; markdown: string }> };

/** What a checkpoint says about the turns from `fromTurn` on. */
export type CheckpointWebCalls = { turnCount: number; calls: CheckpointWebCall[] };

/** Reads one blob of the agent's store by its id (lower-case hex of the blob id bytes, as the SDK keys them). */
export type ReadBlob = (blobId: string) => Uint8Array | undefined;

const string = (no: number, name: string) => ({ no, name, kind: 'scalar' as const, T: ScalarType.STRING });
const message = (no: number, name: string, T: MessageType, oneof?: string) => ({
  no,
  name,
  kind: 'message' as const,
  T,
  ...(oneof === undefined ? {} : { oneof }),
});

// Field numbers as @cursor/sdk 1.0.32 declares them (agent.v1).
const WebSearchReference = proto3.makeMessageType('agent.v1.WebSearchReference', [
  string(1, 'title'),
  string(2, 'url'),
  string(3, 'chunk'),
]);
const WebSearchArgs = proto3.makeMessageType('agent.v1.WebSearchArgs', [
  string(1, 'search_term'),
  string(2, 'tool_call_id'),
]);
const WebSearchSuccess = proto3.makeMessageType('agent.v1.WebSearchSuccess', [
  { no: 1, name: 'references', kind: 'message', T: WebSearchReference, repeated: true },
]);
const WebSearchError = proto3.makeMessageType('agent.v1.WebSearchError', [string(1, 'error')]);
const WebSearchRejected = proto3.makeMessageType('agent.v1.WebSearchRejected', [string(1, 'reason')]);
const WebSearchResult = proto3.makeMessageType('agent.v1.WebSearchResult', [
  message(1, 'success', WebSearchSuccess, 'result'),
  message(2, 'error', WebSearchError, 'result'),
  message(3, 'rejected', WebSearchRejected, 'result'),
]);
const WebSearchToolCall = proto3.makeMessageType('agent.v1.WebSearchToolCall', [
  message(1, 'args', WebSearchArgs),
  message(2, 'result', WebSearchResult),
]);
const WebFetchArgs = proto3.makeMessageType('agent.v1.WebFetchArgs', [
  string(1, 'url'),
  string(2, 'tool_call_id'),
]);
const WebFetchSuccess = proto3.makeMessageType('agent.v1.WebFetchSuccess', [
  string(1, 'url'),
  string(2, 'markdown'),
]);
const WebFetchError = proto3.makeMessageType('agent.v1.WebFetchError', [
  string(1, 'url'),
  string(2, 'error'),
]);
const WebFetchRejected = proto3.makeMessageType('agent.v1.WebFetchRejected', [string(1, 'reason')]);
const WebFetchResult = proto3.makeMessageType('agent.v1.WebFetchResult', [
  message(1, 'success', WebFetchSuccess, 'result'),
  message(2, 'error', WebFetchError, 'result'),
  message(3, 'rejected', WebFetchRejected, 'result'),
]);
const WebFetchToolCall = proto3.makeMessageType('agent.v1.WebFetchToolCall', [
  message(1, 'args', WebFetchArgs),
  message(2, 'result', WebFetchResult),
]);
const ToolCall = proto3.makeMessageType('agent.v1.ToolCall', [
  message(18, 'web_search_tool_call', WebSearchToolCall, 'tool'),
  message(37, 'web_fetch_tool_call', WebFetchToolCall, 'tool'),
  string(57, 'tool_call_id'),
]);
const ConversationStep = proto3.makeMessageType('agent.v1.ConversationStep', [
  message(2, 'tool_call', ToolCall, 'message'),
]);
const AgentConversationTurnStructure = proto3.makeMessageType('agent.v1.AgentConversationTurnStructure', [
  { no: 2, name: 'steps', kind: 'scalar', T: ScalarType.BYTES, repeated: true },
]);
const ConversationTurnStructure = proto3.makeMessageType('agent.v1.ConversationTurnStructure', [
  message(1, 'agent_conversation_turn', AgentConversationTurnStructure, 'turn'),
]);
const ConversationStateStructure = proto3.makeMessageType('agent.v1.ConversationStateStructure', [
  { no: 8, name: 'turns', kind: 'scalar', T: ScalarType.BYTES, repeated: true },
]);

/** The message types above, for the test that holds them against the SDK's descriptors. */
export const checkpointMessageTypes: readonly MessageType[] = [
  WebSearchReference,
  WebSearchArgs,
  WebSearchSuccess,
  WebSearchError,
  WebSearchRejected,
  WebSearchResult,
  WebSearchToolCall,
  WebFetchArgs,
  WebFetchSuccess,
  WebFetchError,
  WebFetchRejected,
  WebFetchResult,
  WebFetchToolCall,
  ToolCall,
  ConversationStep,
  AgentConversationTurnStructure,
  ConversationTurnStructure,
  ConversationStateStructure,
];

class MissingBlobError extends Error {}

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

/** A oneof group of a decoded message (`{ case, value }`; `case` undefined when unset). */
type Oneof = { case: string | undefined; value?: AnyMessage };

const oneof = (decoded: AnyMessage, name: string): Oneof => (decoded[name] ?? { case: undefined }) as Oneof;

const text = (decoded: AnyMessage | undefined, field: string): string => {
  const value = decoded?.[field] as unknown;
  return typeof value === 'string' ? value : '';
};

const bytesList = (decoded: AnyMessage, field: string): Uint8Array[] =>
  (decoded[field] as Uint8Array[] | undefined) ?? [];

const decode = (type: MessageType, read: ReadBlob, blobId: Uint8Array | string): AnyMessage => {
  const id = typeof blobId === 'string' ? blobId : hex(blobId);
  const data = read(id);
  if (data === undefined) throw new MissingBlobError(`blob ${id.slice(0, 16)}… is not in the agent's store`);
  return type.fromBinary(data);
};

/**
 * A `WebSearchResult` / `WebFetchResult`: the same oneof (`success` | `error` | `rejected`) for both tools,
 * `success` read by `readSuccess`; a result not written yet is `pending`.
 */
const readResult = <Success>(
  result: AnyMessage | undefined,
  readSuccess: (success: AnyMessage | undefined) => Success,
): WebCallResult<Success> => {
  const outcome = result === undefined ? { case: undefined } : oneof(result, 'result');
  switch (outcome.case) {
    case 'success':
      return { status: 'success', ...readSuccess(outcome.value) };
    case 'error':
      return { status: 'error', message: text(outcome.value, 'error') };
    case 'rejected':
      return { status: 'rejected', reason: text(outcome.value, 'reason') };
    default:
      return { status: 'pending' };
  }
};

const readReferences = (success: AnyMessage | undefined): { references: WebReference[] } => ({
  references: ((success?.['references'] as AnyMessage[] | undefined) ?? []).map((reference) => ({
    title: text(reference, 'title'),
    url: text(reference, 'url'),
    chunk: text(reference, 'chunk'),
  })),
});

const readPage = (success: AnyMessage | undefined): { url: string; markdown: string } => ({
  url: text(success, 'url'),
  markdown: text(success, 'markdown'),
});

/** The hosted call of one step, if the step is one. */
const webCallOf = (step: AnyMessage, fallbackId: string): CheckpointWebCall | undefined => {
  const content = oneof(step, 'message');
  if (content.case !== 'toolCall' || content.value === undefined) return undefined;
  const toolCall = content.value;
  const tool = oneof(toolCall, 'tool');
  const args = tool.value?.['args'] as AnyMessage | undefined;
  const id = text(toolCall, 'toolCallId') || text(args, 'toolCallId') || fallbackId;
  const result = tool.value?.['result'] as AnyMessage | undefined;
  if (tool.case === 'webSearchToolCall')
    return {
      id,
      kind: 'search',
      query: text(args, 'searchTerm'),
      result: readResult(result, readReferences),
    };
  if (tool.case === 'webFetchToolCall')
    return {
      id,
      kind: 'fetch',
      url: text(args, 'url'),
      result: readResult(result, readPage),
    };
  return undefined;
};

/**
 * The number of turns the checkpoint rooted at `rootBlobId` holds, and the hosted calls of its turns from
 * index `fromTurn` on (a run's own turn: the checkpoint before the run held `fromTurn` turns), in step
 * order. Fails (never throws) when a blob is missing or does not decode.
 */
export const readCheckpointWebCalls = (
  read: ReadBlob,
  rootBlobId: string,
  fromTurn: number,
): Result<CheckpointWebCalls, string> => {
  try {
    const state = decode(ConversationStateStructure, read, rootBlobId);
    const turns = bytesList(state, 'turns');
    const calls: CheckpointWebCall[] = [];
    turns.slice(fromTurn).forEach((turnId, turnOffset) => {
      const turn = oneof(decode(ConversationTurnStructure, read, turnId), 'turn');
      if (turn.case !== 'agentConversationTurn' || turn.value === undefined) return;
      bytesList(turn.value, 'steps').forEach((stepId, stepIndex) => {
        const call = webCallOf(
          decode(ConversationStep, read, stepId),
          `hosted-${fromTurn + turnOffset}-${stepIndex}`,
        );
        if (call !== undefined) calls.push(call);
      });
    });
    return { ok: true, value: { turnCount: turns.length, calls } };
  } catch (error) {
    return { ok: false, error: errorMessage(error) };
  }
};

/** The call as the upstream reports it once its result is in; undefined while it is pending. */
export const completedWebCall = (call: CheckpointWebCall): UpstreamWebCall | undefined => {
  if (call.kind === 'search') {
    const { result } = call;
    return result.status === 'pending'
      ? undefined
      : { id: call.id, kind: 'search', query: call.query, result };
  }
  const { result } = call;
  return result.status === 'pending' ? undefined : { id: call.id, kind: 'fetch', url: call.url, result };
};

/** The number of turns a checkpoint holds (0 for none); undefined when its root does not decode. */
export const countCheckpointTurns = (read: ReadBlob, rootBlobId: string | undefined): number | undefined => {
  if (rootBlobId === undefined) return 0;
  try {
    return bytesList(decode(ConversationStateStructure, read, rootBlobId), 'turns').length;
  } catch {
    return undefined;
  }
};
