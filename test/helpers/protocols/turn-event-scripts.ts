import type { ResponseMeta } from '../../../src/protocols/protocol-adapter.js';
import type { SseFrame } from '../../../src/protocols/sse-frame.js';
import { AnthropicStreamEncoder } from '../../../src/protocols/anthropic/turn-to-anthropic-events.js';
import { createTurnError } from '../../../src/turn/turn-error.js';
import type { TurnEvent } from '../../../src/turn/turn-event.js';
import type { TurnUsage } from '../../../src/turn/turn-usage.js';
import { runStreamEncoder } from './run-stream-encoder.js';
import { reasoningEvents, textEvents, toolCallEvents } from './turn-event-builders.js';

/** TurnEvent scripts shared by the byte-level fixture tests and the SDK decoding tests. */

export const meta: ResponseMeta = { id: 'msg_01fixture', model: 'claude-opus-4-8', createdAt: 1795981772 };

export const usage: TurnUsage = {
  inputTokens: 12,
  outputTokens: 34,
  cacheReadTokens: 5000,
  cacheWriteTokens: 200,
};

const bashInput = '{"command":"echo hello-from-tool","description":"Print a greeting"}';

const toolCall = (id: string, input: string, deltas: string[]): TurnEvent[] =>
  toolCallEvents(id, 'Bash', input, { deltas });

export const scripts = {
  text: [...textEvents('t1', 'Hello', ', "world"\n'), { type: 'turn-end', stopReason: 'end', usage }],
  thinking: [
    ...reasoningEvents('r1', 'c2lnbmF0dXJl', 'The user greets me. ', 'Reply briefly.'),
    ...textEvents('t1', 'Hi!'),
    { type: 'turn-end', stopReason: 'end', usage: { ...usage, reasoningTokens: 9 } },
  ],
  'tool-call': [
    ...textEvents('t1', 'Running it.'),
    ...toolCall('toolu_fake_0001', bashInput, [
      '{"command":"echo hello',
      '-from-tool","description":',
      '"Print a greeting"}',
    ]),
    { type: 'turn-end', stopReason: 'tool-use', usage },
  ],
  'two-tool-calls': [
    ...toolCall('toolu_fake_0001', '{"command":"ls"}', ['{"command":', '"ls"}']),
    ...toolCall('toolu_fake_0002', '{"command":"pwd"}', ['{"comm', 'and":"pwd"}']),
    { type: 'usage', usage },
    { type: 'turn-end', stopReason: 'tool-use', usage },
  ],
  'max-tokens': [...textEvents('t1', 'Truncat'), { type: 'turn-end', stopReason: 'max-tokens', usage }],
  'error-mid-stream': [
    { type: 'text-start', id: 't1' },
    { type: 'text-delta', id: 't1', delta: 'Partial ans' },
    { type: 'error', error: createTurnError('overloaded', 'Cursor is overloaded; try again shortly.') },
  ],
  /** The upstream vanished: no terminal event, `end()` must finish the stream. */
  'upstream-vanished': [...toolCall('toolu_fake_0001', '{"command":"ls"}', ['{"comm']).slice(0, 2)],
} satisfies Record<string, TurnEvent[]>;

export type ScriptName = keyof typeof scripts;

/** Every frame a server would write for the script: `start()`, each `push`, then `end()`. */
export const encodeScript = (events: readonly TurnEvent[]): SseFrame[] =>
  runStreamEncoder(new AnthropicStreamEncoder(meta), events);
