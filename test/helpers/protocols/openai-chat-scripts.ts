import type { ResponseMeta } from '../../../src/protocols/protocol-adapter.js';
import type { SseFrame } from '../../../src/protocols/sse-frame.js';
import { OpenaiChatStreamEncoder } from '../../../src/protocols/openai-chat/turn-to-openai-chat-events.js';
import type { TurnEvent } from '../../../src/turn/turn-event.js';
import type { TurnUsage } from '../../../src/turn/turn-usage.js';
import { runStreamEncoder, type EncoderStep } from './run-stream-encoder.js';
import { textEvents, toolCallEvents } from './turn-event-builders.js';

/** TurnEvent scripts shared by the byte-level fixture tests and the `openai` SDK decoding tests. */

export const meta: ResponseMeta = { id: 'chatcmpl-test0001', model: 'composer-2', createdAt: 1_764_450_000 };

export const usage: TurnUsage = {
  inputTokens: 10,
  outputTokens: 5,
  cacheReadTokens: 3,
  cacheWriteTokens: 2,
  reasoningTokens: 1,
};

/** {@link usage} as every Chat Completions usage object reports it (finish chunk and trailing chunk). */
export const expectedUsage = {
  prompt_tokens: 15,
  completion_tokens: 5,
  total_tokens: 20,
  prompt_tokens_details: { cached_tokens: 3 },
  completion_tokens_details: { reasoning_tokens: 1 },
};

/** `'keepalive'` steps insert the encoder's keepalive frame. */
export type Script = { includeStreamUsage: boolean; steps: EncoderStep[] };

/** Runs a script the way the server does: `start()`, `push()` per event, then `end()`. */
export const encodeScript = (script: Script): SseFrame[] =>
  runStreamEncoder(
    new OpenaiChatStreamEncoder({ includeStreamUsage: script.includeStreamUsage }, meta),
    script.steps,
  );

/** A function call whose arguments stream as `deltas`; `tool-call` carries them joined. */
const toolCall = (id: string, toolName: string, ...deltas: string[]): TurnEvent[] =>
  toolCallEvents(id, toolName, deltas.join(''), { deltas });

export const scripts = {
  text: {
    includeStreamUsage: true,
    steps: [...textEvents('t1', 'Hello', ', world'), { type: 'turn-end', stopReason: 'end', usage }],
  },
  'text-no-usage': {
    includeStreamUsage: false,
    steps: [...textEvents('t1', 'Hi'), { type: 'turn-end', stopReason: 'end', usage }],
  },
  reasoning: {
    includeStreamUsage: true,
    steps: [
      { type: 'reasoning-start', id: 'r1' },
      { type: 'reasoning-delta', id: 'r1', delta: 'Thinking about ' },
      { type: 'reasoning-delta', id: 'r1', delta: 'it.' },
      { type: 'reasoning-end', id: 'r1', signature: 'sig-1' },
      'keepalive',
      ...textEvents('t1', 'Done.'),
      { type: 'turn-end', stopReason: 'end', usage },
    ],
  },
  'tool-call': {
    includeStreamUsage: true,
    steps: [
      ...textEvents('t1', 'Let me check.'),
      ...toolCall('call_1', 'bash', '{"command"', ':"ls -la"}'),
      { type: 'turn-end', stopReason: 'tool-use', usage },
    ],
  },
  'two-tool-calls': {
    includeStreamUsage: true,
    steps: [
      ...toolCall('call_1', 'read', '{"filePath":', '"/w/a.txt"}'),
      ...toolCall('call_2', 'glob', '{"pattern":"**/*.ts"}'),
      { type: 'turn-end', stopReason: 'tool-use', usage },
    ],
  },
  'error-mid-stream': {
    includeStreamUsage: true,
    steps: [
      ...textEvents('t1', 'Partial'),
      {
        type: 'error',
        error: { kind: 'overloaded', message: 'Cursor is overloaded; try again shortly.', retryable: true },
      },
    ],
  },
  'upstream-vanished': {
    includeStreamUsage: true,
    steps: [
      { type: 'text-start', id: 't1' },
      { type: 'text-delta', id: 't1', delta: 'Cut' },
    ],
  },
} satisfies Record<string, Script>;

export type ScriptName = keyof typeof scripts;
