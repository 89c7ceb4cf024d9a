/**
 * The standalone tool host on one HTTP port: agents speak MCP (Streamable HTTP) at `/mcp`, tool hosts
 * attach at `/host` (WebSocket, MCP with roles reversed), `/health` reports the state. Optionally one
 * more agent over stdio.
 *
 * Contracts:
 * - `/mcp` sessions follow the MCP spec through the SDK's `StreamableHTTPServerTransport`, one transport
 *   and one `custom-user-tools` server per session: a request without `Mcp-Session-Id` goes to a fresh
 *   transport, which accepts only `initialize` (anything else: the SDK's 400); an unknown session id is
 *   404 (the SDK's body). DELETE ends a session; so does being idle (no request, no parked call) for
 *   `sessionIdleMs`. At most `maxSessions` live at once (503 beyond).
 * - DNS-rebinding protection on every route: the Host header must name the bound address (or an allowed
 *   alias) and a present Origin must be one of those hosts over http(s); 403 otherwise.
 * - With a `token`, `/mcp` needs `Authorization: Bearer <token>` and `/host` the same or `?token=`; 401
 *   otherwise. `/health` answers counts to anyone, the full state only with the token.
 * - `close()` settles every parked call (agents get an `isError` result), closes sessions, host links and
 *   the listener, in that order. Idempotent.
 */

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { networkInterfaces } from 'node:os';
import type { Duplex, Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { JSONRPCRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';
import { bearerToken, queryToken, tokenMatches } from './bearer-token.js';
import type { CustomUserToolsServer } from './custom-user-tools-server.js';
import { readJsonBody } from './read-json-body.js';
import { ToolHostAggregator } from './tool-host-aggregator.js';
import type { ToolHostAggregatorOptions } from './tool-host-aggregator.js';
import { MCP_WEBSOCKET_SUBPROTOCOL, WebSocketServerTransport } from './websocket-server-transport.js';

export type McpHostServerOptions = Omit<ToolHostAggregatorOptions, 'logger'> & {
  logger: Logger;
  /** Required on `/mcp` and `/host` when set. */
  token?: string;
  /** Extra Host header names accepted besides the bound address (e.g. a DNS name in front of it). */
  allowedHosts?: readonly string[];
  /** Close an `/mcp` session idle this long (no request, no parked call). Default 30 min. */
  sessionIdleMs?: number;
  /** Live `/mcp` sessions at most. Default 256. */
  maxSessions?: number;
  /** WebSocket ping interval towards hosts. Default 30 s. */
  hostKeepaliveMs?: number;
  /** Attached (or attaching) tool hosts at most. Default 64. */
  maxHosts?: number;
};

export type McpHostAddress = { host: string; port: number };

export type McpHostServer = {
  readonly aggregator: ToolHostAggregator;
  readonly httpServer: Server;
  /** Binds the port; resolves with the bound address (port 0 picks one). */
  listen(port: number, host: string): Promise<McpHostAddress>;
  /** Serves one agent over `input`/`output` (stdio); resolves when that agent leaves (input ends). */
  serveStdio(input: Readable, output: Writable): Promise<void>;
  /** What `/health` reports with the token. */
  health(): Record<string, unknown>;
  close(): Promise<void>;
};

type Session = {
  transport: StreamableHTTPServerTransport;
  agent: CustomUserToolsServer;
  lastSeen: number;
  /** HTTP requests of the session still open (a parked call's POST, the agent's GET stream). */
  open: number;
};

const defaultSessionIdleMs = 30 * 60_000;
/** The SDK transport's own default body limit. */
const maxRequestBodyBytes = 4 * 1024 * 1024;

/** Ids of the JSON-RPC requests in a POST body (one message or a batch). */
function requestIdsOf(body: unknown): RequestId[] {
  const messages = Array.isArray(body) ? (body as unknown[]) : [body];
  return messages.flatMap((message) => {
    const parsed = JSONRPCRequestSchema.safeParse(message);
    return parsed.success ? [parsed.data.id] : [];
  });
}

/** Feeds the session's server a `notifications/cancelled` for `requestId`, as if the agent had sent it. */
function cancelRequest(session: Session, requestId: RequestId): void {
  session.transport.onmessage?.({
    jsonrpc: '2.0',
    method: 'notifications/cancelled',
    params: { requestId, reason: 'The agent disconnected before the result arrived.' },
  });
}
const defaultMaxSessions = 256;
const defaultMaxHosts = 64;
/** How long shutdown waits for the answers of settled calls to reach their agents. */
const shutdownDrainMs = 2_000;
const maxHostMessageBytes = 64 * 1024 * 1024;

const loopbackNames = ['127.0.0.1', 'localhost', '[::1]'];

function jsonRpcError(
  response: ServerResponse,
  status: number,
  code: number,
  message: string,
  headers = {},
): void {
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(body);
}

/** Host names (without port) the server answers to, for a bind address. */
function hostNamesFor(bound: string): string[] {
  const names = new Set<string>();
  const bracket = (address: string): string => (address.includes(':') ? `[${address}]` : address);
  if (bound === '0.0.0.0' || bound === '::') {
    for (const name of loopbackNames) names.add(name);
    for (const list of Object.values(networkInterfaces())) {
      for (const address of list ?? []) names.add(bracket(address.address));
    }
  } else {
    names.add(bracket(bound));
    if (loopbackNames.includes(bracket(bound)) || bound === '::1')
      for (const name of loopbackNames) names.add(name);
  }
  return [...names];
}

export function createMcpHostServer(options: McpHostServerOptions): McpHostServer {
  const { logger, token } = options;
  const aggregator = new ToolHostAggregator(options);
  const sessions = new Map<string, Session>();
  const sessionIdleMs = options.sessionIdleMs ?? defaultSessionIdleMs;
  const maxSessions = options.maxSessions ?? defaultMaxSessions;
  let allowedHosts: string[] = [];
  let allowedOrigins: string[] = [];
  let closing: Promise<void> | undefined;
  /** POSTs to a session still open: calls in flight whose answers are on their way. */
  let openPosts = 0;

  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: maxHostMessageBytes,
    handleProtocols: (protocols) =>
      protocols.has(MCP_WEBSOCKET_SUBPROTOCOL) ? MCP_WEBSOCKET_SUBPROTOCOL : false,
  });

  /** The DNS-rebinding check; answers 403 itself and returns false when the request fails it. */
  const originAllowed = (request: IncomingMessage): string | undefined => {
    const host = request.headers.host;
    if (host === undefined || !allowedHosts.includes(host)) return `Invalid Host header: ${String(host)}`;
    const origin = request.headers.origin;
    if (origin !== undefined && !allowedOrigins.includes(origin)) return `Invalid Origin header: ${origin}`;
    return undefined;
  };

  const authorized = (request: IncomingMessage, allowQuery: boolean): boolean =>
    token === undefined ||
    tokenMatches(token, bearerToken(request)) ||
    (allowQuery && tokenMatches(token, queryToken(request)));

  const health = (): Record<string, unknown> => ({
    status: 'ok',
    ...aggregator.snapshot(),
    sessions: sessions.size,
  });

  const handleMcp = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const header = request.headers['mcp-session-id'];
    const sessionId = Array.isArray(header) ? header[0] : header;
    if (sessionId !== undefined) {
      const session = sessions.get(sessionId);
      if (session === undefined) return jsonRpcError(response, 404, -32001, 'Session not found');
      session.lastSeen = Date.now();
      session.open += 1;
      response.once('close', () => {
        session.open -= 1;
        session.lastSeen = Date.now();
      });
      if (request.method !== 'POST') {
        await session.transport.handleRequest(request, response);
        return;
      }
      openPosts += 1;
      response.once('close', () => (openPosts -= 1));
      const body = await readJsonBody(request, maxRequestBodyBytes);
      if (!body.ok) {
        if (body.reason === 'aborted') return;
        return jsonRpcError(
          response,
          body.reason === 'too-large' ? 413 : 400,
          body.reason === 'too-large' ? -32000 : -32700,
          body.message,
        );
      }
      // Without resumability (no event store) a response whose stream broke can never be delivered: the
      // agent has left those calls, so they are cancelled (the host is told), unless retried meanwhile.
      const requestIds = requestIdsOf(body.value);
      if (requestIds.length > 0) {
        response.once('close', () => {
          if (!response.writableFinished) for (const id of requestIds) cancelRequest(session, id);
        });
      }
      await session.transport.handleRequest(request, response, body.value);
      return;
    }
    if (sessions.size >= maxSessions) {
      return jsonRpcError(
        response,
        503,
        -32000,
        `Too many MCP sessions (at most ${maxSessions}); end one with DELETE.`,
      );
    }
    // A fresh transport: the SDK accepts only `initialize` here and answers anything else with its 400.
    const agent = aggregator.createAgentServer();
    const log = logger.child({ component: 'mcp-session' });
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableDnsRebindingProtection: true,
      allowedHosts,
      allowedOrigins,
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, agent, lastSeen: Date.now(), open: 0 });
        log.info({ sessionId: id, client: agent.server.getClientVersion()?.name }, 'agent session started');
      },
    });
    transport.onclose = () => {
      const id = transport.sessionId;
      if (id !== undefined && sessions.get(id)?.transport === transport) {
        sessions.delete(id);
        log.info({ sessionId: id }, 'agent session ended');
      }
      void agent.close();
    };
    await agent.server.connect(transport);
    await transport.handleRequest(request, response);
    if (transport.sessionId === undefined) await agent.close();
  };

  const handleRequest = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    if (path === '/health' && (request.method === 'GET' || request.method === 'HEAD')) {
      const full = token === undefined || tokenMatches(token, bearerToken(request));
      const snapshot = health();
      const body = full
        ? snapshot
        : {
            status: 'ok',
            hosts: aggregator.snapshot().hosts.length,
            tools: aggregator.toolNames().length,
            parkedCalls: aggregator.broker.pending().length,
          };
      const text = JSON.stringify(body);
      response.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
      });
      response.end(request.method === 'HEAD' ? undefined : text);
      return;
    }
    const refusal = originAllowed(request);
    if (refusal !== undefined) {
      logger.warn(
        { path, host: request.headers.host, origin: request.headers.origin },
        'request refused: DNS-rebinding check',
      );
      return jsonRpcError(response, 403, -32000, refusal);
    }
    if (path === '/mcp') {
      if (!authorized(request, false)) {
        logger.warn(
          { path, remoteAddress: request.socket.remoteAddress },
          'request refused: bad or missing token',
        );
        return jsonRpcError(response, 401, -32001, 'Unauthorized: send Authorization: Bearer <token>', {
          'www-authenticate': 'Bearer',
        });
      }
      await handleMcp(request, response);
      return;
    }
    if (path === '/host') {
      return jsonRpcError(response, 426, -32000, 'The host link is a WebSocket (subprotocol "mcp").', {
        upgrade: 'websocket',
      });
    }
    jsonRpcError(
      response,
      404,
      -32601,
      `No route ${request.method ?? 'GET'} ${path}: use /mcp, /host or /health.`,
    );
  };

  const httpServer = createServer((request, response) => {
    handleRequest(request, response).catch((error: unknown) => {
      logger.error({ err: error }, 'mcp-host request failed');
      if (!response.headersSent) jsonRpcError(response, 500, -32603, 'Internal error');
      else response.destroy();
    });
  });

  const rejectUpgrade = (
    socket: Duplex,
    status: number,
    reason: string,
    headers: Record<string, string> = {},
  ): void => {
    const body = JSON.stringify({ error: reason });
    const lines = [
      `HTTP/1.1 ${status} ${reason.split(':')[0]}`,
      'content-type: application/json',
      `content-length: ${Buffer.byteLength(body)}`,
      'connection: close',
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    ];
    socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
  };

  httpServer.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    socket.on('error', () => socket.destroy());
    if (path !== '/host') return rejectUpgrade(socket, 404, 'Not Found: WebSocket upgrades go to /host');
    const refusal = originAllowed(request);
    if (refusal !== undefined) {
      logger.warn(
        { host: request.headers.host, origin: request.headers.origin },
        'host link refused: DNS-rebinding check',
      );
      return rejectUpgrade(socket, 403, `Forbidden: ${refusal}`);
    }
    if (!authorized(request, true)) {
      logger.warn({ remoteAddress: request.socket.remoteAddress }, 'host link refused: bad or missing token');
      return rejectUpgrade(
        socket,
        401,
        'Unauthorized: pass ?token=<token> or Authorization: Bearer <token>',
        {
          'www-authenticate': 'Bearer',
        },
      );
    }
    const offered = String(request.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((part) => part.trim());
    if (!offered.includes(MCP_WEBSOCKET_SUBPROTOCOL)) {
      return rejectUpgrade(socket, 400, 'Bad Request: the host link needs the WebSocket subprotocol "mcp"');
    }
    if (closing !== undefined)
      return rejectUpgrade(socket, 503, 'Service Unavailable: mcp-host is shutting down');
    const maxHosts = options.maxHosts ?? defaultMaxHosts;
    if (wss.clients.size >= maxHosts) {
      logger.warn({ maxHosts }, 'host link refused: too many tool hosts');
      return rejectUpgrade(socket, 503, `Service Unavailable: at most ${maxHosts} tool hosts`);
    }
    wss.handleUpgrade(request, socket, head, (ws: WebSocket) => {
      const transport = new WebSocketServerTransport(ws, {
        ...(options.hostKeepaliveMs === undefined ? {} : { keepaliveMs: options.hostKeepaliveMs }),
      });
      const remoteAddress = request.socket.remoteAddress;
      aggregator
        .attachHost(transport, remoteAddress === undefined ? {} : { remoteAddress })
        .catch((error: unknown) => {
          logger.warn({ err: error, remoteAddress }, 'tool host failed to attach');
        });
    });
  });

  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [id, session] of sessions) {
        if (session.open > 0 || now - session.lastSeen < sessionIdleMs) continue;
        logger.info({ sessionId: id }, 'agent session idle; closing it');
        void session.transport.close();
      }
    },
    Math.min(sessionIdleMs, 60_000),
  );
  sweep.unref();

  return {
    aggregator,
    httpServer,
    health,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        httpServer.once('error', reject);
        httpServer.listen(port, host, () => {
          httpServer.off('error', reject);
          const address = httpServer.address();
          const bound = typeof address === 'object' && address !== null ? address.port : port;
          // Configured names: as given when they carry a port, else with the bound port and without one
          // (a reverse proxy on a default port sends a bare name).
          const extra = (options.allowedHosts ?? []).flatMap((name) =>
            /:\d+$/.test(name) ? [name] : [`${name}:${bound}`, name],
          );
          allowedHosts = [...hostNamesFor(host).map((name) => `${name}:${bound}`), ...extra];
          allowedOrigins = allowedHosts.flatMap((name) => [`http://${name}`, `https://${name}`]);
          resolve({ host, port: bound });
        });
      }),
    serveStdio: async (input, output) => {
      const agent = aggregator.createAgentServer();
      const transport = new StdioServerTransport(input, output);
      const ended = new Promise<void>((resolve) => {
        input.once('end', resolve);
        input.once('close', resolve);
        const previous = agent.server.onclose;
        agent.server.onclose = () => {
          previous?.();
          resolve();
        };
      });
      await agent.server.connect(transport);
      logger.info('agent connected over stdio');
      await ended;
      logger.info('stdio agent left');
      await agent.close();
    },
    close: () =>
      (closing ??= (async () => {
        clearInterval(sweep);
        const reason = 'mcp-host is shutting down';
        try {
          // Settle every parked call first, and let the answers reach their agents before the sessions close.
          aggregator.broker.close(reason);
          const drainUntil = Date.now() + shutdownDrainMs;
          while (openPosts > 0 && Date.now() < drainUntil)
            await new Promise((resolve) => setTimeout(resolve, 10));
          await aggregator.close(reason);
        } finally {
          await Promise.allSettled([...sessions.values()].map((session) => session.transport.close()));
          sessions.clear();
          for (const client of wss.clients) client.terminate();
          await new Promise<void>((resolve) => {
            wss.close(() => resolve());
          });
          await new Promise<void>((resolve) => {
            httpServer.close(() => resolve());
            httpServer.closeAllConnections();
          });
        }
      })()),
  };
}
