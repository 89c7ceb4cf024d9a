/**
 * The `/mcp` endpoint's sessions: one SDK `StreamableHTTPServerTransport` and one `custom-user-tools`
 * server per agent session, the session rules left to the SDK.
 *
 * Contracts:
 * - A request without `Mcp-Session-Id` goes to a fresh transport, which accepts only `initialize` (the
 *   SDK answers anything else with its 400) and then becomes a session; an unknown id is 404 with the
 *   SDK's body. DELETE (handled by the SDK) or the transport closing ends a session and its server.
 * - A POST whose response stream breaks before the response is complete cancels its requests: without
 *   an event store the SDK cannot replay that response, so nobody could ever receive it.
 * - Bounded: at most `maxSessions` (503 beyond); a session with no open request for `idleMs` is closed.
 */

import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { JSONRPCRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import type { CustomUserToolsServer } from './custom-user-tools-server.js';
import type { HostAllowList } from './host-allow-list.js';
import { readJsonBody } from './read-json-body.js';
import { sleep } from '../lib/sleep.js';

export type AgentSessionsOptions = {
  createServer: () => CustomUserToolsServer;
  logger: Logger;
  /** The current DNS-rebinding allow-list, handed to each new transport. */
  allowList: () => HostAllowList;
  maxSessions: number;
  idleMs: number;
};

type Session = {
  transport: StreamableHTTPServerTransport;
  agent: CustomUserToolsServer;
  lastSeen: number;
  /** HTTP requests of the session still open (a parked call's POST, the agent's GET stream). */
  open: number;
};

/** The SDK transport's own default body limit. */
const maxRequestBodyBytes = 4 * 1024 * 1024;

/** Writes a JSON-RPC error response the way the SDK's transport does (`id: null`). */
export function writeJsonRpcError(
  response: ServerResponse,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(body);
}

export class AgentSessions {
  readonly #options: AgentSessionsOptions;
  readonly #sessions = new Map<string, Session>();
  readonly #sweep: NodeJS.Timeout;
  #openPosts = 0;

  constructor(options: AgentSessionsOptions) {
    this.#options = options;
    this.#sweep = setInterval(() => this.#closeIdle(), Math.min(options.idleMs, 60_000));
    this.#sweep.unref();
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** Handles one authorized `/mcp` request (GET, POST or DELETE). */
  async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const header = request.headers['mcp-session-id'];
    const sessionId = Array.isArray(header) ? header[0] : header;
    if (sessionId === undefined) return this.#start(request, response);
    const session = this.#sessions.get(sessionId);
    if (session === undefined) return writeJsonRpcError(response, 404, -32001, 'Session not found');
    session.lastSeen = Date.now();
    session.open += 1;
    response.once('close', () => {
      session.open -= 1;
      session.lastSeen = Date.now();
    });
    if (request.method !== 'POST') return session.transport.handleRequest(request, response);

    this.#openPosts += 1;
    response.once('close', () => (this.#openPosts -= 1));
    const body = await readJsonBody(request, maxRequestBodyBytes);
    if (!body.ok) {
      if (body.error.reason === 'aborted') return;
      const tooLarge = body.error.reason === 'too-large';
      return writeJsonRpcError(
        response,
        tooLarge ? 413 : 400,
        tooLarge ? -32000 : -32700,
        body.error.message,
      );
    }
    this.#options.logger.debug({ sessionId, methods: methodsOf(body.value) }, 'agent request');
    const requestIds = requestIdsOf(body.value);
    if (requestIds.length > 0) {
      response.once('close', () => {
        if (!response.writableFinished) for (const id of requestIds) cancelRequest(session, id);
      });
    }
    await session.transport.handleRequest(request, response, body.value);
  }

  /** Waits (at most `timeoutMs`) until no POST is open: the answers of settled calls have gone out. */
  async drain(timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (this.#openPosts > 0 && Date.now() < until) await sleep(10);
  }

  /** Closes every session (their servers cancel what they still wait on). */
  async close(): Promise<void> {
    clearInterval(this.#sweep);
    const sessions = [...this.#sessions.values()];
    this.#sessions.clear();
    await Promise.allSettled(sessions.map((session) => session.transport.close()));
  }

  async #start(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const { maxSessions, logger } = this.#options;
    if (this.#sessions.size >= maxSessions) {
      const message = `Too many MCP sessions (at most ${maxSessions}); end one with DELETE.`;
      return writeJsonRpcError(response, 503, -32000, message);
    }
    const agent = this.#options.createServer();
    const allowList = this.#options.allowList();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableDnsRebindingProtection: true,
      allowedHosts: allowList.hosts,
      allowedOrigins: allowList.origins,
      onsessioninitialized: (id) => {
        this.#sessions.set(id, { transport, agent, lastSeen: Date.now(), open: 0 });
        const client = agent.server.getClientVersion();
        logger.info(
          { sessionId: id, client: client?.name, clientVersion: client?.version },
          'agent session started',
        );
      },
    });
    transport.onclose = () => {
      const id = transport.sessionId;
      if (id !== undefined && this.#sessions.get(id)?.transport === transport) {
        this.#sessions.delete(id);
        logger.info({ sessionId: id }, 'agent session ended');
      }
      void agent.close();
    };
    await agent.server.connect(transport);
    await transport.handleRequest(request, response);
    // Not an initialize: the SDK answered 400 and no session exists.
    if (transport.sessionId === undefined) await agent.close();
  }

  #closeIdle(): void {
    const now = Date.now();
    for (const [id, session] of this.#sessions) {
      if (session.open > 0 || now - session.lastSeen < this.#options.idleMs) continue;
      this.#options.logger.info({ sessionId: id }, 'agent session idle; closing it');
      void session.transport.close();
    }
  }
}

/** Ids of the JSON-RPC requests in a POST body (one message or a batch). */
function requestIdsOf(body: unknown): RequestId[] {
  const messages = Array.isArray(body) ? (body as unknown[]) : [body];
  return messages.flatMap((message) => {
    const parsed = JSONRPCRequestSchema.safeParse(message);
    return parsed.success ? [parsed.data.id] : [];
  });
}

/** The JSON-RPC methods in a POST body, for the log (never the parameters: they carry the agent's data). */
function methodsOf(body: unknown): string[] {
  const messages = Array.isArray(body) ? (body as unknown[]) : [body];
  return messages.flatMap((message) =>
    typeof message === 'object' &&
    message !== null &&
    typeof (message as { method?: unknown }).method === 'string'
      ? [(message as { method: string }).method]
      : [],
  );
}

/** Feeds the session's server a `notifications/cancelled` for `requestId`, as if the agent had sent it. */
function cancelRequest(session: Session, requestId: RequestId): void {
  session.transport.onmessage?.({
    jsonrpc: '2.0',
    method: 'notifications/cancelled',
    params: { requestId, reason: 'The agent disconnected before the result arrived.' },
  });
}
