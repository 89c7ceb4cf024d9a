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

import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex, Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';
import { bearerToken, queryToken, tokenMatches } from './bearer-token.js';
import { AgentSessions, writeJsonRpcError } from './agent-sessions.js';
import { createHostAllowList, emptyHostAllowList } from './host-allow-list.js';
import type { HostAllowList } from './host-allow-list.js';
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

const defaultSessionIdleMs = 30 * 60_000;
const defaultMaxSessions = 256;
const defaultMaxHosts = 64;
/** How long shutdown waits for the answers of settled calls to reach their agents. */
const shutdownDrainMs = 2_000;
const maxHostMessageBytes = 64 * 1024 * 1024;

/** Answers a refused WebSocket upgrade with a plain HTTP response and a JSON body. */
function rejectUpgrade(
  socket: Duplex,
  status: number,
  reason: string,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify({ error: reason });
  const lines = [
    `HTTP/1.1 ${status} ${reason.split(':')[0]}`,
    'content-type: application/json',
    `content-length: ${Buffer.byteLength(body)}`,
    'connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}

export function createMcpHostServer(options: McpHostServerOptions): McpHostServer {
  const { logger, token } = options;
  const aggregator = new ToolHostAggregator(options);
  let allowList: HostAllowList = emptyHostAllowList;
  let closing: Promise<void> | undefined;
  const sessions = new AgentSessions({
    createServer: () => aggregator.createAgentServer(),
    logger,
    allowList: () => allowList,
    maxSessions: options.maxSessions ?? defaultMaxSessions,
    idleMs: options.sessionIdleMs ?? defaultSessionIdleMs,
  });

  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: maxHostMessageBytes,
    handleProtocols: (protocols) =>
      protocols.has(MCP_WEBSOCKET_SUBPROTOCOL) ? MCP_WEBSOCKET_SUBPROTOCOL : false,
  });

  const authorized = (request: IncomingMessage, allowQuery: boolean): boolean =>
    token === undefined ||
    tokenMatches(token, bearerToken(request)) ||
    (allowQuery && tokenMatches(token, queryToken(request)));

  const health = (): Record<string, unknown> => ({
    status: 'ok',
    ...aggregator.snapshot(),
    sessions: sessions.size,
  });

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
    const refusal = allowList.refusal(request);
    if (refusal !== undefined) {
      logger.warn(
        { path, host: request.headers.host, origin: request.headers.origin },
        'request refused: DNS-rebinding check',
      );
      return writeJsonRpcError(response, 403, -32000, refusal);
    }
    if (path === '/mcp') {
      if (!authorized(request, false)) {
        logger.warn(
          { path, remoteAddress: request.socket.remoteAddress },
          'request refused: bad or missing token',
        );
        return writeJsonRpcError(response, 401, -32001, 'Unauthorized: send Authorization: Bearer <token>', {
          'www-authenticate': 'Bearer',
        });
      }
      await sessions.handle(request, response);
      return;
    }
    if (path === '/host') {
      return writeJsonRpcError(response, 426, -32000, 'The host link is a WebSocket (subprotocol "mcp").', {
        upgrade: 'websocket',
      });
    }
    writeJsonRpcError(
      response,
      404,
      -32601,
      `No route ${request.method ?? 'GET'} ${path}: use /mcp, /host or /health.`,
    );
  };

  const httpServer = createServer((request, response) => {
    handleRequest(request, response).catch((error: unknown) => {
      logger.error({ err: error }, 'mcp-host request failed');
      if (!response.headersSent) writeJsonRpcError(response, 500, -32603, 'Internal error');
      else response.destroy();
    });
  });

  // Claude Code's MCP client (Bun's fetch) reuses a pooled connection without honouring the server's
  // `Keep-Alive: timeout` hint, so a connection Node closed after its default 5 s of idling was reused and
  // reset mid-call ("ECONNRESET: The socket connection was closed unexpectedly") while the agent was busy
  // elsewhere. Idle connections are kept longer than such a client's own pool keeps them.
  httpServer.keepAliveTimeout = 75_000;
  httpServer.headersTimeout = 76_000;

  httpServer.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    socket.on('error', () => socket.destroy());
    if (path !== '/host') return rejectUpgrade(socket, 404, 'Not Found: WebSocket upgrades go to /host');
    const refusal = allowList.refusal(request);
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
          allowList = createHostAllowList(host, bound, options.allowedHosts ?? []);
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
        const reason = 'mcp-host is shutting down';
        try {
          // Settle every parked call first, and let the answers reach their agents before the sessions close.
          aggregator.broker.close(reason);
          await sessions.drain(shutdownDrainMs);
          await aggregator.close(reason);
        } finally {
          await sessions.close();
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
