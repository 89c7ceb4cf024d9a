/**
 * Reading Cursor's hosted web calls out of a conversation checkpoint. The blobs are built with the SDK's
 * own protobuf classes (taken from its bundle, see the fake backend), so the bridge's few declared
 * messages are checked against the real schema, field number by field number.
 */

import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  checkpointMessageTypes,
  completedWebCall,
  countCheckpointTurns,
  readCheckpointWebCalls,
} from '../../../src/upstream/cursor/hosted-tools/checkpoint-web-calls.js';
import { loadSdkProtoRegistry, type ProtoRegistry } from '../../fakes/cursor-backend/index.js';

let registry: ProtoRegistry;
beforeAll(async () => {
  registry = await loadSdkProtoRegistry();
});

type FieldLike = {
  no: number;
  name: string;
  kind: string;
  repeated: boolean;
  oneof?: { name: string };
  T?: unknown;
};
type TypeLike = { typeName: string; fields: { list(): readonly FieldLike[] } };

const describeField = (field: FieldLike): string => {
  const target =
    typeof field.T === 'object' || typeof field.T === 'function'
      ? ` ${(field.T as { typeName?: string }).typeName ?? ''}`
      : ` ${String(field.T)}`;
  return `${field.no} ${field.name} ${field.kind}${target}${field.repeated ? '[]' : ''}${field.oneof ? ` (${field.oneof.name})` : ''}`;
};

describe("the bridge's declared checkpoint messages", () => {
  it.each(checkpointMessageTypes.map((type) => [type.typeName, type] as const))(
    '%s matches @cursor/sdk field by field',
    (typeName, type) => {
      const sdk = registry.get(typeName) as unknown as TypeLike;
      const sdkFields = new Map(sdk.fields.list().map((field) => [field.no, describeField(field)]));
      for (const field of (type as unknown as TypeLike).fields.list()) {
        expect(sdkFields.get(field.no)).toBe(describeField(field));
      }
    },
  );
});

/** A blob store as the SDK fills the bridge's: blob id bytes → lower-case hex key. */
const createStore = () => {
  const blobs = new Map<string, Uint8Array>();
  const put = (typeName: string, json: unknown): string => {
    const data = registry.get(typeName).fromJson(json).toBinary();
    const id = createHash('sha256').update(data).digest();
    blobs.set(id.toString('hex'), data);
    return id.toString('base64');
  };
  const turn = (steps: unknown[]): string =>
    put('agent.v1.ConversationTurnStructure', {
      agentConversationTurn: {
        userMessage: put('agent.v1.UserMessage', { text: 'hi' }),
        steps: steps.map((step) => put('agent.v1.ConversationStep', step)),
      },
    });
  const root = (turns: string[]): string =>
    Buffer.from(put('agent.v1.ConversationStateStructure', { turns }), 'base64').toString('hex');
  return { read: (id: string) => blobs.get(id), put, turn, root, blobs };
};

const reference = { title: 'Node 22', url: 'https://nodejs.org/22', chunk: 'Released in April' };
const search = (id: string, query: string, result?: unknown) => ({
  toolCall: {
    toolCallId: id,
    webSearchToolCall: {
      args: { searchTerm: query, toolCallId: id },
      ...(result === undefined ? {} : { result }),
    },
  },
});

describe('readCheckpointWebCalls', () => {
  it("reads the run's turn: every hosted search and fetch in step order, with its result", () => {
    const store = createStore();
    const earlier = store.turn([search('old', 'earlier turn', { success: { references: [reference] } })]);
    const current = store.turn([
      { assistantMessage: { text: 'Searching.' } },
      search('ws1', 'node 22', { success: { references: [reference] } }),
      {
        toolCall: {
          toolCallId: 'mcp1',
          mcpToolCall: { args: { name: 'custom-user-tools-Bash', toolName: 'Bash' } },
        },
      },
      search('ws2', 'refused', { rejected: { reason: 'team admin turned web search off' } }),
      search('ws3', 'broken', { error: { error: 'search backend down' } }),
      {
        toolCall: {
          toolCallId: 'wf1',
          webFetchToolCall: {
            args: { url: 'https://nodejs.org/22', toolCallId: 'wf1' },
            result: { success: { url: 'https://nodejs.org/22', markdown: '# Node 22' } },
          },
        },
      },
      search('ws4', 'pending'),
    ]);
    const result = readCheckpointWebCalls(store.read, store.root([earlier, current]), 1);
    expect(result).toEqual({
      ok: true,
      value: {
        turnCount: 2,
        calls: [
          {
            id: 'ws1',
            kind: 'search',
            query: 'node 22',
            result: { status: 'success', references: [reference] },
          },
          {
            id: 'ws2',
            kind: 'search',
            query: 'refused',
            result: { status: 'rejected', reason: 'team admin turned web search off' },
          },
          {
            id: 'ws3',
            kind: 'search',
            query: 'broken',
            result: { status: 'error', message: 'search backend down' },
          },
          {
            id: 'wf1',
            kind: 'fetch',
            url: 'https://nodejs.org/22',
            result: { status: 'success', url: 'https://nodejs.org/22', markdown: '# Node 22' },
          },
          { id: 'ws4', kind: 'search', query: 'pending', result: { status: 'pending' } },
        ],
      },
    });
    if (result.ok) {
      expect(result.value.calls.map(completedWebCall).map((call) => call?.id)).toEqual([
        'ws1',
        'ws2',
        'ws3',
        'wf1',
        undefined,
      ]);
    }
    expect(countCheckpointTurns(store.read, store.root([earlier, current]))).toBe(2);
    expect(countCheckpointTurns(store.read, undefined)).toBe(0);
  });

  it('falls back to the search arguments for the id, then to the step position', () => {
    const store = createStore();
    const turn = store.turn([
      {
        toolCall: {
          webSearchToolCall: { args: { searchTerm: 'a', toolCallId: 'args-id' }, result: { success: {} } },
        },
      },
      { toolCall: { webSearchToolCall: { args: { searchTerm: 'b' }, result: { success: {} } } } },
    ]);
    const result = readCheckpointWebCalls(store.read, store.root([turn]), 0);
    expect(result.ok && result.value.calls.map((call) => call.id)).toEqual(['args-id', 'hosted-0-1']);
  });

  it('fails, without throwing, when a blob is missing or does not decode', () => {
    const store = createStore();
    const turn = store.turn([search('ws1', 'q', { success: {} })]);
    const root = store.root([turn]);
    const [stepKey] = [...store.blobs.keys()].filter((key) => key !== root).slice(1);
    store.blobs.delete(stepKey ?? '');
    expect(readCheckpointWebCalls(store.read, root, 0)).toEqual({
      ok: false,
      error: expect.stringContaining("is not in the agent's store"),
    });
    store.blobs.set(root, new Uint8Array([0xff, 0xff, 0xff]));
    expect(readCheckpointWebCalls(store.read, root, 0).ok).toBe(false);
    expect(countCheckpointTurns(store.read, root)).toBeUndefined();
  });
});
