import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLazyJsonSchemaValidator } from '../../mcp/lazy-json-schema-validator.js';
import { createMcpFixture, until } from '../helpers/mcp/mcp-fixture.js';
import type { McpFixture } from '../helpers/mcp/mcp-fixture.js';

const pointSchema = {
  type: 'object',
  properties: { x: { type: 'number' } },
  required: ['x'],
} as const;

let fixture: McpFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

describe('createLazyJsonSchemaValidator', () => {
  it('builds its validator on the first getValidator only, then reuses it', () => {
    const create = vi.fn(() => new AjvJsonSchemaValidator());
    const lazy = createLazyJsonSchemaValidator(create);
    expect(create).not.toHaveBeenCalled();
    const check = lazy.getValidator(pointSchema);
    lazy.getValidator({ type: 'string' });
    expect(create).toHaveBeenCalledTimes(1);
    expect(check({ x: 1 })).toEqual({ valid: true, data: { x: 1 }, errorMessage: undefined });
    expect(check({ x: 'one' })).toMatchObject({
      valid: false,
      errorMessage: expect.stringContaining('number'),
    });
  });

  it('defaults to the MCP SDK Ajv validator, formats included', () => {
    const check = createLazyJsonSchemaValidator().getValidator({ type: 'string', format: 'email' });
    expect(check('someone@example.com').valid).toBe(true);
    expect(check('not an address').valid).toBe(false);
  });

  it("the in-process client still enforces a tool's outputSchema after tools/list", async () => {
    fixture = await createMcpFixture({
      tools: [{ name: 'Locate', inputSchema: { type: 'object' }, outputSchema: pointSchema }],
    });
    const { client, broker, announced } = fixture;
    await client.listTools();
    const good = client.callTool('Locate', {}, 'toolu_good');
    const bad = client.callTool('Locate', {}, 'toolu_bad').catch((error: unknown) => error);
    await until(() => announced.length === 2);
    broker.resolve('toolu_good', { content: [], structuredContent: { x: 2 } });
    broker.resolve('toolu_bad', { content: [], structuredContent: { x: 'two' } });
    expect(await good).toMatchObject({ structuredContent: { x: 2 } });
    expect(await bad).toMatchObject({
      message: expect.stringMatching(/does not match the tool's output schema/),
    });
  });
});
