import type { TurnStopReason } from '../../turn/turn-event.js';

/** The Chat Completions `finish_reason` values the bridge produces. */
export type OpenaiChatFinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter';

/**
 * TurnStopReason → Chat Completions `finish_reason`. CCR's AnthropicTransformer maps these back to
 * `end_turn` / `tool_use` / `max_tokens` / `stop_sequence`.
 *
 * @see https://platform.openai.com/docs/api-reference/chat/object#chat/object-choices
 */
export const mapOpenaiChatStopReason = (stopReason: TurnStopReason): OpenaiChatFinishReason => {
  switch (stopReason) {
    case 'end':
      return 'stop';
    case 'tool-use':
      return 'tool_calls';
    case 'max-tokens':
      return 'length';
    case 'refusal':
      return 'content_filter';
    default: {
      const _exhaustive: never = stopReason;
      return _exhaustive;
    }
  }
};
