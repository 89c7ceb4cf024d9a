/**
 * JSON Schema tool definitions (as clients send them) → mirrored MCP tools.
 *
 * Arguments are never validated against the schema (the client validates; calls pass through), so the
 * schema only has to satisfy MCP's own `Tool` shape, which `Client.listTools()` enforces on the other end:
 * root `type: "object"`, `properties` an object of object schemas, `required` a string array. Everything
 * else is kept, `$schema` included (SDK 1.32 accepts it; it tells peers the draft when it is not 2020-12).
 * The mirrored types are also valid `@cursor/sdk` `customTools` fields (`inputSchema`, `annotations`).
 */

import { isRecord } from '../lib/is-record.js';
import type { JsonObject, JsonValue } from './json-value.js';

/** MCP tool annotations (behaviour hints), exact-optional so they also fit `SDKToolAnnotations`. */
export type ToolAnnotations = {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
};

/** A host tool as the bridge knows it; `TurnTool` from the neutral model fits this shape. */
export type ToolDefinition = {
  name: string;
  /** A display name (MCP `Tool.title`). */
  title?: string;
  description?: string;
  /** JSON Schema of the arguments object. Anything that is not an object becomes `{type:"object"}`. */
  inputSchema?: Record<string, unknown>;
  /** JSON Schema of the tool's `structuredContent` (MCP `Tool.outputSchema`); dropped unless an object schema. */
  outputSchema?: Record<string, unknown>;
  annotations?: ToolAnnotations;
};

/** An MCP tool input schema: an object schema, other JSON Schema keywords kept as given. */
export type McpInputSchema = {
  [keyword: string]: JsonValue;
  type: 'object';
  properties: Record<string, JsonObject>;
};

/** A mirrored tool: an MCP `Tool` as listed by `tools/list`. */
export type MirroredTool = {
  name: string;
  title?: string;
  description?: string;
  inputSchema: McpInputSchema;
  outputSchema?: McpInputSchema;
  annotations?: ToolAnnotations;
};

const ANNOTATION_FLAGS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const;

/** Converts one definition. Unknown keys on the definition itself are dropped. */
export function mirrorToolDefinition(definition: ToolDefinition): MirroredTool {
  const tool: MirroredTool = {
    name: definition.name,
    inputSchema: normalizeInputSchema(definition.inputSchema),
  };
  if (typeof definition.title === 'string') tool.title = definition.title;
  if (typeof definition.description === 'string') tool.description = definition.description;
  // MCP requires an output schema to be an object schema; anything else would fail the peer's listTools.
  if (isRecord(definition.outputSchema) && definition.outputSchema.type === 'object') {
    tool.outputSchema = normalizeInputSchema(definition.outputSchema);
  }
  const annotations = normalizeAnnotations(definition.annotations);
  if (annotations) tool.annotations = annotations;
  return tool;
}

/**
 * Makes any JSON Schema acceptable as an MCP tool input schema. A root `type` other than `"object"`
 * (including `["object","null"]`) becomes `"object"`: MCP tool arguments are always an object.
 * Boolean property schemas become their object forms (`true` → `{}`, `false` → `{not:{}}`); a `required`
 * that is not an array is dropped, and its non-string entries are.
 */
export function normalizeInputSchema(schema: unknown): McpInputSchema {
  // Schemas arrive as parsed JSON, so their values are JSON values.
  const source = (isRecord(schema) ? schema : {}) as JsonObject;
  const { required, properties, ...rest } = source;
  const normalized: McpInputSchema = { ...rest, type: 'object', properties: normalizeProperties(properties) };
  if (Array.isArray(required)) {
    normalized.required = required.filter((name): name is string => typeof name === 'string');
  }
  return normalized;
}

function normalizeProperties(properties: JsonValue | undefined): Record<string, JsonObject> {
  if (!isRecord(properties)) return {};
  const normalized: Record<string, JsonObject> = {};
  for (const [name, schema] of Object.entries(properties)) {
    normalized[name] = isRecord(schema) ? schema : schema === false ? { not: {} } : {};
  }
  return normalized;
}

/** Keeps only the annotation fields MCP defines, with the right types (a wrong one fails `listTools`). */
function normalizeAnnotations(annotations: unknown): ToolAnnotations | undefined {
  if (!isRecord(annotations)) return undefined;
  const normalized: ToolAnnotations = {};
  if (typeof annotations.title === 'string') normalized.title = annotations.title;
  for (const flag of ANNOTATION_FLAGS) {
    const value = annotations[flag];
    if (typeof value === 'boolean') normalized[flag] = value;
  }
  return Object.keys(normalized).length > 0 ? normalized : undefined;
}
