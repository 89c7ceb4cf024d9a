import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import {
  decodeEnvelopes,
  encodeEndStreamEnvelope,
  encodeMessageEnvelope,
} from './cursor-backend/connect-envelope.js';
import type { ClientMessage } from './cursor-backend/client-message.js';
import { decodeClientMessage } from './cursor-backend/client-message.js';
import { FakeRun } from './cursor-backend/fake-run.js';
import { FakeStream } from './cursor-backend/fake-stream.js';
import { FakeExecAbortedError, FakeStreamClosedError } from './cursor-backend/run-context.js';
import { ensurePatchedSdkCopy, loadSdkProtoRegistry } from './cursor-backend/sdk-proto-registry.js';

describe('Connect envelopes', () => {
  it('frames messages and skips the end-of-stream trailer when decoding', () => {
    const body = Buffer.concat([
      encodeMessageEnvelope(new Uint8Array([1, 2])),
      encodeMessageEnvelope(new Uint8Array([])),
      encodeEndStreamEnvelope({ code: 'internal', message: 'x' }),
    ]);
    expect(decodeEnvelopes(body).map((payload) => [...payload])).toEqual([[1, 2], []]);
    const trailer = encodeEndStreamEnvelope({ code: 'unavailable', message: 'down' });
    expect(trailer.readUInt8(0)).toBe(2);
    expect(JSON.parse(trailer.subarray(5).toString())).toEqual({
      error: { code: 'unavailable', message: 'down' },
    });
    expect(encodeEndStreamEnvelope().subarray(5).toString()).toBe('{}');
  });

  it('rejects a truncated envelope', () => {
    const frame = encodeMessageEnvelope(new Uint8Array([1, 2, 3]));
    expect(() => decodeEnvelopes(frame.subarray(0, 7))).toThrow(/Truncated/);
  });
});

describe('SDK protobuf registry from the patched copy', () => {
  const scratch: string[] = [];
  afterAll(async () => {
    for (const dir of scratch) await rm(dir, { recursive: true, force: true });
  });

  it('builds the patched copy once when several callers race, leaving no temp dirs', async () => {
    const cacheRoot = await mkdtemp(path.join(tmpdir(), 'sdk-patch-cache-'));
    scratch.push(cacheRoot);
    const entries = await Promise.all([1, 2, 3].map(() => ensurePatchedSdkCopy(cacheRoot)));
    expect(new Set(entries).size).toBe(1);
    expect(await readdir(cacheRoot)).toEqual([expect.stringMatching(/^cursor-sdk-1\.0\.32-[0-9a-f]{12}$/)]);
    const source = await readFile(entries[0] ?? '', 'utf8');
    expect(source.endsWith('\nexport const __wpRequire=K;\n')).toBe(true);
    expect(source.match(/export const __wpRequire=K;/g)).toHaveLength(1);
    // Idempotent: a later call reuses the copy.
    expect(await ensurePatchedSdkCopy(cacheRoot)).toBe(entries[0]);
  }, 20_000);

  it('exposes the agent protocol messages and round-trips them through proto3 JSON', async () => {
    const registry = await loadSdkProtoRegistry();
    expect(registry.size).toBeGreaterThan(3000);
    for (const typeName of [
      'agent.v1.AgentServerMessage',
      'agent.v1.AgentClientMessage',
      'agent.v1.ToolRequestsListedUpdate',
      'agent.v1.ConversationStateStructure',
      'aiserver.v1.BidiAppendRequest',
    ]) {
      expect(registry.has(typeName)).toBe(true);
    }
    expect(() => registry.get('agent.v1.NoSuchMessage')).toThrow(/no protobuf type agent.v1.NoSuchMessage/);

    const client = registry.get('agent.v1.AgentClientMessage');
    const bytes = client
      .fromJson({
        execClientMessage: { id: 3, mcpResult: { success: { content: [{ text: { text: 'hi' } }] } } },
      })
      .toBinary();
    expect(decodeClientMessage(registry, bytes)).toEqual({
      kind: 'exec-result',
      id: 3,
      mcpResult: { success: { content: [{ text: { text: 'hi' } }] } },
      json: { id: 3, mcpResult: { success: { content: [{ text: { text: 'hi' } }] } } },
    });
    const kv = client
      .fromJson({ kvClientMessage: { id: 2, getBlobResult: { blobData: 'AQI=' } } })
      .toBinary();
    expect(decodeClientMessage(registry, kv)).toEqual({
      kind: 'kv-result',
      id: 2,
      blobData: new Uint8Array([1, 2]),
    });
    const server = registry.get('agent.v1.AgentServerMessage');
    const update = { interactionUpdate: { toolRequestsListed: { callCount: 2 } } };
    expect(server.fromBinary(server.fromJson(update).toBinary()).toJson()).toEqual(update);
  });
});

describe('FakeStream', () => {
  it('dispatches BidiAppend messages in append_seqno order, only once the RunSSE response is attached', async () => {
    const registry = await loadSdkProtoRegistry();
    const stream = new FakeStream('request-1', registry);
    const seen: string[] = [];
    stream.onMessage((message) => seen.push(message.kind === 'other' ? message.name : message.kind));
    const message = (name: string): ClientMessage => ({ kind: 'other', name, json: {} });
    stream.receive(1, message('second'));
    stream.receive(0, message('first'));
    stream.receive(3, message('fourth'));
    stream.receive(2, { kind: 'client-heartbeat' });
    expect(seen).toEqual([]);
    const written: Buffer[] = [];
    const response = {
      writeHead: () => response,
      flushHeaders: () => undefined,
      on: () => response,
      write: (chunk: Buffer) => written.push(chunk),
      end: (chunk: Buffer) => written.push(chunk),
    };
    stream.attach(response as unknown as ServerResponse, 0);
    expect(seen).toEqual(['first', 'second', 'fourth']);
    expect(stream.clientHeartbeats).toBe(1);
    stream.send({ interactionUpdate: { textDelta: { text: 'hi' } } });
    stream.end();
    stream.send({ interactionUpdate: { textDelta: { text: 'late' } } });
    expect(stream.open).toBe(false);
    expect(stream.signal.aborted).toBe(true);
    expect(written).toHaveLength(2);
    expect(written[1]?.readUInt8(0)).toBe(2);
  });
});

describe('FakeRun.exec', () => {
  it('sends the exec case, resolves with the whole answer, and rejects on a throw or a closed stream', async () => {
    const registry = await loadSdkProtoRegistry();
    const stream = new FakeStream('request-exec', registry);
    const written: Buffer[] = [];
    const response = {
      writeHead: () => response,
      flushHeaders: () => undefined,
      on: () => response,
      write: (chunk: Buffer) => written.push(chunk),
      end: (chunk: Buffer) => written.push(chunk),
    };
    stream.attach(response as unknown as ServerResponse, 0);
    const run = new FakeRun({
      registry,
      stream,
      request: {
        index: 0,
        requestId: 'request-exec',
        runId: 'request-exec',
        conversationId: '',
        actionKind: 'userMessageAction',
        text: 'x',
        images: [],
        mcpTools: [],
        conversationState: {},
        json: {},
      },
      checkpoints: false,
      nextCallNumber: () => 1,
    });
    const sent = (index: number): unknown =>
      registry
        .get('agent.v1.AgentServerMessage')
        .fromBinary(decodeEnvelopes(written[index] ?? Buffer.alloc(0))[0] ?? new Uint8Array())
        .toJson();

    const read = run.exec('readArgs', { path: '/etc/hostname', toolCallId: 'r1' });
    const shell = run.exec('shellArgs', { command: 'ls' });
    expect(sent(0)).toEqual({
      execServerMessage: { id: 1, execId: 'exec-1', readArgs: { path: '/etc/hostname', toolCallId: 'r1' } },
    });
    expect(sent(1)).toEqual({ execServerMessage: { id: 2, execId: 'exec-2', shellArgs: { command: 'ls' } } });
    await expect(run.exec('noSuchArgs', {})).rejects.toThrow(/noSuchArgs/);
    expect(written).toHaveLength(2);

    // Heartbeats do not settle; answers are matched by id, whatever the order.
    run.handleClientMessage({ kind: 'exec-control', id: 1, control: 'heartbeat' });
    run.handleClientMessage({ kind: 'exec-control', id: 2, control: 'throw', error: 'boom' });
    const answer = { id: 1, readResult: { rejected: { path: '/etc/hostname', reason: 'no' } } };
    run.handleClientMessage({ kind: 'exec-result', id: 1, mcpResult: undefined, json: answer });
    await expect(read).resolves.toEqual(answer);
    await expect(shell).rejects.toBeInstanceOf(FakeExecAbortedError);
    await expect(shell).rejects.toThrow('exec 2 ended by the SDK with throw: boom');

    const pending = run.exec('lsArgs', { path: '/' });
    stream.end();
    await expect(pending).rejects.toBeInstanceOf(FakeStreamClosedError);
    await expect(run.exec('lsArgs', { path: '/' })).rejects.toBeInstanceOf(FakeStreamClosedError);
  });
});
