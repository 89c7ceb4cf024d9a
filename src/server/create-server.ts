import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { BridgeMetrics } from '../metrics/bridge-metrics.js';
import type { ProtocolAdapter, ResponseMeta } from '../protocols/protocol-adapter.js';
import { createTurnError, toTurnError, type TurnError } from '../turn/turn-error.js';
import type { TurnEvent } from '../turn/turn-event.js';
import type { TurnRequest } from '../turn/turn-request.js';
import { apiKeyMatches, presentedApiKey } from './api-key.js';
import { readBody } from './read-body.js';
import { SseWriter } from './sse-writer.js';

/**
 * Runs one turn. Resolves once everything that can fail as a plain HTTP error (auth, model routing)
 * has been checked — fast when cached — and rejects with a BridgeError otherwise. The iterable then
 * yields the turn's events; the server stops consuming (calling `return()`) when the client goes away,
 * and `signal` aborts at the same moment.
 */
export type TurnHandler = (request: TurnRequest, signal: AbortSignal) => Promise<AsyncIterable<TurnEvent>>;

export type BridgeServerOptions = {
  adapters: { anthropic: ProtocolAdapter; openaiChat: ProtocolAdapter; openaiResponses: ProtocolAdapter };
  handleTurn: TurnHandler;
  logger: Logger;
  /** When set, every route but `/` and `/health` requires it (x-api-key or Bearer). */
  apiKey?: string;
  /** Request body limit in bytes. */
  bodyLimit?: number;
  keepaliveMs?: number;
  listModels: () => string[];
  /** Rendered at `GET /metrics` (Prometheus text); also records the time to first byte. */
  metrics: Pick<BridgeMetrics, 'contentType' | 'render' | 'firstByte'>;
};

/** Everything one turn's response needs. */
type TurnContext = {
  adapter: ProtocolAdapter;
  turn: TurnRequest;
  meta: ResponseMeta;
  events: AsyncIterable<TurnEvent>;
  response: ServerResponse;
  signal: AbortSignal;
  log: Logger;
  /** Record the time to first byte, once: the first turn event written, or the JSON answer. */
  firstByte: () => void;
};

const defaultBodyLimit = 64 * 1024 * 1024;
const defaultKeepaliveMs = 10_000;

const sendJson = (
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void => {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  response.end(text);
};

const flatHeaders = (request: IncomingMessage): Record<string, string> => {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
};

const parseJsonBody = (text: string): { ok: true; value: unknown } | { ok: false; message: string } => {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, message: error instanceof Error ? error.message : String(error) };
  }
};

export const createBridgeServer = (options: BridgeServerOptions): Server => {
  const { adapters, logger } = options;
  const bodyLimit = options.bodyLimit ?? defaultBodyLimit;
  const keepaliveMs = options.keepaliveMs ?? defaultKeepaliveMs;
  const turnRoutes = new Map<string, ProtocolAdapter>([
    ['/v1/messages', adapters.anthropic],
    ['/v1/chat/completions', adapters.openaiChat],
    ['/v1/responses', adapters.openaiResponses],
  ]);

  const sendError = (response: ServerResponse, adapter: ProtocolAdapter, error: TurnError): void => {
    const answer = adapter.createErrorResponse(error);
    sendJson(response, answer.status, answer.body, answer.headers);
  };

  const handleTurnRoute = async (
    adapter: ProtocolAdapter,
    request: IncomingMessage,
    response: ServerResponse,
    log: Logger,
  ): Promise<void> => {
    const receivedAt = Date.now();
    const body = await readBody(request, bodyLimit);
    if (!body.ok) {
      if (body.reason === 'aborted') return;
      return sendError(
        response,
        adapter,
        createTurnError(
          'request-too-large',
          `Request body exceeds the ${body.limit}-byte limit of this bridge; shorten the conversation or start a new one.`,
          { retryable: false },
        ),
      );
    }
    const json = parseJsonBody(body.text);
    if (!json.ok) {
      return sendError(
        response,
        adapter,
        createTurnError('invalid-request', `Request body is not valid JSON: ${json.message}`, {
          retryable: false,
        }),
      );
    }
    const parsed = adapter.parseRequest(json.value, flatHeaders(request));
    if (!parsed.success) {
      log.info({ error: parsed.error }, 'rejected invalid request');
      return sendError(response, adapter, parsed.error);
    }
    const turn = parsed.value;
    for (const warning of turn.warnings) log.warn({ warning }, 'tolerated unsupported input');

    const abort = new AbortController();
    response.on('close', () => {
      if (!response.writableFinished) abort.abort(new Error('client disconnected'));
    });

    let events: AsyncIterable<TurnEvent>;
    try {
      events = await options.handleTurn(turn, abort.signal);
    } catch (error) {
      const turnError = toTurnError(error);
      log.warn({ error: turnError }, 'turn refused');
      if (!response.headersSent && !response.destroyed) sendError(response, adapter, turnError);
      return;
    }
    const meta: ResponseMeta = {
      id: `${adapter.idPrefix}${randomBytes(12).toString('hex')}`,
      model: turn.model,
      createdAt: Math.floor(Date.now() / 1000),
    };
    let firstByteSeen = false;
    const firstByte = (): void => {
      if (firstByteSeen) return;
      firstByteSeen = true;
      options.metrics.firstByte(turn.protocol, receivedAt);
    };
    const context: TurnContext = {
      adapter,
      turn,
      meta,
      events,
      response,
      signal: abort.signal,
      log,
      firstByte,
    };
    if (turn.stream) await streamTurn(context);
    else await answerTurn(context);
  };

  const streamTurn = async ({
    adapter,
    turn,
    meta,
    events,
    response,
    signal,
    log,
    firstByte,
  }: TurnContext): Promise<void> => {
    const encoder = adapter.createStreamEncoder(turn, meta);
    const writer = new SseWriter(response, { keepaliveMs, keepalive: () => encoder.keepalive() });
    await writer.write(encoder.start());
    try {
      for await (const event of events) {
        if (signal.aborted) break;
        if (event.type === 'error') log.warn({ error: event.error }, 'turn failed in-stream');
        await writer.write(encoder.push(event));
        firstByte();
        if (encoder.ended) break;
      }
    } catch (error) {
      const turnError = toTurnError(error);
      log.error({ err: error }, 'turn failed in-stream');
      await writer.write(encoder.push({ type: 'error', error: turnError }));
    }
    await writer.end(encoder.end());
  };

  const answerTurn = async ({
    adapter,
    turn,
    meta,
    events,
    response,
    signal,
    log,
    firstByte,
  }: TurnContext): Promise<void> => {
    const collected: TurnEvent[] = [];
    let failure: TurnError | undefined;
    try {
      for await (const event of events) {
        if (signal.aborted) return;
        if (event.type === 'error') {
          failure = event.error;
          break;
        }
        collected.push(event);
        if (event.type === 'turn-end') break;
      }
    } catch (error) {
      failure = toTurnError(error);
    }
    if (response.destroyed) return;
    if (failure === undefined && collected.at(-1)?.type !== 'turn-end') {
      failure = createTurnError('api', 'The upstream run ended without finishing the turn.');
    }
    if (failure !== undefined) {
      log.warn({ error: failure }, 'turn failed');
      return sendError(response, adapter, failure);
    }
    sendJson(response, 200, adapter.createJsonResponse(turn, meta, collected));
    firstByte();
  };

  const route = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const path = url.pathname;
    const method = request.method ?? 'GET';
    const log = logger.child({ requestId: randomBytes(6).toString('hex'), method, path });

    if ((method === 'HEAD' || method === 'GET') && path === '/') {
      if (method === 'HEAD') {
        response.writeHead(200).end();
        return;
      }
      return sendJson(response, 200, { name: 'cursor-bridge', status: 'ok' });
    }
    if (method === 'GET' && path === '/health') return sendJson(response, 200, { status: 'ok' });

    const adapter = turnRoutes.get(path);
    if (options.apiKey !== undefined && !apiKeyMatches(options.apiKey, presentedApiKey(request.headers))) {
      const error = createTurnError(
        'authentication',
        'Invalid or missing API key for this bridge (APIKEY in its config).',
        {
          retryable: false,
        },
      );
      return sendError(response, adapter ?? adapters.openaiChat, error);
    }
    if (adapter !== undefined && method === 'POST') return handleTurnRoute(adapter, request, response, log);
    if (method === 'GET' && path === '/v1/models') {
      const created = Math.floor(Date.now() / 1000);
      const data = options.listModels().map((id) => ({
        id,
        object: 'model',
        type: 'model',
        display_name: id,
        created,
        created_at: new Date(created * 1000).toISOString(),
        owned_by: 'cursor',
      }));
      return sendJson(response, 200, {
        object: 'list',
        data,
        has_more: false,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
      });
    }
    if (method === 'GET' && path === '/metrics') {
      const text = await options.metrics.render();
      response.writeHead(200, {
        'content-type': options.metrics.contentType,
        'content-length': Buffer.byteLength(text),
      });
      response.end(text);
      return;
    }
    if (method === 'HEAD') {
      response.writeHead(404).end();
      return;
    }
    const known = adapter !== undefined || path === '/v1/models' || path === '/metrics';
    const error = known
      ? createTurnError('invalid-request', `Method ${method} is not allowed on ${path}.`, {
          retryable: false,
        })
      : createTurnError(
          'not-found',
          `No route ${method} ${path}. Routes: POST /v1/messages, /v1/chat/completions, /v1/responses; GET /v1/models, /health, /metrics.`,
          { retryable: false },
        );
    const answer = (adapter ?? adapters.openaiChat).createErrorResponse(error);
    sendJson(response, known ? 405 : answer.status, answer.body, answer.headers);
  };

  return createServer((request, response) => {
    route(request, response).catch((error: unknown) => {
      logger.error({ err: error }, 'request handler failed');
      if (!response.headersSent)
        sendJson(response, 500, { error: { type: 'api_error', message: 'internal error' } });
      else response.destroy();
    });
  });
};
