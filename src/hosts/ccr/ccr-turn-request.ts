/**
 * The TurnRequest for a request CCR hands the transformer. CCR's unified request has lost what identity,
 * reasoning and grounding need (`metadata.user_id`, `thinking`, `output_config.effort`, the Claude Code
 * session header, system blocks as sent), so when the client spoke Anthropic Messages the original body in
 * `context.req` goes through the same Anthropic adapter `serve` uses, with the model CCR routed to. Only a
 * request that did not arrive as Anthropic Messages falls back to the unified (Chat Completions shaped) body.
 */
import { anthropicAdapter } from '../../protocols/anthropic/anthropic-adapter.js';
import { openaiChatAdapter } from '../../protocols/openai-chat/openai-chat-adapter.js';
import type { ParseResult } from '../../protocols/protocol-adapter.js';
import { isRecord } from '../../../lib/is-record.js';

/** What the facade needs of a `net.Socket`. */
type ClientSocket = {
  readonly destroyed: boolean;
  once(event: 'close', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
};

/** The slice of llms' transformer `context` (`{ req }`, a Fastify request) the facade reads. */
export type CcrContext = {
  req?: {
    url?: unknown;
    body?: unknown;
    headers?: unknown;
    /** The Node request; its socket closing means Claude Code went away. */
    raw?: { socket?: ClientSocket | null };
  };
};

/**
 * Aborts `abort` when Claude Code's connection to CCR closes before `release()` is called. upstream llms
 * passes no client signal, and a turn answered as JSON is computed before CCR holds any Response to cancel.
 */
export const watchClientConnection = (
  context: CcrContext | undefined,
  abort: AbortController,
): (() => void) => {
  const socket = context?.req?.raw?.socket;
  if (socket === undefined || socket === null) return () => {};
  const onClose = (): void => abort.abort(new Error('client disconnected'));
  if (socket.destroyed) {
    onClose();
    return () => {};
  }
  socket.once('close', onClose);
  return () => socket.off('close', onClose);
};

/** Fastify's headers as the adapters take them: lower-case names, one string per header. */
const flattenHeaders = (headers: unknown): Record<string, string> => {
  const flat: Record<string, string> = {};
  if (!isRecord(headers)) return flat;
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value === 'string') flat[name.toLowerCase()] = value;
    else if (Array.isArray(value)) flat[name.toLowerCase()] = value.map(String).join(', ');
  }
  return flat;
};

const isAnthropicRoute = (url: unknown): boolean =>
  typeof url === 'string' && new URL(url, 'http://ccr').pathname === '/v1/messages';

/**
 * Parses the turn CCR routed: the original Anthropic body (model replaced by the routed one, `stream` as CCR
 * sends it on) when the route was `/v1/messages`, else the unified request as Chat Completions.
 */
export const convertCcrRequestToTurn = (unified: unknown, context: CcrContext | undefined): ParseResult => {
  const request = context?.req;
  const headers = flattenHeaders(request?.headers);
  const routedModel = isRecord(unified) ? unified['model'] : undefined;
  if (isAnthropicRoute(request?.url) && isRecord(request?.body)) {
    const body = { ...request.body, ...(typeof routedModel === 'string' ? { model: routedModel } : {}) };
    return anthropicAdapter.parseRequest(body, headers);
  }
  return openaiChatAdapter.parseRequest(unified, headers);
};
