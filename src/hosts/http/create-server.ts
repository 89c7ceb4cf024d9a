import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { BridgeMetrics } from '../../metrics/bridge-metrics.js';
import type { ParseResult, ProtocolAdapter } from '../../protocols/protocol-adapter.js';
import { parseRequestJson } from '../../protocols/shared/parse-request-json.js';
import { createTurnError, type TurnError } from '../../turn/turn-error.js';
import { apiKeyMatches, presentedApiKey } from './api-key.js';
import { readBodyText } from '../../../lib/read-body-text.js';
import { clipTurnError } from '../../logging/clip-turn-error.js';
import { clipText } from '../../../lib/clip-text.js';
import { createWarningLimiter, runTurnRequest, type TurnHandler } from '../turn-pipeline.js';
import { createHttpTurnWriter } from './http-turn-writer.js';
import { sendJson } from './send-json.js';
import {
  createAnthropicCountTokensBody,
  parseAnthropicCountTokensRequest,
} from '../../protocols/anthropic/anthropic-count-tokens.js';
import { hashSessionKey, logAccess, noteAccess, type AccessProtocol } from './access-log.js';
import { countTurnTokens } from './count-turn-tokens.js';

/**
 * Whether the bridge can reach Cursor at all (a usable API key), as `GET /health` reports it in its `cursor`
 * field; `reason` says what is missing, in words (never the key).
 */
export type CursorReadiness = { ready: boolean; reason?: string };

/**
 * A `GET /v1/models` entry. `contextWindow` is the window, in tokens, of the Cursor variant the bridge runs
 * for the model (answered as `context_window`: what a client sizes its context and compaction from).
 */
export type ListedModel = {
  id: string;
  displayName?: string;
  aliases?: readonly string[];
  contextWindow?: number;
};

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
  /** `GET /v1/models`: model ids, or entries with what Cursor's catalog says of them. */
  listModels: () => ReadonlyArray<string | ListedModel> | Promise<ReadonlyArray<string | ListedModel>>;
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
   * The body of `GET /debug/conversations` (JSON): the live conversations, each with its state and what
   * its finished runs used and cost — figures only, no conversation text. Absent: no such route.
   */
  conversations?: () => unknown;
  /**
   * The console (`/console` and below): it answers every such request itself, told whether the request
   * passed the API key check, so a browser can log in with the key instead of sending it on each request.
   * Absent: no console.
   */
  console?: ConsoleHandler;
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

/** What the server tells the console of a request (the console's `ConsoleRequestContext`). */
export type ConsoleHandler = (
  request: IncomingMessage,
  response: ServerResponse,
  context: {
    path: string;
    authorized: boolean;
    /** The bridge has an API key (without one, `authorized` is always true). */
    keyRequired: boolean;
    local: boolean;
    verifyKey: (key: string) => boolean;
  },
) => Promise<void>;

/**
 * The request's logger (its id, method and path bound), made on first use: a pino child is not free
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

/**
 * How long an idle client connection stays open between requests. A client that sends its next request
 * (a tool's result) just as the server closes the idle connection gets `ECONNRESET` and retries after a
 * back-off; Claude Code's `fetch` (Bun's) does not honour the `Keep-Alive: timeout` hint that would let it
 * avoid that moment (seen against `mcp-host`'s server). With Node's default (5 s) the moment falls among
 * common tool durations; this is longer than Claude Code's default Bash timeout (2 minutes), as long as
 * deploy/haproxy keeps a client's idle connection. A drain closes idle connections at once.
 */
const idleConnectionMs = 5 * 60_000;

/**
 * The access line's level: `info`, but `debug` for a healthy `/health` — a load balancer polls it every
 * second (deploy/haproxy), which would bury every other line; a draining 503 is still `info`.
 */
const accessLevel = (status: number, path: string): 'info' | 'debug' =>
  (path === '/health' && status === 200) || (isConsolePath(path) && status < 400) ? 'debug' : 'info';

/** The console's paths: `/console` and below. */
const isConsolePath = (path: string): boolean => path === '/console' || path.startsWith('/console/');

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
  const repeatedWarnings = createWarningLimiter(logger, options.warningIntervalMs);
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

  /** The client's error for a request it sent invalid, logged (the request's own fault, at `info`). */
  const rejectRequest = (
    response: ServerResponse,
    adapter: ProtocolAdapter,
    log: RequestLog,
    error: TurnError,
  ): void => {
    log().info({ error: clipTurnError(error) }, 'rejected invalid request');
    sendError(response, adapter, error);
  };

  /**
   * Reads, decodes and parses a request body with `parse`, noting its size, model and session on the access
   * line. Undefined when nothing is left to answer: the client went away, or the body was over the limit
   * (answered here, in `adapter`'s envelope).
   */
  const readRequest = async (
    adapter: ProtocolAdapter,
    parse: ProtocolAdapter['parseRequest'],
    request: IncomingMessage,
    response: ServerResponse,
  ): Promise<ParseResult | undefined> => {
    const body = await readBodyText(request, bodyLimit);
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
    const parsed = json.ok ? parse(json.value, flatHeaders(request)) : json;
    if (parsed.ok) {
      const { model, identity } = parsed.value;
      const sessionKey = identity.nativeSessionId?.value ?? identity.promptCacheKey;
      noteAccess(response, {
        model,
        ...(sessionKey === undefined ? {} : { sessionHash: hashSessionKey(sessionKey) }),
      });
    }
    return parsed;
  };

  /** `POST /v1/messages/count_tokens`: the request's input tokens, `{"input_tokens": N}`. */
  const countTokens = async (
    request: IncomingMessage,
    response: ServerResponse,
    log: RequestLog,
  ): Promise<void> => {
    const adapter = adapters.anthropic;
    const parsed = await readRequest(adapter, parseAnthropicCountTokensRequest, request, response);
    if (parsed === undefined) return;
    if (!parsed.ok) return rejectRequest(response, adapter, log, parsed.error);
    const inputTokens = await countTurnTokens(parsed.value);
    if (response.destroyed) return;
    sendJson(response, 200, createAnthropicCountTokensBody(inputTokens));
  };

  /** A turn route: the request through the one turn pipeline, answered in `adapter`'s protocol. */
  const handleTurnRoute = async (
    adapter: ProtocolAdapter,
    request: IncomingMessage,
    response: ServerResponse,
    log: RequestLog,
  ): Promise<void> => {
    const receivedAt = Date.now();
    const parsed = await readRequest(
      adapter,
      (body, headers) => adapter.parseRequest(body, headers),
      request,
      response,
    );
    if (parsed === undefined) return;
    let firstByteSeen = false;
    await runTurnRequest({
      parsed,
      handleTurn: async (turn, signal) => {
        const events = await options.handleTurn(turn, signal);
        if (events.modelRoute !== undefined)
          noteAccess(response, { cursorModel: events.modelRoute.model, route: events.modelRoute.route });
        if (events.account !== undefined) noteAccess(response, { account: events.account });
        return events;
      },
      log,
      warnings: repeatedWarnings,
      idPrefix: adapter.idPrefix,
      watchClient: (abort) => {
        const onClose = (): void => {
          if (!response.writableFinished) abort.abort(new Error('client disconnected'));
        };
        response.on('close', onClose);
        return () => response.off('close', onClose);
      },
      writer: createHttpTurnWriter({
        adapter,
        response,
        log,
        keepaliveMs,
        stallTimeoutMs: options.stallTimeoutMs ?? 0,
        // Recorded once: at the first turn event written, or with the JSON answer.
        firstByte: () => {
          if (firstByteSeen) return;
          firstByteSeen = true;
          options.metrics.firstByte(adapter.protocol, receivedAt);
        },
      }),
    });
  };

  const listModels = async (response: ServerResponse): Promise<void> => {
    const created = Math.floor(Date.now() / 1000);
    const data = (await options.listModels()).map((entry) => {
      const model: ListedModel = typeof entry === 'string' ? { id: entry } : entry;
      return {
        id: model.id,
        object: 'model',
        type: 'model',
        display_name: model.displayName ?? model.id,
        created,
        created_at: new Date(created * 1000).toISOString(),
        owned_by: 'cursor',
        ...(model.aliases === undefined || model.aliases.length === 0 ? {} : { aliases: model.aliases }),
        ...(model.contextWindow === undefined ? {} : { context_window: model.contextWindow }),
      };
    });
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

  /** `GET /debug/conversations`: the live conversations' usage and cost. */
  const conversationsRoute = (list: () => unknown): Route => ({
    method: 'GET',
    path: '/debug/conversations',
    handle: (_request, response) => sendJson(response, 200, list(), { 'cache-control': 'no-store' }),
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
    ...(options.conversations === undefined ? [] : [conversationsRoute(options.conversations)]),
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
    if (options.console !== undefined && isConsolePath(path)) {
      const { apiKey } = options;
      return options.console(request, response, {
        path,
        authorized: apiKey === undefined || apiKeyMatches(apiKey, presentedApiKey(request.headers)),
        keyRequired: apiKey !== undefined,
        local: isLocalRequest(request),
        verifyKey: (key) => apiKey === undefined || apiKeyMatches(apiKey, key),
      });
    }

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

  const server = createServer((request, response) => {
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
  server.keepAliveTimeout = idleConnectionMs;
  return server;
};
