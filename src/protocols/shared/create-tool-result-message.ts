import type { TurnMessage, TurnUserPart } from '../../turn/turn-request.js';

/**
 * A `tool` transcript entry answering the call `toolCallId`. `toolName` is set only when known (the protocol
 * carries it, or an earlier call in the transcript named it); `isError` defaults to false.
 */
export const createToolResultMessage = (
  toolCallId: string,
  content: TurnUserPart[],
  options: { toolName?: string | undefined; isError?: boolean } = {},
): Extract<TurnMessage, { role: 'tool' }> => ({
  role: 'tool',
  toolCallId,
  ...(options.toolName === undefined ? {} : { toolName: options.toolName }),
  content,
  isError: options.isError ?? false,
});
