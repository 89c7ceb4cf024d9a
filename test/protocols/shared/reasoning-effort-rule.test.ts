import { describe, expect, it } from 'vitest';

import { anthropicAdapter } from '../../../src/protocols/anthropic/anthropic-adapter.js';
import { openaiChatAdapter } from '../../../src/protocols/openai-chat/openai-chat-adapter.js';
import { openaiResponsesAdapter } from '../../../src/protocols/openai-responses/openai-responses-adapter.js';
import type { ProtocolAdapter } from '../../../src/protocols/protocol-adapter.js';
import { reasoningEffortLevels } from '../../../src/protocols/shared/read-reasoning-effort.js';

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
