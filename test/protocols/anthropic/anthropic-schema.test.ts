import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  anthropicFunctionToolSchema,
  anthropicRequestSchema,
  anthropicToolResultBlockSchema,
  anthropicToolUseBlockSchema,
  isPlainAnthropicRequest,
  isPlainFunctionTool,
  isPlainToolResultBlock,
  isPlainToolUseBlock,
} from '../../../src/protocols/anthropic/anthropic-schema.js';

const fixtures = join(import.meta.dirname, '../../fixtures/anthropic');
const recorded = readdirSync(fixtures)
  .filter((name) => name.endsWith('.request.json'))
  .map(
    (name) =>
      [name, JSON.parse(readFileSync(join(fixtures, name), 'utf8')) as Record<string, unknown>] as const,
  );

const base = {
  model: 'claude-sonnet-4-5',
  max_tokens: 1024,
  stream: true,
  messages: [{ role: 'user', content: 'hi' }],
};

/** Every top-level field the schema checks, with values it accepts and values it refuses. */
const variants: Record<string, unknown[]> = {
  model: [undefined, 'm', '', 1, null, ['m']],
  system: [undefined, 's', [], [{ type: 'text', text: 's' }], null, 1, {}],
  messages: [
    undefined,
    [],
    [{ role: 'assistant', content: [] }],
    [{ role: 'system', content: 'x', extra: 1 }],
    [{ role: 'tool', content: 'x' }],
    [{ role: 'user' }],
    [{ role: 'user', content: null }],
    [{ role: 'user', content: {} }],
    [null],
    [['user', 'x']],
    {},
  ],
  tools: [undefined, [], [1, 'x'], null, {}],
  tool_choice: [
    undefined,
    { type: 'auto' },
    { type: 'any', disable_parallel_tool_use: true },
    { type: 'none' },
    { type: 'tool', name: 'Bash' },
    { type: 'tool' },
    { type: 'tool', name: 1 },
    { type: 'required' },
    {},
    null,
    'auto',
  ],
  thinking: [
    undefined,
    { type: 'enabled', budget_tokens: 0 },
    { type: 'adaptive', display: 'x' },
    { type: 'enabled', budget_tokens: -1 },
    { type: 'enabled', budget_tokens: 1.5 },
    { type: 'enabled', budget_tokens: 2 ** 60 },
    { type: 'enabled', budget_tokens: '1' },
    { type: 1 },
    {},
    null,
  ],
  output_config: [undefined, null, {}, { effort: null }, { effort: 'high' }, { effort: 1 }, [], 'x'],
  max_tokens: [undefined, 1, 0, -1, 1.5, 2 ** 60, '1', null],
  stream: [undefined, true, false, 'true', null],
  metadata: [undefined, null, {}, { user_id: null }, { user_id: 'u' }, { user_id: 1 }, [], 'x'],
  stop_sequences: [undefined, null, [], ['a', 'b'], ['a', 1], 'a', {}],
};

const withField = (body: Record<string, unknown>, field: string, value: unknown): Record<string, unknown> => {
  const copy: Record<string, unknown> = { ...body };
  if (value === undefined) delete copy[field];
  else copy[field] = value;
  return copy;
};

describe('isPlainAnthropicRequest', () => {
  it('never accepts a body the request schema refuses, and accepts every body of one refused field less', () => {
    let accepted = 0;
    for (const body of [base, ...recorded.map(([, request]) => request)]) {
      for (const [field, values] of Object.entries(variants)) {
        for (const value of values) {
          const candidate = withField(body, field, value);
          const valid = anthropicRequestSchema.safeParse(candidate).success;
          expect({ field, value, plain: isPlainAnthropicRequest(candidate) }).toEqual({
            field,
            value,
            plain: valid,
          });
          if (valid) accepted += 1;
        }
      }
    }
    expect(accepted).toBeGreaterThan(100);
  });

  it('takes the recorded clients’ requests', () => {
    for (const [name, request] of recorded)
      expect({ name, plain: isPlainAnthropicRequest(request) }).toEqual({ name, plain: true });
  });

  it('refuses what is not an object', () => {
    for (const body of [null, [], 'x', 1, true]) expect(isPlainAnthropicRequest(body)).toBe(false);
  });
});

/** Every field variant of `base` (one field changed or removed at a time), and the values that are no object. */
const variantsOf = (base: Record<string, unknown>, fields: Record<string, unknown[]>): unknown[] => [
  base,
  null,
  [],
  'x',
  ...Object.entries(fields).flatMap(([field, values]) =>
    values.map((value) => withField(base, field, value)),
  ),
];

const agreesWithSchema = (
  guard: (value: unknown) => boolean,
  schema: z.ZodType,
  candidates: unknown[],
): void => {
  for (const candidate of candidates) {
    expect({ candidate, plain: guard(candidate) }).toEqual({
      candidate,
      plain: schema.safeParse(candidate).success,
    });
  }
};

describe('the block and tool fast checks', () => {
  it('isPlainToolUseBlock accepts exactly what its schema accepts', () => {
    agreesWithSchema(
      isPlainToolUseBlock,
      anthropicToolUseBlockSchema,
      variantsOf(
        { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls' }, cache_control: {} },
        {
          type: [undefined, 'text', 1],
          id: [undefined, 1, null, ''],
          name: [undefined, 1, null],
          input: [undefined, null, '{"a":1}', [], 1],
        },
      ),
    );
  });

  it('isPlainToolResultBlock accepts exactly what its schema accepts', () => {
    agreesWithSchema(
      isPlainToolResultBlock,
      anthropicToolResultBlockSchema,
      variantsOf(
        { type: 'tool_result', tool_use_id: 'toolu_1', content: 'ok', is_error: false },
        {
          type: [undefined, 'tool_use'],
          tool_use_id: [undefined, 1, null],
          content: [undefined, '', [], [{ type: 'text', text: 'x' }], null, 1, {}],
          is_error: [undefined, null, true, 'true', 0],
        },
      ),
    );
  });

  it('isPlainFunctionTool accepts exactly what its schema accepts', () => {
    agreesWithSchema(
      isPlainFunctionTool,
      anthropicFunctionToolSchema,
      variantsOf(
        { name: 'Bash', description: 'Run', input_schema: { type: 'object' }, defer_loading: true },
        {
          name: [undefined, 1, null],
          description: [undefined, '', null, 1],
          input_schema: [undefined, {}, null, [], 'x', { properties: { a: { type: 'string' } } }],
          type: [undefined, null, 'custom', 'web_search_20250305', 1],
        },
      ),
    );
  });
});
