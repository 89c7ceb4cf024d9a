import type { ResponseMeta } from '../../../src/protocols/protocol-adapter.js';
import type { SseFrame } from '../../../src/protocols/sse-frame.js';
import { OpenaiChatStreamEncoder } from '../../../src/protocols/openai-chat/turn-to-openai-chat-events.js';
import type { TurnEvent } from '../../../src/turn/turn-event.js';
import type { TurnUsage } from '../../../src/turn/turn-usage.js';

/** TurnEvent scripts shared by the byte-level fixture tests and the `openai` SDK decoding tests. */

export const meta: ResponseMeta = { id: 'chatcmpl-test0001', model: 'composer-2', createdAt: 1_764_450_000 };

export const usage: TurnUsage = {
  inputTokens: 10,
  outputTokens: 5,
  cacheReadTokens: 3,
  cacheWriteTokens: 2,
  reasoningTokens: 1,
};

/** `'keepalive'` inserts the encoder's keepalive frame; `'end'` calls `end()` early (upstream vanished). */
export type ScriptStep = TurnEvent | 'keepalive';

export type Script = { includeStreamUsage: boolean; steps: ScriptStep[] };

/** Runs a script the way the server does: `start()`, `push()` per event, then `end()`. */
export const encodeScript = (script: Script): SseFrame[] => {
  const encoder = new OpenaiChatStreamEncoder({ includeStreamUsage: script.includeStreamUsage }, meta);
  const frames = encoder.start();
  for (const step of script.steps) {
    frames.push(...(step === 'keepalive' ? [encoder.keepalive()] : encoder.push(step)));
  }
  frames.push(...encoder.end());
  return frames;
};

const text = (id: string, ...deltas: string[]): TurnEvent[] => [
  { type: 'text-start', id },
  ...deltas.map((delta): TurnEvent => ({ type: 'text-delta', id, delta })),
  { type: 'text-end', id },
];

const toolCall = (id: string, toolName: string, ...fragments: string[]): TurnEvent[] => [
  { type: 'tool-input-start', id, toolName, kind: 'function' },
  ...fragments.map((delta): TurnEvent => ({ type: 'tool-input-delta', id, delta })),
  { type: 'tool-input-end', id },
  { type: 'tool-call', toolCallId: id, toolName, kind: 'function', input: fragments.join('') },
];

export const scripts = {
  text: {
    includeStreamUsage: true,
    steps: [...text('t1', 'Hello', ', world'), { type: 'turn-end', stopReason: 'end', usage }],
  },
  'text-no-usage': {
    includeStreamUsage: false,
    steps: [...text('t1', 'Hi'), { type: 'turn-end', stopReason: 'end', usage }],
  },
  reasoning: {
    includeStreamUsage: true,
    steps: [
      { type: 'reasoning-start', id: 'r1' },
      { type: 'reasoning-delta', id: 'r1', delta: 'Thinking about ' },
      { type: 'reasoning-delta', id: 'r1', delta: 'it.' },
      { type: 'reasoning-end', id: 'r1', signature: 'sig-1' },
      'keepalive',
      ...text('t1', 'Done.'),
      { type: 'turn-end', stopReason: 'end', usage },
    ],
  },
  'tool-call': {
    includeStreamUsage: true,
    steps: [
      ...text('t1', 'Let me check.'),
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
      ...text('t1', 'Partial'),
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
