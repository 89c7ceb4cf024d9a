import type { TurnStopReason } from '../../turn/turn-event.js';

/**
 * How a turn's end shows on a Responses response: its final `status`, the terminal event that carries
 * it and, for `incomplete`, `incomplete_details.reason`. A tool-use stop is a normal completion (the
 * function_call items tell the client what to run).
 *
 * @see https://platform.openai.com/docs/api-reference/responses/object
 */
export type OpenaiResponsesEnd =
  | { status: 'completed'; event: 'response.completed' }
  | {
      status: 'incomplete';
      event: 'response.incomplete';
      reason: 'max_output_tokens' | 'content_filter';
    };

export const mapOpenaiResponsesStopReason = (stopReason: TurnStopReason): OpenaiResponsesEnd => {
  switch (stopReason) {
    case 'end':
    case 'tool-use':
      return { status: 'completed', event: 'response.completed' };
    case 'max-tokens':
      return { status: 'incomplete', event: 'response.incomplete', reason: 'max_output_tokens' };
    case 'refusal':
      return { status: 'incomplete', event: 'response.incomplete', reason: 'content_filter' };
    default: {
      const _exhaustive: never = stopReason;
      return _exhaustive;
    }
  }
};
