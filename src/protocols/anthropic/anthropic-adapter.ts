import type { ProtocolAdapter } from '../protocol-adapter.js';
import { createAnthropicErrorResponse } from './anthropic-error.js';
import { convertAnthropicRequestToTurn } from './anthropic-to-turn.js';
import { AnthropicStreamEncoder, createAnthropicJsonResponse } from './turn-to-anthropic-events.js';

/**
 * The Anthropic Messages protocol (`POST /v1/messages`, as Claude Code speaks it). Response ids are
 * `msg_…`; the echoed model is `meta.model`.
 */
export const anthropicAdapter: ProtocolAdapter = {
  protocol: 'anthropic',
  idPrefix: 'msg_',
  parseRequest: convertAnthropicRequestToTurn,
  createStreamEncoder: (_request, meta) => new AnthropicStreamEncoder(meta),
  createJsonResponse: (_request, meta, events) => createAnthropicJsonResponse(meta, events),
  createErrorResponse: createAnthropicErrorResponse,
};
