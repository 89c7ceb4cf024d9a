import type { ResponseMeta } from '../../../src/protocols/protocol-adapter.js';
import type { SseFrame } from '../../../src/protocols/sse-frame.js';
import { OpenaiResponsesStreamEncoder } from '../../../src/protocols/openai-responses/turn-to-openai-responses-events.js';
import type { TurnEvent } from '../../../src/turn/turn-event.js';
import type { TurnRequest } from '../../../src/turn/turn-request.js';
import type { TurnUsage } from '../../../src/turn/turn-usage.js';
import { createTestTurnRequest } from './create-test-turn-request.js';
import { runStreamEncoder } from './run-stream-encoder.js';
import { reasoningEvents, textEvents, toolCallEvents } from './turn-event-builders.js';

/** Shared fixtures for the Responses encoder tests. */
export const testMeta: ResponseMeta = { id: 'resp_test1', model: 'gpt-5.5', createdAt: 1_790_000_000 };

export const testUsage: TurnUsage = {
  inputTokens: 100,
  outputTokens: 40,
  cacheReadTokens: 20,
  cacheWriteTokens: 5,
  reasoningTokens: 12,
};

/** start() + every event + end(), as the server drives an encoder. */
export const encodeTurnEvents = (
  events: readonly TurnEvent[],
  request: TurnRequest = createTestTurnRequest(),
  meta: ResponseMeta = testMeta,
): SseFrame[] => runStreamEncoder(new OpenaiResponsesStreamEncoder(request, meta), events);

/** The parsed `data` of every event frame. */
export const frameData = (frames: readonly SseFrame[]): Record<string, unknown>[] =>
  frames.flatMap((frame) => ('data' in frame ? [JSON.parse(frame.data) as Record<string, unknown>] : []));

/** TurnEvent scripts with a byte-exact expected `<name>.sse` in test/fixtures/openai-responses/. */
export const sseFixtureScripts: Record<string, TurnEvent[]> = {
  text: [...textEvents('t1', 'Hello', ', world'), { type: 'turn-end', stopReason: 'end', usage: testUsage }],
  'reasoning-tool-call': [
    ...reasoningEvents('r1', 'sig-abc', 'Need to ', 'run it.'),
    ...textEvents('t1', 'Running it.'),
    ...toolCallEvents('call_fake_0001', 'exec_command', '{"cmd":"echo hello-from-tool"}', { chunkSize: 16 }),
    { type: 'usage', usage: { ...testUsage, outputTokens: 30 } },
    { type: 'turn-end', stopReason: 'tool-use', usage: testUsage },
  ],
  'two-tool-calls': [
    ...toolCallEvents('call_a', 'read', '{"filePath":"a.txt"}', { chunkSize: 64 }),
    ...toolCallEvents('call_b', 'read', '{"filePath":"b.txt"}', { chunkSize: 64 }),
    { type: 'turn-end', stopReason: 'tool-use', usage: testUsage },
  ],
  'custom-tool-call': [
    ...toolCallEvents('call_patch', 'apply_patch', '{"input":"*** Begin Patch\\n*** End Patch\\n"}', {
      kind: 'custom',
      chunkSize: 12,
    }),
    { type: 'turn-end', stopReason: 'tool-use', usage: testUsage },
  ],
  'max-tokens': [
    ...textEvents('t1', 'Truncated'),
    { type: 'turn-end', stopReason: 'max-tokens', usage: testUsage },
  ],
  'error-mid-stream': [
    { type: 'text-start', id: 't1' },
    { type: 'text-delta', id: 't1', delta: 'Partial' },
    { type: 'usage', usage: testUsage },
    {
      type: 'error',
      error: { kind: 'overloaded', message: 'Cursor is overloaded; retry shortly.', retryable: true },
    },
  ],
  'upstream-vanished': [
    { type: 'text-start', id: 't1' },
    { type: 'text-delta', id: 't1', delta: 'Par' },
  ],
};
