import { describe, expect, it } from 'vitest';
import { mapOpenaiResponsesStopReason } from '../../../src/protocols/openai-responses/map-openai-responses-stop-reason.js';

describe('mapOpenaiResponsesStopReason', () => {
  it.each([
    ['end', { status: 'completed', event: 'response.completed' }],
    ['tool-use', { status: 'completed', event: 'response.completed' }],
    ['max-tokens', { status: 'incomplete', event: 'response.incomplete', reason: 'max_output_tokens' }],
    ['refusal', { status: 'incomplete', event: 'response.incomplete', reason: 'content_filter' }],
  ] as const)('maps %s', (stopReason, expected) => {
    expect(mapOpenaiResponsesStopReason(stopReason)).toEqual(expected);
  });
});
