import type { ProtocolAdapter } from '../protocol-adapter.js';
import { createOpenaiResponsesErrorResponse } from './openai-responses-error.js';
import { convertOpenaiResponsesRequestToTurn } from './openai-responses-to-turn.js';
import {
  createOpenaiResponsesJsonResponse,
  OpenaiResponsesStreamEncoder,
} from './turn-to-openai-responses-events.js';

/** The OpenAI Responses protocol (`POST /v1/responses`): Codex, @ai-sdk/openai, the `openai` SDK. */
export const openaiResponsesAdapter: ProtocolAdapter = {
  protocol: 'openai-responses',
  idPrefix: 'resp_',
  parseRequest: convertOpenaiResponsesRequestToTurn,
  createStreamEncoder: (request, meta) => new OpenaiResponsesStreamEncoder(request, meta),
  createJsonResponse: createOpenaiResponsesJsonResponse,
  createErrorResponse: createOpenaiResponsesErrorResponse,
};
