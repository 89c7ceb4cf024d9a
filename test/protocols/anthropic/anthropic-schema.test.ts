import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  anthropicRequestSchema,
  isPlainAnthropicRequest,
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
