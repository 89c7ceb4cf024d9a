import type { ResponseMeta } from '../../../src/protocols/protocol-adapter.js';
import type { SseFrame } from '../../../src/protocols/sse-frame.js';
import { AnthropicStreamEncoder } from '../../../src/protocols/anthropic/turn-to-anthropic-events.js';
import { createTurnError } from '../../../src/turn/turn-error.js';
import type { TurnEvent } from '../../../src/turn/turn-event.js';
import type { TurnUsage } from '../../../src/turn/turn-usage.js';

/** TurnEvent scripts shared by the byte-level fixture tests and the SDK decoding tests. */

export const meta: ResponseMeta = { id: 'msg_01fixture', model: 'claude-opus-4-8', createdAt: 1795981772 };

export const usage: TurnUsage = {
  inputTokens: 12,
  outputTokens: 34,
  cacheReadTokens: 5000,
  cacheWriteTokens: 200,
};

const bashInput = '{"command":"echo hello-from-tool","description":"Print a greeting"}';

const toolCall = (id: string, input: string, fragments: string[]): TurnEvent[] => [
  { type: 'tool-input-start', id, toolName: 'Bash', kind: 'function' },
  ...fragments.map((delta): TurnEvent => ({ type: 'tool-input-delta', id, delta })),
  { type: 'tool-input-end', id },
  { type: 'tool-call', toolCallId: id, toolName: 'Bash', kind: 'function', input },
];

export const scripts = {
  text: [
    { type: 'text-start', id: 't1' },
    { type: 'text-delta', id: 't1', delta: 'Hello' },
    { type: 'text-delta', id: 't1', delta: ', "world"\n' },
    { type: 'text-end', id: 't1' },
    { type: 'turn-end', stopReason: 'end', usage },
  ],
  thinking: [
    { type: 'reasoning-start', id: 'r1' },
    { type: 'reasoning-delta', id: 'r1', delta: 'The user greets me. ' },
    { type: 'reasoning-delta', id: 'r1', delta: 'Reply briefly.' },
    { type: 'reasoning-end', id: 'r1', signature: 'c2lnbmF0dXJl' },
    { type: 'text-start', id: 't1' },
    { type: 'text-delta', id: 't1', delta: 'Hi!' },
    { type: 'text-end', id: 't1' },
    { type: 'turn-end', stopReason: 'end', usage: { ...usage, reasoningTokens: 9 } },
  ],
  'tool-call': [
    { type: 'text-start', id: 't1' },
    { type: 'text-delta', id: 't1', delta: 'Running it.' },
    { type: 'text-end', id: 't1' },
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
  'max-tokens': [
    { type: 'text-start', id: 't1' },
    { type: 'text-delta', id: 't1', delta: 'Truncat' },
    { type: 'text-end', id: 't1' },
    { type: 'turn-end', stopReason: 'max-tokens', usage },
  ],
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
export const encodeScript = (events: readonly TurnEvent[]): SseFrame[] => {
  const encoder = new AnthropicStreamEncoder(meta);
  return [...encoder.start(), ...events.flatMap((event) => encoder.push(event)), ...encoder.end()];
};
