import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { BridgeMetrics } from '../../metrics/bridge-metrics.js';
import type { ProtocolAdapter, ResponseMeta } from '../../protocols/protocol-adapter.js';
import { parseRequestJson } from '../../protocols/shared/parse-request-json.js';
import { createTurnError, toTurnError, type TurnError } from '../../turn/turn-error.js';
import type { TurnEvent } from '../../turn/turn-event.js';
import type { TurnEvents } from '../../turn/turn-model-route.js';
import type { TurnRequest } from '../../turn/turn-request.js';
import { apiKeyMatches, presentedApiKey } from './api-key.js';
import { collectTurnEvents } from '../../protocols/collect-turn-events.js';
import { readBody } from './read-body.js';
import { SseWriter } from './sse-writer.js';
import { clipTurnError } from '../../logging/clip-turn-error.js';
import { clipText } from '../../../lib/clip-text.js';
import { RepeatLimiter, REPEATED_WARNINGS_MESSAGE } from '../../logging/repeat-limiter.js';
import {
  createAnthropicCountTokensBody,
  parseAnthropicCountTokensRequest,
} from '../../protocols/anthropic/anthropic-count-tokens.js';
import { hashSessionKey, logAccess, noteAccess, type AccessProtocol } from './access-log.js';
import { countTurnTokens } from './count-turn-tokens.js';

/**
 * Runs one turn. Resolves once everything that can fail as a plain HTTP error (auth, model routing)
 * has been checked — fast when cached — and rejects with a BridgeError otherwise. The iterable then
 * yields the turn's events; the server stops consuming (calling `return()`) when the client goes away,
 * and `signal` aborts at the same moment. The iterable's `modelRoute`, when set, names the model that runs
 * and the route that chose it; the server puts both on the request's access line.
 */
export type TurnHandler = (request: TurnRequest, signal: AbortSignal) => Promise<TurnEvents>;

/**
 * Whether the bridge can reach Cursor at all (a usable API key), as `GET /health` reports it in its `cursor`
 * field; `reason` says what is missing, in words (never the key).
 */
export type CursorReadiness = { ready: boolean; reason?: string };

export type BridgeServerOptions = {
  adapters: { anthropic: ProtocolAdapter; openaiChat: ProtocolAdapter; openaiResponses: ProtocolAdapter };
  handleTurn: TurnHandler;
  logger: Logger;
  /** When set, every route but `/` and `/health` requires it (x-api-key or Bearer). */
  apiKey?: string;
  /** Request body limit in bytes. */
  bodyLimit?: number;
  keepaliveMs?: number;
  /** A stream blocked this long on a client that does not read is cancelled and closed (0: never). */
  stallTimeoutMs?: number;
  listModels: () => string[];
  /** Rendered at `GET /metrics` (Prometheus text); also records the time to first byte. */
  metrics: Pick<BridgeMetrics, 'contentType' | 'render' | 'firstByte'>;
  /**
   * True while the process drains: `GET /health` answers 503 `{"status":"draining"}`, which takes it out
   * of a load balancer's rotation (deploy/haproxy/haproxy.cfg) while its live conversations finish.
   */
  draining?: () => boolean;
  /**
   * The body of `GET /debug/grounding` (JSON): what the live conversations' agents are grounded with, no
   * conversation text. Answered only to a request from this machine (a loopback peer, not relayed by a
   * proxy) that passes the API key check like every other route. Absent: no such route.
   */
  groundingPreview?: () => Promise<unknown>;
  /**
   * Reported by `GET /health` as `cursor` (`{"status":"ok","cursor":{"ready":false,"reason":…}}`). The status
   * stays 200 either way: `/health` is the process's liveness (load balancers, the image's HEALTHCHECK); a
   * bridge without a Cursor key is up, and says why its turns fail.
   */
  cursorReadiness?: () => CursorReadiness;
  /**
   * The window of the `tolerated unsupported input` rate limit (default 60 s): a warning code is logged
   * once, then its repeats are counted and logged once per window.
   */
  warningIntervalMs?: number;
};

/** Everything one turn's response needs. */
type TurnContext = {
  adapter: ProtocolAdapter;
  turn: TurnRequest;
  meta: ResponseMeta;
  events: AsyncIterable<TurnEvent>;
  response: ServerResponse;
  signal: AbortSignal;
  log: RequestLog;
  /** Record the time to first byte, once: the first turn event written, or the JSON answer. */
  firstByte: () => void;
};

/**
 * The request's logger (its id, method and path bound), made on first use: a pino child costs ≈ 15 µs
 * (its bindings pass the redaction), and a request that goes well logs nothing.
 */
type RequestLog = () => Logger;

/** One entry of the route table: exact method and path (the query string is ignored). */
type Route = {
  method: 'GET' | 'HEAD' | 'POST';
  path: string;
  /** Answered without the bridge's API key (liveness probes). */
  public?: true;
  handle: (request: IncomingMessage, response: ServerResponse, log: RequestLog) => Promise<void> | void;
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

/**
 * `events` with its first `next()` already called: iterating the result goes on from there (`return()`
 * reaches `events`). A rejection of that first call is left to whoever iterates.
 */
const startIterating = <T>(events: AsyncIterable<T>): AsyncIterable<T> => {
  const iterator = events[Symbol.asyncIterator]();
  let first: Promise<IteratorResult<T>> | undefined = iterator.next();
  first.catch(() => undefined);
  return {
    [Symbol.asyncIterator]: () => ({
      next: () => {
        const next = first ?? iterator.next();
        first = undefined;
        return next;
      },
      return: () => iterator.return?.() ?? Promise.resolve({ done: true, value: undefined }),
    }),
  };
};

/** Resolves once the microtasks queued so far, and those they queue, have all run. */
const afterMicrotasks = (): Promise<void> => new Promise((resolve) => process.nextTick(resolve));

/** A block's first event: nothing a client shows until the block's content follows. */
const opensBlock = (event: TurnEvent): boolean =>
  event.type === 'text-start' || event.type === 'reasoning-start' || event.type === 'tool-input-start';

/**
 * The access line's level: `info`, but `debug` for a healthy `/health` — a load balancer polls it every
 * second (deploy/haproxy), which would bury every other line; a draining 503 is still `info`.
 */
const accessLevel = (status: number, path: string): 'info' | 'debug' =>
  path === '/health' && status === 200 ? 'debug' : 'info';

/** Headers a proxy adds when it relays a request: such a request did not start on this machine. */
const relayHeaders = ['forwarded', 'x-forwarded-for', 'x-real-ip'] as const;

/** Whether the request comes from this machine: a loopback peer address, and no proxy relayed it. */
const isLocalRequest = (request: IncomingMessage): boolean => {
  const peer = request.socket.remoteAddress ?? '';
  const address = peer.startsWith('::ffff:') ? peer.slice('::ffff:'.length) : peer;
  const loopback = address === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(address);
  return loopback && relayHeaders.every((name) => request.headers[name] === undefined);
};

const flatHeaders = (request: IncomingMessage): Record<string, string> => {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
};

export const createBridgeServer = (options: BridgeServerOptions): Server => {
  const { adapters, logger } = options;
  const bodyLimit = options.bodyLimit ?? defaultBodyLimit;
  const keepaliveMs = options.keepaliveMs ?? defaultKeepaliveMs;
  const repeatedWarnings = new RepeatLimiter({
    ...(options.warningIntervalMs === undefined ? {} : { intervalMs: options.warningIntervalMs }),
    // The count names what it counted: up to five distinct messages (each names the tool or field).
    onRepeats: (code, repeats, examples) =>
      logger.warn({ warning: { code }, repeats, examples }, REPEATED_WARNINGS_MESSAGE),
  });
  const turnRoutes = new Map<string, ProtocolAdapter>([
    ['/v1/messages', adapters.anthropic],
    ['/v1/chat/completions', adapters.openaiChat],
    ['/v1/responses', adapters.openaiResponses],
  ]);
  /**
   * The family of a path, by prefix: its errors (unknown path, wrong method, API key) are in that family's
   * envelope and its access line names the protocol. Claude Code's own paths (`/api/hello`, …) get
   * Anthropic's envelope; everything else (`/v1/models`, `/`, …) OpenAI's, which every OpenAI-style
   * client and most tools read.
   */
  const pathFamilies: ReadonlyArray<{ prefix: string; adapter: ProtocolAdapter; protocol: AccessProtocol }> =
    [
      { prefix: '/v1/messages', adapter: adapters.anthropic, protocol: 'anthropic' },
      { prefix: '/v1/chat', adapter: adapters.openaiChat, protocol: 'openai-chat' },
      { prefix: '/v1/responses', adapter: adapters.openaiResponses, protocol: 'openai-responses' },
      { prefix: '/api', adapter: adapters.anthropic, protocol: 'other' },
    ];
  const familyOf = (path: string): { adapter: ProtocolAdapter; protocol: AccessProtocol } =>
    pathFamilies.find(({ prefix }) => path === prefix || path.startsWith(`${prefix}/`)) ?? {
      adapter: adapters.openaiChat,
      protocol: 'other',
    };
  const errorAdapterFor = (path: string): ProtocolAdapter => familyOf(path).adapter;

  const sendError = (response: ServerResponse, adapter: ProtocolAdapter, error: TurnError): void => {
    const answer = adapter.createErrorResponse(error);
    sendJson(response, answer.status, answer.body, answer.headers);
  };

  /**
   * Read, decode and parse a request body with `parse`, noting its size, model and session on the access
   * line. Answers the error itself (in `adapter`'s envelope) and returns undefined when there is no request.
   */
  const readRequest = async (
    adapter: ProtocolAdapter,
    parse: ProtocolAdapter['parseRequest'],
    request: IncomingMessage,
    response: ServerResponse,
    log: RequestLog,
  ): Promise<TurnRequest | undefined> => {
    const body = await readBody(request, bodyLimit);
    if (!body.ok) {
      if (body.error.reason === 'aborted') return undefined;
      sendError(
        response,
        adapter,
        createTurnError(
          'request-too-large',
          `Request body exceeds the ${body.error.limit}-byte limit of this bridge; shorten the conversation or start a new one.`,
          { retryable: false },
        ),
      );
      return undefined;
    }
    if (request.headers['content-length'] === undefined) {
      noteAccess(response, { bytesIn: Buffer.byteLength(body.value) });
    }
    const json = parseRequestJson(body.value);
    if (!json.ok) {
      log().info({ error: clipTurnError(json.error) }, 'rejected invalid request');
      sendError(response, adapter, json.error);
      return undefined;
    }
    const parsed = parse(json.value, flatHeaders(request));
    if (!parsed.ok) {
      log().info({ error: clipTurnError(parsed.error) }, 'rejected invalid request');
      sendError(response, adapter, parsed.error);
      return undefined;
    }
    const { model, identity } = parsed.value;
    const sessionKey = identity.nativeSessionId?.value ?? identity.promptCacheKey;
    noteAccess(response, {
      model,
      ...(sessionKey === undefined ? {} : { sessionHash: hashSessionKey(sessionKey) }),
    });
    return parsed.value;
  };

  /** `POST /v1/messages/count_tokens`: the request's input tokens, `{"input_tokens": N}`. */
  const countTokens = async (
    request: IncomingMessage,
    response: ServerResponse,
    log: RequestLog,
  ): Promise<void> => {
    const turn = await readRequest(
      adapters.anthropic,
      parseAnthropicCountTokensRequest,
      request,
      response,
      log,
    );
    if (turn === undefined) return;
    const inputTokens = await countTurnTokens(turn);
    if (response.destroyed) return;
    sendJson(response, 200, createAnthropicCountTokensBody(inputTokens));
  };

  const handleTurnRoute = async (
    adapter: ProtocolAdapter,
    request: IncomingMessage,
    response: ServerResponse,
    log: RequestLog,
  ): Promise<void> => {
    const receivedAt = Date.now();
    const turn = await readRequest(
      adapter,
      (body, headers) => adapter.parseRequest(body, headers),
      request,
      response,
      log,
    );
    if (turn === undefined) return;
    for (const warning of turn.warnings) {
      if (repeatedWarnings.admit(warning.code, clipText(warning.message, 200)))
        log().warn({ warning }, 'tolerated unsupported input');
    }

    const abort = new AbortController();
    response.on('close', () => {
      if (!response.writableFinished) abort.abort(new Error('client disconnected'));
    });

    let events: TurnEvents;
    try {
      events = await options.handleTurn(turn, abort.signal);
    } catch (error) {
      const turnError = toTurnError(error);
      log().warn({ error: clipTurnError(turnError) }, 'turn refused');
      if (!response.headersSent && !response.destroyed) sendError(response, adapter, turnError);
      return;
    }
    if (events.modelRoute !== undefined)
      noteAccess(response, { cursorModel: events.modelRoute.model, route: events.modelRoute.route });
    const meta: ResponseMeta = {
      id: `${adapter.idPrefix}${randomBytes(12).toString('hex')}`,
      model: events.modelRoute?.model ?? turn.model,
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
    // The turn's first steps run before the response's setup: resuming a parked run hands the client's
    // tool results to the upstream before anything here (encoder, headers, message_start) is built. They
    // run up to their first wait (the upstream's answer, a workspace's files), so the stream still opens
    // before the upstream produced anything.
    const started = startIterating(events);
    await afterMicrotasks();
    const encoder = adapter.createStreamEncoder(turn, meta);
    const writer = new SseWriter(response, {
      keepaliveMs,
      keepalive: () => encoder.keepalive(),
      stallTimeoutMs: options.stallTimeoutMs ?? 0,
      onStall: () =>
        log().warn({ stallTimeoutMs: options.stallTimeoutMs }, 'client stopped reading; cancelling'),
    });
    writer.hold(encoder.start());
    try {
      // Leaving the loop stops this subscriber, which cancels the run (unless a tool call committed it).
      for await (const event of started) {
        if (signal.aborted || writer.stalled) break;
        if (event.type === 'error')
          log().warn({ error: clipTurnError(event.error) }, 'turn failed in-stream');
        // A block's start leaves with what follows it. Otherwise awaited only when the socket is full:
        // no promise per event while the client keeps up.
        if (opensBlock(event)) writer.hold(encoder.push(event));
        else {
          const blocked = writer.write(encoder.push(event));
          if (blocked !== undefined) await blocked;
        }
        firstByte();
        if (encoder.ended) break;
      }
    } catch (error) {
      const turnError = toTurnError(error);
      log().error({ err: error }, 'turn failed in-stream');
      await writer.write(encoder.push({ type: 'error', error: turnError }));
    }
    if (writer.stalled && !encoder.ended) {
      const message = `The client did not read the response for ${options.stallTimeoutMs} ms; the turn was cancelled.`;
      await writer.write(encoder.push({ type: 'error', error: createTurnError('timeout', message) }));
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
    const collected = await collectTurnEvents(events, signal);
    if (signal.aborted || response.destroyed) return;
    if (!collected.ok) {
      log().warn({ error: clipTurnError(collected.error) }, 'turn failed');
      return sendError(response, adapter, collected.error);
    }
    sendJson(response, 200, adapter.createJsonResponse(turn, meta, collected.value));
    firstByte();
  };

  const listModels = (response: ServerResponse): void => {
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
    sendJson(response, 200, {
      object: 'list',
      data,
      has_more: false,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
    });
  };

  /** `GET /debug/grounding`: the live grounding preview, to local requests only. */
  const groundingRoute = (preview: () => Promise<unknown>): Route => ({
    method: 'GET',
    path: '/debug/grounding',
    handle: async (request, response) => {
      if (!isLocalRequest(request)) {
        const error = createTurnError(
          'permission',
          "GET /debug/grounding answers only requests made on the bridge's own machine (from loopback, not through a proxy): it shows every live conversation's host facts. Run `cursor-bridge templates live` there.",
          { retryable: false },
        );
        return sendError(response, errorAdapterFor('/debug/grounding'), error);
      }
      sendJson(response, 200, await preview(), { 'cache-control': 'no-store' });
    },
  });

  /** Every route the bridge answers; `public` ones (liveness probes) need no API key. */
  const routes: readonly Route[] = [
    {
      method: 'GET',
      path: '/',
      public: true,
      handle: (_request, response) => sendJson(response, 200, { name: 'cursor-bridge', status: 'ok' }),
    },
    {
      method: 'HEAD',
      path: '/',
      public: true,
      handle: (_request, response) => void response.writeHead(200).end(),
    },
    {
      // Claude Code 2.1.332's connectivity check (2.1.197 sends `HEAD /`).
      method: 'HEAD',
      path: '/api/hello',
      public: true,
      handle: (_request, response) => void response.writeHead(200).end(),
    },
    {
      method: 'GET',
      path: '/health',
      public: true,
      handle: (_request, response) =>
        options.draining?.() === true
          ? sendJson(response, 503, { status: 'draining' })
          : sendJson(response, 200, {
              status: 'ok',
              ...(options.cursorReadiness === undefined ? {} : { cursor: options.cursorReadiness() }),
            }),
    },
    ...[...turnRoutes].map(([path, adapter]): Route => ({
      method: 'POST',
      path,
      handle: (request, response, log) => handleTurnRoute(adapter, request, response, log),
    })),
    { method: 'POST', path: '/v1/messages/count_tokens', handle: countTokens },
    { method: 'GET', path: '/v1/models', handle: (_request, response) => listModels(response) },
    ...(options.groundingPreview === undefined ? [] : [groundingRoute(options.groundingPreview)]),
    {
      method: 'GET',
      path: '/metrics',
      handle: async (_request, response) => {
        const text = await options.metrics.render();
        response.writeHead(200, {
          'content-type': options.metrics.contentType,
          'content-length': Buffer.byteLength(text),
        });
        response.end(text);
      },
    },
  ];
  /** What an unknown path is told: the routes a client calls, by method, from the table above. */
  const routeList = (['POST', 'GET'] as const)
    .map(
      (verb) =>
        `${verb} ${routes.flatMap((route) => (route.method === verb && route.path !== '/' ? [route.path] : [])).join(', ')}`,
    )
    .join('; ');

  const route = async (
    request: IncomingMessage,
    response: ServerResponse,
    path: string,
    requestId: string,
  ): Promise<void> => {
    const method = request.method ?? 'GET';
    let child: Logger | undefined;
    const log: RequestLog = () => (child ??= logger.child({ requestId, method, path: clipText(path) }));
    const match = routes.find((candidate) => candidate.method === method && candidate.path === path);
    if (match?.public === true) return match.handle(request, response, log);

    if (options.apiKey !== undefined && !apiKeyMatches(options.apiKey, presentedApiKey(request.headers))) {
      const error = createTurnError(
        'authentication',
        'Invalid or missing API key for this bridge (APIKEY in its config).',
        { retryable: false },
      );
      return sendError(response, errorAdapterFor(path), error);
    }
    if (match !== undefined) return match.handle(request, response, log);
    if (method === 'HEAD') {
      response.writeHead(404).end();
      return;
    }
    const known = routes.some((candidate) => candidate.path === path && candidate.public !== true);
    const error = known
      ? createTurnError('invalid-request', `Method ${method} is not allowed on ${path}.`, {
          retryable: false,
        })
      : createTurnError('not-found', `No route ${method} ${clipText(path)}. Routes: ${routeList}.`, {
          retryable: false,
        });
    const answer = errorAdapterFor(path).createErrorResponse(error);
    sendJson(response, known ? 405 : answer.status, answer.body, answer.headers);
  };

  return createServer((request, response) => {
    // `URL.parse`, not `new URL`: a target such as `//` must not throw outside the handler's catch.
    const path = URL.parse(request.url ?? '/', 'http://localhost')?.pathname ?? request.url ?? '/';
    const requestId = randomBytes(6).toString('hex');
    logAccess(request, response, { logger, requestId, path, level: accessLevel });
    noteAccess(response, { protocol: familyOf(path).protocol });
    route(request, response, path, requestId).catch((error: unknown) => {
      logger.error({ err: error }, 'request handler failed');
      if (response.headersSent) return void response.destroy();
      sendError(response, errorAdapterFor(path), createTurnError('api', 'internal error'));
    });
  });
};
