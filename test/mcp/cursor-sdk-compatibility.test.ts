import { describe, expect, expectTypeOf, it } from 'vitest';
import type { SDKCustomTool, SDKCustomToolResult, SDKJsonValue, SDKToolAnnotations } from '@cursor/sdk';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { mirrorToolDefinition } from '../../mcp/mirror-tool-definition.js';
import type { MirroredTool, ToolDefinition } from '../../mcp/mirror-tool-definition.js';
import type { ParkRequest } from '../../mcp/parked-call-broker.js';
import { toToolCallResult } from '../../mcp/tool-call-result.js';
import type { ToolCallResult } from '../../mcp/tool-call-result.js';

// These contracts are checked by `tsc` (the typecheck covers test/): the broker's results must be valid
// `customTools[name].execute()` results without conversion.
describe('compatibility with @cursor/sdk customTools', () => {
  it('a ToolCallResult is an SDKCustomToolResult, and SDK execute args fit a ParkRequest', () => {
    expectTypeOf<ToolCallResult>().toExtend<SDKCustomToolResult>();
    expectTypeOf<Promise<ToolCallResult>>().toExtend<ReturnType<SDKCustomTool['execute']>>();
    expectTypeOf<Record<string, SDKJsonValue>>().toExtend<ParkRequest['args']>();
    expectTypeOf<SDKToolAnnotations>().toExtend<NonNullable<ToolDefinition['annotations']>>();
    // A mirrored tool feeds both the MCP tools/list answer and the SDK's customTools entry.
    expectTypeOf<MirroredTool>().toExtend<Tool>();
    expectTypeOf<MirroredTool['inputSchema']>().toExtend<NonNullable<SDKCustomTool['inputSchema']>>();
    expectTypeOf<NonNullable<MirroredTool['annotations']>>().toExtend<SDKToolAnnotations>();
    expectTypeOf<NonNullable<MirroredTool['annotations']>>().toExtend<NonNullable<Tool['annotations']>>();

    const result = toToolCallResult({
      content: [{ type: 'image', data: 'AAAA', mimeType: 'image/gif' }],
      structuredContent: { rows: [1, { nested: null }] },
    });
    const forSdk: SDKCustomToolResult = result;
    const mirrored = mirrorToolDefinition({ name: 'Read', inputSchema: { properties: { a: true } } });
    const customTool: SDKCustomTool = {
      inputSchema: mirrored.inputSchema,
      execute: () => forSdk,
    };
    expect(customTool.inputSchema).toEqual({ type: 'object', properties: { a: {} } });
    expect(forSdk).toEqual({
      content: [{ type: 'image', data: 'AAAA', mimeType: 'image/gif' }],
      structuredContent: { rows: [1, { nested: null }] },
    });
  });
});
