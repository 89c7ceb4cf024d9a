import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { LocalAgentDocument, LocalAgentRunDocument } from '@cursor/sdk';

import { InMemoryAgentStore } from '../../../src/upstream/cursor/in-memory-agent-store.js';
import type { SdkTestEnv } from '../../fakes/cursor-backend/sdk-test-env.js';
import { startSdkTestEnv } from '../../fakes/cursor-backend/sdk-test-env.js';

const agentDoc = (agentId: string, updatedAt: number, cwd = '/w'): LocalAgentDocument => ({
  agentId,
  cwd,
  status: 'idle',
  createdAt: 1,
  updatedAt,
  sdkMetadata: { key: agentId },
});

const runDoc = (
  agentId: string,
  runId: string,
  turnNumber: number,
  status: LocalAgentRunDocument['status'] = 'running',
): LocalAgentRunDocument => ({ agentId, runId, turnNumber, status, createdAt: 1, updatedAt: 1 });

describe('InMemoryAgentStore (contract)', () => {
  it('tells onRunRequest the backend request id of a run as the SDK records it, and nothing else', async () => {
    const heard: Array<[string, string]> = [];
    const store = new InMemoryAgentStore({
      onRunRequest: (runId, requestId) => heard.push([runId, requestId]),
    });
    const message = (inner: Record<string, unknown>) => ({
      schemaVersion: 1,
      type: 'sdk_message',
      message: inner,
    });
    await store.runEvents.append({
      runId: 'run-1',
      eventType: 'run_stream_event',
      payload: message({ type: 'request', run_id: 'run-1', request_id: 'c41b5a17' }),
    });
    await store.runEvents.append({
      runId: 'run-1',
      eventType: 'run_stream_event',
      payload: message({ type: 'status', status: 'RUNNING' }),
    });
    await store.runEvents.append({ runId: 'run-1', eventType: 'message' });
    expect(heard).toEqual([['run-1', 'c41b5a17']]);
  });

  it('stores agent rows as copies and rejects duplicate creates and unknown updates', async () => {
    const store = new InMemoryAgentStore();
    const created = await store.agents.create({ agent: agentDoc('agent-a', 10) });
    (created.sdkMetadata as Record<string, unknown>).key = 'mutated';
    expect(await store.agents.get({ agentId: 'agent-a' })).toEqual(agentDoc('agent-a', 10));
    await expect(store.agents.create({ agent: agentDoc('agent-a', 11) })).rejects.toThrow(/already exists/);
    await expect(store.agents.update({ agent: agentDoc('agent-x', 11) })).rejects.toThrow(/not found/);
    await store.agents.update({ agent: { ...agentDoc('agent-a', 12), name: 'renamed' } });
    expect((await store.agents.get({ agentId: 'agent-a' }))?.name).toBe('renamed');
    expect(await store.agents.get({ agentId: 'agent-missing' })).toBeNull();
  });

  it('lists agents newest first, filtered by cwd, with an opaque cursor', async () => {
    const store = new InMemoryAgentStore();
    for (const [id, updatedAt] of [
      ['agent-a', 1],
      ['agent-b', 3],
      ['agent-c', 2],
      ['agent-d', 3],
    ] as const) {
      await store.agents.create({ agent: agentDoc(id, updatedAt) });
    }
    await store.agents.create({ agent: agentDoc('agent-other', 9, '/elsewhere') });
    const first = await store.agents.list({ filter: { cwd: '/w', limit: 2 } });
    expect(first.items.map((agent) => agent.agentId)).toEqual(['agent-d', 'agent-b']);
    expect(first.nextCursor).toBeTypeOf('string');
    const second = await store.agents.list({
      filter: { cwd: '/w', limit: 2, cursor: first.nextCursor ?? '' },
    });
    expect(second.items.map((agent) => agent.agentId)).toEqual(['agent-c', 'agent-a']);
    expect(second.nextCursor).toBeUndefined();
    expect((await store.agents.list()).items).toHaveLength(5);
    await expect(store.agents.list({ filter: { cursor: 'not-a-cursor' } })).rejects.toThrow(/cursor/);
  });

  it('keys runs by agent and lists them by turn number', async () => {
    const store = new InMemoryAgentStore();
    await store.runs.create({ run: runDoc('agent-a', 'run-2', 2) });
    await store.runs.create({ run: runDoc('agent-a', 'run-1', 1) });
    await store.runs.create({ run: runDoc('agent-b', 'run-3', 1) });
    expect(await store.runs.get({ agentId: 'agent-b', runId: 'run-1' })).toBeNull();
    expect((await store.runs.get({ agentId: 'agent-a', runId: 'run-1' }))?.turnNumber).toBe(1);
    const listed = await store.runs.list({ filter: { agentIds: ['agent-a'], limit: 1 } });
    expect(listed.items.map((run) => run.runId)).toEqual(['run-1']);
    const rest = await store.runs.list({
      filter: { agentIds: ['agent-a'], cursor: listed.nextCursor ?? '' },
    });
    expect(rest.items.map((run) => run.runId)).toEqual(['run-2']);
    await expect(store.runs.update({ run: runDoc('agent-b', 'run-1', 1) })).rejects.toThrow(/not found/);
    await store.runs.delete({ filter: { runIds: ['run-2'] } });
    expect((await store.runs.list()).items.map((run) => run.runId)).toEqual(['run-1', 'run-3']);
  });

  it('keeps checkpoint blobs per agent as copies, upserting by content id', async () => {
    const store = new InMemoryAgentStore();
    const data = new Uint8Array([1, 2, 3]);
    await store.checkpoints.create({ agentId: 'agent-a', blobId: 'bb', data });
    await store.checkpoints.create({ agentId: 'agent-a', blobId: 'aa', data: new Uint8Array([9]) });
    await store.checkpoints.create({ agentId: 'agent-b', blobId: 'cc', data: new Uint8Array([7]) });
    data[0] = 42;
    expect(await store.checkpoints.get({ agentId: 'agent-a', blobId: 'bb' })).toEqual(
      new Uint8Array([1, 2, 3]),
    );
    expect(await store.checkpoints.get({ agentId: 'agent-b', blobId: 'bb' })).toBeNull();
    await store.checkpoints.create({ agentId: 'agent-a', blobId: 'bb', data: new Uint8Array([1, 2, 3]) });
    await store.checkpoints.update({ agentId: 'agent-a', blobId: 'aa', data: new Uint8Array([8]) });
    expect(await store.checkpoints.get({ agentId: 'agent-a', blobId: 'aa' })).toEqual(new Uint8Array([8]));
    const page = await store.checkpoints.list({ filter: { agentIds: ['agent-a'], limit: 1 } });
    expect(page).toEqual({ items: ['aa'], nextCursor: 'aa' });
    expect((await store.checkpoints.list({ filter: { agentIds: ['agent-a'], cursor: 'aa' } })).items).toEqual(
      ['bb'],
    );
    await store.checkpoints.delete({ filter: { agentIds: ['agent-a'] } });
    expect((await store.checkpoints.list()).items).toEqual(['cc']);
  });

  it('hands out run events as copies: a reader cannot change what a later reader gets', async () => {
    const store = new InMemoryAgentStore();
    await store.runEvents.append({
      runId: 'run-1',
      eventType: 'message',
      payload: { type: 'assistant', message: { content: [{ type: 'text', text: 'hi' }] } },
      idempotencyKey: 'k',
    });
    const [read] = (await store.runEvents.list({ runId: 'run-1' })).items;
    (read?.payload as { message: { content: Array<{ text: string }> } }).message.content[0]!.text = 'changed';
    const again = await store.runEvents.append({ runId: 'run-1', eventType: 'message', idempotencyKey: 'k' });
    (again.payload as { type: string }).type = 'changed';
    expect((await store.runEvents.list({ runId: 'run-1' })).items.map((event) => event.payload)).toEqual([
      { type: 'assistant', message: { content: [{ type: 'text', text: 'hi' }] } },
    ]);
  });

  it('numbers run events per run and pages them with an exclusive offset', async () => {
    const store = new InMemoryAgentStore();
    const first = await store.runEvents.append({ runId: 'run-1', eventType: 'message', payload: { n: 1 } });
    expect(first).toMatchObject({
      seq: 1,
      offset: '1',
      payload: { n: 1 },
      payloadRef: null,
      idempotencyKey: null,
    });
    await store.runEvents.append({
      runId: 'run-1',
      eventType: 'message',
      payload: { n: 2 },
      idempotencyKey: 'k',
    });
    const again = await store.runEvents.append({
      runId: 'run-1',
      eventType: 'message',
      payload: 3,
      idempotencyKey: 'k',
    });
    expect(again.seq).toBe(2);
    await store.runEvents.append({ runId: 'run-1', eventType: 'message', payload: { n: 3 } });
    await store.runEvents.append({ runId: 'run-2', eventType: 'message' });
    const page = await store.runEvents.list({ runId: 'run-1', limit: 2 });
    expect(page.items.map((event) => event.seq)).toEqual([1, 2]);
    expect(page.nextOffset).toBe('2');
    const rest = await store.runEvents.list({ runId: 'run-1', afterOffset: page.nextOffset ?? null });
    expect(rest.items.map((event) => event.payload)).toEqual([{ n: 3 }]);
    expect(rest.nextOffset).toBeUndefined();
    await store.runEvents.delete({ filter: { runIds: ['run-1'] } });
    expect((await store.runEvents.list({ runId: 'run-1' })).items).toEqual([]);
    expect((await store.runEvents.list({ runId: 'run-2' })).items).toHaveLength(1);
  });

  it('drops the events of finished runs beyond the cap, but never of active runs', async () => {
    const store = new InMemoryAgentStore({ maxFinishedRunsWithEvents: 1, maxEventsPerRun: 3 });
    for (const runId of ['run-1', 'run-2', 'run-3']) {
      await store.runs.create({ run: runDoc('agent-a', runId, Number(runId.slice(4))) });
      for (let index = 0; index < 5; index += 1) {
        await store.runEvents.append({ runId, eventType: 'message', payload: index });
      }
    }
    // Per-run cap: the oldest events go, numbering continues.
    expect((await store.runEvents.list({ runId: 'run-1' })).items.map((event) => event.seq)).toEqual([
      3, 4, 5,
    ]);
    await store.runs.update({ run: runDoc('agent-a', 'run-1', 1, 'finished') });
    await store.runs.update({ run: runDoc('agent-a', 'run-2', 2, 'error') });
    expect((await store.runEvents.list({ runId: 'run-1' })).items).toEqual([]);
    expect((await store.runEvents.list({ runId: 'run-2' })).items).toHaveLength(3);
    expect((await store.runEvents.list({ runId: 'run-3' })).items).toHaveLength(3);
    const late = await store.runEvents.append({ runId: 'run-1', eventType: 'message', payload: 'late' });
    expect(late.seq).toBe(6);
    expect((await store.runEvents.list({ runId: 'run-1' })).items).toEqual([]);
    expect(store.stats()).toMatchObject({ runs: 3, runsWithEvents: 2, events: 6 });
    // A long run (trimmed in batches) still exposes exactly its newest events.
    for (let index = 0; index < 100; index += 1) {
      await store.runEvents.append({ runId: 'run-3', eventType: 'message', payload: index });
    }
    expect((await store.runEvents.list({ runId: 'run-3' })).items.map((event) => event.seq)).toEqual([
      103, 104, 105,
    ]);
    expect(store.stats()).toMatchObject({ events: 6 });
  });

  it('dropAgent forgets the agent, its runs, their events and its blobs', async () => {
    const store = new InMemoryAgentStore();
    await store.agents.create({ agent: agentDoc('agent-a', 1) });
    await store.agents.create({ agent: agentDoc('agent-b', 1) });
    await store.runs.create({ run: runDoc('agent-a', 'run-1', 1) });
    await store.runEvents.append({ runId: 'run-1', eventType: 'message', payload: 'x' });
    await store.checkpoints.create({ agentId: 'agent-a', blobId: 'aa', data: new Uint8Array([1, 2]) });
    expect(store.stats()).toEqual({
      agents: 2,
      runs: 1,
      checkpointBlobs: 1,
      checkpointBytes: 2,
      runsWithEvents: 1,
      events: 1,
    });
    store.dropAgent('agent-a');
    store.dropAgent('agent-unknown');
    expect(store.stats()).toEqual({
      agents: 1,
      runs: 0,
      checkpointBlobs: 0,
      checkpointBytes: 0,
      runsWithEvents: 0,
      events: 0,
    });
  });
});

/** Files under `root` whose bytes contain `needle`. */
const filesContaining = async (root: string, needle: string): Promise<string[]> => {
  const found: string[] = [];
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    const bytes = await readFile(file).catch(() => Buffer.alloc(0));
    if (bytes.includes(needle)) found.push(path.relative(root, file));
  }
  return found;
};

describe('InMemoryAgentStore with the real SDK', () => {
  let env: SdkTestEnv;

  beforeAll(async () => {
    env = await startSdkTestEnv({
      heartbeatMs: 0,
      scenario: (run) => {
        run.thinking(`thinking about ${run.prompt}`);
        run.text(`reply to ${run.prompt}`);
        run.turnEnded({ inputTokens: 3, outputTokens: 2 });
      },
    });
  });

  afterAll(async () => {
    await env?.cleanup();
  });

  it('keeps a 2-turn conversation in memory only', async () => {
    const marker = `secret-${randomUUID()}`;
    const store = new InMemoryAgentStore();
    const agent = await env.sdk.Agent.create({
      model: { id: 'composer-2' },
      local: { cwd: env.workspace, store },
    });
    for (const prompt of [`${marker} first`, `${marker} second`]) {
      const run = await agent.send(prompt);
      const result = await run.wait();
      expect(result).toMatchObject({ status: 'finished', result: `reply to ${prompt}` });
    }
    await agent[Symbol.asyncDispose]();

    // The store holds the conversation: turn 2 was sent with turn 1's checkpoint.
    const [first, second] = env.backend.runRequests;
    expect(first?.conversationState).toEqual({});
    expect(second?.conversationState.turns).toHaveLength(1);
    const blobs = await Promise.all(
      (await store.checkpoints.list({ filter: { agentIds: [agent.agentId], limit: 1000 } })).items.map(
        (blobId) => store.checkpoints.get({ agentId: agent.agentId, blobId }),
      ),
    );
    expect(blobs.some((data) => data && Buffer.from(data).includes(`${marker} first`))).toBe(true);
    // Both runs finished: by default no finished run keeps its events.
    expect(store.stats()).toMatchObject({ events: 0, runsWithEvents: 0 });

    expect(await filesContaining(env.home, marker)).toEqual([]);
    expect(await filesContaining(env.workspace, marker)).toEqual([]);
  });

  it('(control) the default store does write the conversation under HOME', async () => {
    const marker = `control-${randomUUID()}`;
    const agent = await env.sdk.Agent.create({ model: { id: 'composer-2' }, local: { cwd: env.workspace } });
    const run = await agent.send(`${marker} hello`);
    expect((await run.wait()).status).toBe('finished');
    await agent[Symbol.asyncDispose]();
    expect(await filesContaining(env.home, marker)).not.toEqual([]);
  });
});
