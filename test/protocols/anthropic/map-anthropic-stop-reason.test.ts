import { describe, expect, it } from 'vitest';

import { mapAnthropicStopReason } from '../../../src/protocols/anthropic/map-anthropic-stop-reason.js';

describe('mapAnthropicStopReason', () => {
  it.each([
    ['end', 'end_turn'],
    ['tool-use', 'tool_use'],
    ['max-tokens', 'max_tokens'],
    ['refusal', 'refusal'],
  ] as const)('%s → %s', (stopReason, expected) => {
    expect(mapAnthropicStopReason(stopReason)).toBe(expected);
  });
});
