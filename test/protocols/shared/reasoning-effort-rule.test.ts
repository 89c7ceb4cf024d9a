import { describe, expect, it } from 'vitest';

import { anthropicAdapter } from '../../../src/protocols/anthropic/anthropic-adapter.js';
import { openaiChatAdapter } from '../../../src/protocols/openai-chat/openai-chat-adapter.js';
import { openaiResponsesAdapter } from '../../../src/protocols/openai-responses/openai-responses-adapter.js';
import type { ProtocolAdapter } from '../../../src/protocols/protocol-adapter.js';
import { reasoningEffortLevels } from '../../../src/protocols/shared/read-reasoning-effort.js';
import { resolveTurnReasoning } from '../../../src/protocols/shared/resolve-turn-reasoning.js';

/** One request per protocol asking for `effort` in the protocol's own field, plus that field's path. */
const protocols: Array<{
  adapter: ProtocolAdapter;
  param: string;
  body: (effort: string) => Record<string, unknown>;
}> = [
  {
    adapter: anthropicAdapter,
    param: 'output_config.effort',
    body: (effort) => ({
      model: 'claude-opus-4-8',
      max_tokens: 1024,
      messages: [{ role: 'user', content: 'hi' }],
      output_config: { effort },
    }),
  },
  {
    adapter: openaiChatAdapter,
    param: 'reasoning_effort',
    body: (effort) => ({
      model: 'gpt-5.5',
      messages: [{ role: 'user', content: 'hi' }],
      reasoning_effort: effort,
    }),
  },
  {
    adapter: openaiChatAdapter,
    param: 'reasoning.effort',
    body: (effort) => ({
      model: 'gpt-5.5',
      messages: [{ role: 'user', content: 'hi' }],
      reasoning: { effort },
    }),
  },
  {
    adapter: openaiResponsesAdapter,
    param: 'reasoning.effort',
    body: (effort) => ({ model: 'gpt-5.5', input: 'hi', reasoning: { effort } }),
  },
];

describe('reasoning effort: one rule on every protocol', () => {
  describe.each(protocols)('$adapter.protocol $param', ({ adapter, param, body }) => {
    it('answers an unknown level with a 400 naming the field and the accepted levels', () => {
      const result = adapter.parseRequest(body('ultra'), {});
      expect(result.ok).toBe(false);
      if (result.ok) return;
      expect(result.error).toMatchObject({ kind: 'invalid-request', param, retryable: false });
      expect(result.error.message).toContain(`${param}: unknown reasoning effort "ultra"`);
      expect(result.error.message).toContain(reasoningEffortLevels.join(', '));
      expect(adapter.createErrorResponse(result.error).status).toBe(400);
    });

    it.each(reasoningEffortLevels.filter((level) => level !== 'none'))(
      'requests reasoning at %s',
      (level) => {
        const result = adapter.parseRequest(body(level), {});
        expect(result.ok && result.value.reasoning).toEqual({ requested: true, effort: level });
        expect(result.ok && result.value.warnings).toEqual([]);
      },
    );

    it('reads none as no reasoning', () => {
      const result = adapter.parseRequest(body('none'), {});
      expect(result.ok && result.value.reasoning).toEqual({ requested: false });
    });
  });
});

/**
 * The three reasoning cases: no reasoning requested (no thinking / effort / reasoning, effort none, or
 * thinking disabled), reasoning with an effort, and reasoning without an effort (e.g. Anthropic adaptive
 * thinking: the catalog default variant's effort). One request shape per row, in each protocol's own fields.
 */
const reasoningShapes: Array<{
  adapter: ProtocolAdapter;
  fields: Record<string, unknown>;
  expected: { requested: boolean; effort?: string };
}> = [
  { adapter: anthropicAdapter, fields: {}, expected: { requested: false } },
  { adapter: anthropicAdapter, fields: { thinking: { type: 'disabled' } }, expected: { requested: false } },
  {
    adapter: anthropicAdapter,
    fields: { thinking: { type: 'adaptive' }, output_config: { effort: 'none' } },
    expected: { requested: false },
  },
  { adapter: anthropicAdapter, fields: { thinking: { type: 'adaptive' } }, expected: { requested: true } },
  {
    adapter: anthropicAdapter,
    fields: { output_config: { effort: 'high' } },
    expected: { requested: true, effort: 'high' },
  },
  { adapter: openaiChatAdapter, fields: {}, expected: { requested: false } },
  { adapter: openaiChatAdapter, fields: { reasoning: { enabled: false } }, expected: { requested: false } },
  { adapter: openaiChatAdapter, fields: { reasoning_effort: 'none' }, expected: { requested: false } },
  { adapter: openaiChatAdapter, fields: { reasoning: {} }, expected: { requested: true } },
  {
    adapter: openaiChatAdapter,
    fields: { reasoning_effort: 'high' },
    expected: { requested: true, effort: 'high' },
  },
  { adapter: openaiResponsesAdapter, fields: {}, expected: { requested: false } },
  {
    adapter: openaiResponsesAdapter,
    fields: { reasoning: { effort: 'none', summary: 'auto' } },
    expected: { requested: false },
  },
  {
    adapter: openaiResponsesAdapter,
    fields: { reasoning: { summary: 'auto' } },
    expected: { requested: true },
  },
  { adapter: openaiResponsesAdapter, fields: { reasoning: {} }, expected: { requested: true } },
  {
    adapter: openaiResponsesAdapter,
    fields: { reasoning: { effort: 'high', summary: 'auto' } },
    expected: { requested: true, effort: 'high' },
  },
];

const minimalBody: Record<ProtocolAdapter['protocol'], Record<string, unknown>> = {
  anthropic: { model: 'm', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
  'openai-chat': { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
  'openai-responses': { model: 'm', input: 'hi' },
};

describe('reasoning: one rule on every protocol (off / with an effort / without an effort)', () => {
  it.each(reasoningShapes)('$adapter.protocol $fields → $expected', ({ adapter, fields, expected }) => {
    const result = adapter.parseRequest({ ...minimalBody[adapter.protocol], ...fields }, {});
    expect(result.ok && result.value.reasoning).toEqual(expected);
    expect(result.ok && result.value.warnings).toEqual([]);
  });

  it.each([
    ['absent', undefined, { requested: false }],
    ['absent', 'none', { requested: false }],
    ['absent', 'low', { requested: true, effort: 'low' }],
    ['on', undefined, { requested: true }],
    ['on', 'none', { requested: false }],
    ['on', 'max', { requested: true, effort: 'max' }],
    ['off', undefined, { requested: false }],
    ['off', 'none', { requested: false }],
    ['off', 'high', { requested: false }],
  ] as const)('resolveTurnReasoning: setting %s, effort %s → %j', (setting, effort, expected) => {
    expect(resolveTurnReasoning({ setting, effort })).toEqual(expected);
  });
});
