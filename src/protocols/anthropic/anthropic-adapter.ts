import type { ProtocolAdapter } from '../protocol-adapter.js';
import type { TurnRequest } from '../../turn/turn-request.js';
import { createAnthropicErrorResponse } from './anthropic-error.js';
import { convertAnthropicRequestToTurn } from './anthropic-to-turn.js';
import {
  AnthropicStreamEncoder,
  createAnthropicJsonResponse,
  type AnthropicEncoderOptions,
} from './turn-to-anthropic-events.js';

const encoderOptions = (request: TurnRequest): AnthropicEncoderOptions =>
  request.webSearch === undefined ? {} : { webSearchToolName: request.webSearch.name };

/**
 * The Anthropic Messages protocol (`POST /v1/messages`, as Claude Code speaks it). Response ids are
 * `msg_…`; the echoed model is `meta.model`.
 */
export const anthropicAdapter: ProtocolAdapter = {
  protocol: 'anthropic',
  idPrefix: 'msg_',
  parseRequest: convertAnthropicRequestToTurn,
  createStreamEncoder: (request, meta) => new AnthropicStreamEncoder(meta, encoderOptions(request)),
  createJsonResponse: (request, meta, events) =>
    createAnthropicJsonResponse(meta, events, encoderOptions(request)),
  createErrorResponse: createAnthropicErrorResponse,
};
