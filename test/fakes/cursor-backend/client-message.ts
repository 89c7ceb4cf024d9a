/**
 * Decoding of `agent.v1.AgentClientMessage` (what the SDK appends through BidiAppend) into a small
 * tagged union. Messages are read through their proto3 JSON form (`toJson()`), validated loosely.
 */

import { z } from 'zod';

import type { ProtoRegistry } from './sdk-proto-registry.js';

/** A JSON object as produced by protobuf `toJson()`. */
export type JsonObject = Record<string, unknown>;

/** A client message, decoded. */
export type ClientMessage =
  | { kind: 'run-request'; runRequest: JsonObject }
  /** `execClientMessage` answering exec `id`; `mcpResult` is the proto3 JSON of `agent.v1.McpResult`. */
  | { kind: 'exec-result'; id: number; mcpResult: JsonObject | undefined; json: JsonObject }
  | { kind: 'exec-control'; id: number; control: 'heartbeat' | 'stream-close' | 'throw'; error?: string }
  | { kind: 'kv-result'; id: number; blobData?: Uint8Array; error?: unknown }
  /** `interactionResponse` answering interaction query `id`; `json` is its proto3 JSON (the result case). */
  | { kind: 'interaction-response'; id: number; json: JsonObject }
  | { kind: 'client-heartbeat' }
  | { kind: 'other'; name: string; json: JsonObject };

const idSchema = z.number().int().nonnegative().catch(0);

const clientMessageSchema = z.looseObject({
  runRequest: z.looseObject({}).optional(),
  execClientMessage: z
    .looseObject({ id: idSchema.optional(), mcpResult: z.looseObject({}).optional() })
    .optional(),
  execClientControlMessage: z
    .looseObject({
      heartbeat: z.looseObject({ id: idSchema.optional() }).optional(),
      streamClose: z.looseObject({ id: idSchema.optional() }).optional(),
      throw: z.looseObject({ id: idSchema.optional(), error: z.string().optional() }).optional(),
    })
    .optional(),
  kvClientMessage: z
    .looseObject({
      id: idSchema.optional(),
      getBlobResult: z
        .looseObject({ blobData: z.string().optional(), error: z.unknown().optional() })
        .optional(),
      setBlobResult: z.looseObject({ error: z.unknown().optional() }).optional(),
    })
    .optional(),
  clientHeartbeat: z.unknown().optional(),
  interactionResponse: z.looseObject({ id: idSchema.optional() }).optional(),
});

/** Decodes one binary `AgentClientMessage`. */
export const decodeClientMessage = (registry: ProtoRegistry, bytes: Uint8Array): ClientMessage => {
  const json = registry.get('agent.v1.AgentClientMessage').fromBinary(bytes).toJson();
  const parsed = clientMessageSchema.safeParse(json);
  if (!parsed.success) return { kind: 'other', name: 'invalid', json: { json, issues: parsed.error.issues } };
  const message = parsed.data;
  if (message.runRequest) return { kind: 'run-request', runRequest: message.runRequest };
  if (message.execClientMessage) {
    return {
      kind: 'exec-result',
      id: message.execClientMessage.id ?? 0,
      mcpResult: message.execClientMessage.mcpResult,
      json: message.execClientMessage,
    };
  }
  const control = message.execClientControlMessage;
  if (control?.heartbeat)
    return { kind: 'exec-control', id: control.heartbeat.id ?? 0, control: 'heartbeat' };
  if (control?.streamClose)
    return { kind: 'exec-control', id: control.streamClose.id ?? 0, control: 'stream-close' };
  if (control?.throw) {
    return {
      kind: 'exec-control',
      id: control.throw.id ?? 0,
      control: 'throw',
      ...(control.throw.error === undefined ? {} : { error: control.throw.error }),
    };
  }
  const kv = message.kvClientMessage;
  if (kv) {
    const result = kv.getBlobResult ?? kv.setBlobResult;
    const blobData = kv.getBlobResult?.blobData;
    return {
      kind: 'kv-result',
      id: kv.id ?? 0,
      ...(blobData === undefined ? {} : { blobData: new Uint8Array(Buffer.from(blobData, 'base64')) }),
      ...(result?.error === undefined ? {} : { error: result.error }),
    };
  }
  if (message.clientHeartbeat !== undefined) return { kind: 'client-heartbeat' };
  if (message.interactionResponse) {
    const { id, ...json } = message.interactionResponse;
    return { kind: 'interaction-response', id: id ?? 0, json };
  }
  const name = Object.keys(message)[0] ?? 'empty';
  const value = message[name];
  return {
    kind: 'other',
    name,
    json: typeof value === 'object' && value !== null ? (value as JsonObject) : {},
  };
};
