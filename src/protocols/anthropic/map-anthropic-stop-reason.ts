import type { TurnStopReason } from '../../turn/turn-event.js';

/** The Anthropic `stop_reason` values the bridge produces. */
export type AnthropicStopReason = 'end_turn' | 'tool_use' | 'max_tokens' | 'refusal';

/**
 * TurnStopReason → Anthropic `stop_reason`.
 * @see https://docs.anthropic.com/en/api/handling-stop-reasons
 */
export const mapAnthropicStopReason = (stopReason: TurnStopReason): AnthropicStopReason => {
  switch (stopReason) {
    case 'end':
      return 'end_turn';
    case 'tool-use':
      return 'tool_use';
    case 'max-tokens':
      return 'max_tokens';
    case 'refusal':
      return 'refusal';
    default: {
      const _exhaustive: never = stopReason;
      return _exhaustive;
    }
  }
};
