/**
 * The result of a host tool call, in MCP `CallToolResult` shape. It is also exactly what `@cursor/sdk`
 * accepts as a `customTools[name].execute()` result, so the bridge can hand it over unchanged.
 */

import { isRecord } from '../lib/is-record.js';
import type { JsonObject } from './json-value.js';

/** One content block of a tool result. `data` is base64 without a `data:` prefix. */
export type ToolResultContent =
  { type: 'text'; text: string } | { type: 'image'; data: string; mimeType: string };

/** A tool result. `isError: true` reports a tool-level failure to the model (not a protocol error). */
export type ToolCallResult = {
  content: ToolResultContent[];
  isError?: boolean;
  structuredContent?: JsonObject;
};

/** Builds an `isError` result carrying one text block. */
export function createErrorResult(text: string): ToolCallResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/** Builds a successful result carrying one text block. */
export function createTextResult(text: string): ToolCallResult {
  return { content: [{ type: 'text', text }] };
}

/**
 * Narrows an MCP `CallToolResult` (whatever a peer sent) to a {@link ToolCallResult}: text and image blocks
 * pass through; other block types (audio, resources) become a text block holding their JSON, so the model
 * still sees them; a legacy `toolResult` payload becomes a text block.
 */
export function toToolCallResult(result: Record<string, unknown>): ToolCallResult {
  const blocks = Array.isArray(result.content) ? (result.content as unknown[]) : [];
  const content = blocks.map(toContent);
  if (!Array.isArray(result.content) && 'toolResult' in result) {
    content.push({ type: 'text', text: stringify(result.toolResult) });
  }
  const converted: ToolCallResult = { content };
  if (result.isError === true) converted.isError = true;
  // Results arrive as parsed JSON, so their objects hold JSON values only.
  if (isRecord(result.structuredContent)) {
    converted.structuredContent = result.structuredContent as JsonObject;
  }
  return converted;
}

function toContent(block: unknown): ToolResultContent {
  if (isRecord(block)) {
    if (block.type === 'text' && typeof block.text === 'string') return { type: 'text', text: block.text };
    if (block.type === 'image' && typeof block.data === 'string' && typeof block.mimeType === 'string') {
      return { type: 'image', data: block.data, mimeType: block.mimeType };
    }
  }
  return { type: 'text', text: stringify(block) };
}

function stringify(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
}
