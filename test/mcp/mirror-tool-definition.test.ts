import { describe, expect, it } from 'vitest';
import { ListToolsResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { mirrorToolDefinition, normalizeInputSchema } from '../../mcp/mirror-tool-definition.js';

describe('normalizeInputSchema', () => {
  it('keeps a well-formed object schema, $schema and unknown keywords included', () => {
    const schema = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { path: { type: 'string', description: 'file' } },
      required: ['path'],
      additionalProperties: false,
    };
    expect(normalizeInputSchema(schema)).toEqual(schema);
  });

  it('adds type and properties when missing', () => {
    expect(normalizeInputSchema({})).toEqual({ type: 'object', properties: {} });
    expect(normalizeInputSchema({ anyOf: [{ required: ['a'] }] })).toEqual({
      anyOf: [{ required: ['a'] }],
      type: 'object',
      properties: {},
    });
  });

  it('replaces a non-object root type and non-object inputs', () => {
    expect(normalizeInputSchema({ type: ['object', 'null'], properties: {} })).toEqual({
      type: 'object',
      properties: {},
    });
    expect(normalizeInputSchema(undefined)).toEqual({ type: 'object', properties: {} });
    expect(normalizeInputSchema(null)).toEqual({ type: 'object', properties: {} });
    expect(normalizeInputSchema([1, 2])).toEqual({ type: 'object', properties: {} });
    expect(normalizeInputSchema(true)).toEqual({ type: 'object', properties: {} });
  });

  it('turns boolean and garbage property schemas into objects and filters required', () => {
    const normalized = normalizeInputSchema({
      type: 'object',
      properties: { any: true, never: false, odd: 3, ok: { type: 'number' } },
      required: ['ok', 7, null],
    });
    expect(normalized).toEqual({
      type: 'object',
      properties: { any: {}, never: { not: {} }, odd: {}, ok: { type: 'number' } },
      required: ['ok'],
    });
  });

  it('drops a required that is not an array and properties that are not an object', () => {
    expect(normalizeInputSchema({ type: 'object', properties: 'x', required: 'a' })).toEqual({
      type: 'object',
      properties: {},
    });
  });

  it('produces schemas that the MCP ListToolsResult schema accepts', () => {
    const inputs: unknown[] = [undefined, { type: 'string' }, { properties: { a: true } }, { required: 'x' }];
    const tools = inputs.map((schema, index) => ({
      name: `t${index}`,
      inputSchema: normalizeInputSchema(schema),
    }));
    expect(ListToolsResultSchema.safeParse({ tools }).success).toBe(true);
    // Control: the raw inputs are rejected, so the assertion above can fail.
    const raw = inputs.map((schema, index) => ({ name: `t${index}`, inputSchema: schema }));
    expect(ListToolsResultSchema.safeParse({ tools: raw }).success).toBe(false);
  });
});

describe('mirrorToolDefinition', () => {
  it('keeps name, description and valid annotations only', () => {
    const tool = mirrorToolDefinition({
      name: 'Bash',
      description: 'Run a command',
      inputSchema: { type: 'object', properties: { command: { type: 'string' } } },
      annotations: { title: 'Shell', readOnlyHint: false, destructiveHint: 'yes' as unknown as boolean },
    });
    expect(tool).toEqual({
      name: 'Bash',
      description: 'Run a command',
      inputSchema: { type: 'object', properties: { command: { type: 'string' } } },
      annotations: { title: 'Shell', readOnlyHint: false },
    });
  });

  it('omits description and annotations when absent or empty', () => {
    const tool = mirrorToolDefinition({
      name: 'noop',
      annotations: { readOnlyHint: 'x' as unknown as boolean },
    });
    expect(tool).toEqual({ name: 'noop', inputSchema: { type: 'object', properties: {} } });
  });

  it('ignores extra fields clients put on tools (kind, cache_control, defer_loading)', () => {
    const definition = {
      name: 'Read',
      kind: 'function',
      cache_control: { type: 'ephemeral' },
      inputSchema: {},
    };
    expect(mirrorToolDefinition(definition)).toEqual({
      name: 'Read',
      inputSchema: { type: 'object', properties: {} },
    });
  });
});
