import type { ProtocolAdapter } from '../protocol-adapter.js';
import { createOpenaiChatErrorResponse } from './openai-chat-error.js';
import { convertOpenaiChatRequestToTurn } from './openai-chat-to-turn.js';
import { createOpenaiChatJsonResponse, OpenaiChatStreamEncoder } from './turn-to-openai-chat-events.js';

/** The OpenAI Chat Completions adapter (`POST /v1/chat/completions`); response ids are `chatcmpl-…`. */
export const openaiChatAdapter: ProtocolAdapter = {
  protocol: 'openai-chat',
  idPrefix: 'chatcmpl-',
  parseRequest: convertOpenaiChatRequestToTurn,
  createStreamEncoder: (request, meta) => new OpenaiChatStreamEncoder(request, meta),
  createJsonResponse: (_request, meta, events) => createOpenaiChatJsonResponse(meta, events),
  createErrorResponse: createOpenaiChatErrorResponse,
};
