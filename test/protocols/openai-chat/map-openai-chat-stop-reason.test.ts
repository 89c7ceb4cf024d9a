import { describe, expect, it } from 'vitest';
import { mapOpenaiChatStopReason } from '../../../src/protocols/openai-chat/map-openai-chat-stop-reason.js';

describe('mapOpenaiChatStopReason', () => {
  it.each([
    ['end', 'stop'],
    ['tool-use', 'tool_calls'],
    ['max-tokens', 'length'],
    ['refusal', 'content_filter'],
  ] as const)('%s → %s', (stopReason, finishReason) => {
    expect(mapOpenaiChatStopReason(stopReason)).toBe(finishReason);
  });
});
