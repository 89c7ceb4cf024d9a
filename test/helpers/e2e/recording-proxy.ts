/**
 * The host side of the path from a client's network namespace to `cursor-bridge serve`: an HTTP server
 * on a unix socket (which `netns-relay.ts` reaches from inside the namespace) that forwards every
 * request to the bridge's loopback TCP port, streaming both ways, and records each exchange: the request
 * body, what the bridge's protocol adapter makes of it (the same parser, run here on the same body), the
 * status and every SSE frame the bridge sent, keepalives counted.
 *
 * Forwarding is per request, chunk by chunk as the bridge writes it; a client that hangs up aborts the
 * forwarded request, so the bridge sees the disconnect.
 */

import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import { anthropicAdapter } from '../../../src/protocols/anthropic/anthropic-adapter.js';
import { openaiChatAdapter } from '../../../src/protocols/openai-chat/openai-chat-adapter.js';
import { openaiResponsesAdapter } from '../../../src/protocols/openai-responses/openai-responses-adapter.js';
import type { ProtocolAdapter } from '../../../src/protocols/protocol-adapter.js';
import type { SseFrame } from '../../../src/protocols/sse-frame.js';
import type { RecordedExchange } from './e2e-bridge.js';

const turnRoutes = new Map<string, ProtocolAdapter>([
  ['/v1/messages', anthropicAdapter],
  ['/v1/chat/completions', openaiChatAdapter],
  ['/v1/responses', openaiResponsesAdapter],
]);

/** Hop-by-hop headers: each leg of the proxy negotiates its own. */
const hopByHop = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection']);

const forwardable = (headers: IncomingHttpHeaders): IncomingHttpHeaders =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => !hopByHop.has(name.toLowerCase())));

const flatHeaders = (headers: IncomingHttpHeaders): Record<string, string> =>
  Object.fromEntries(
    Object.entries(headers).flatMap(([name, value]) =>
      value === undefined ? [] : [[name, Array.isArray(value) ? value.join(', ') : value]],
    ),
  );

/** One SSE block (the text between blank lines) as a frame. */
const parseSseBlock = (block: string): SseFrame | undefined => {
  const lines = block.split(/\r\n|\r|\n/);
  let event: string | undefined;
  const data: string[] = [];
  const comments: string[] = [];
  for (const line of lines) {
    if (line.startsWith(':')) comments.push(line.slice(1).trimStart());
    else if (line.startsWith('event:')) event = line.slice(6).trimStart();
    else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  if (data.length > 0) return { ...(event === undefined ? {} : { event }), data: data.join('\n') };
  if (comments.length > 0) return { comment: comments.join(' ') };
  return undefined;
};

/**
 * Whether a frame is a keepalive, as each encoder writes one: an SSE comment, Anthropic's `ping`
 * event, or a Responses `response.in_progress` after the first (a repeated snapshot).
 */
const isKeepalive = (frame: SseFrame, earlier: readonly SseFrame[]): boolean => {
  if ('comment' in frame) return true;
  if (frame.event === 'ping') return true;
  return (
    frame.event === 'response.in_progress' &&
    earlier.some((seen) => 'event' in seen && seen.event === 'response.in_progress')
  );
};

/** A request of the conversation under test: it carries the client's shell tool, which side requests do not. */
export const isMainExchange = (exchange: RecordedExchange, shellName: string): boolean =>
  exchange.parsed?.ok === true && exchange.parsed.turn.tools.some((tool) => tool.name === shellName);

/**
 * Keepalives the bridge sent over the main exchanges so far. A side request running beside them (a title,
 * say) may get keepalives of its own, which must not wake a silent step of the conversation.
 */
export const countKeepalives = (exchanges: readonly RecordedExchange[], shellName: string): number =>
  exchanges.reduce(
    (total, exchange) => (isMainExchange(exchange, shellName) ? total + exchange.keepalives : total),
    0,
  );

export type RecordingProxy = {
  readonly exchanges: readonly RecordedExchange[];
  close(): Promise<void>;
};

/** Listen on `socketPath` and forward to `http://127.0.0.1:<targetPort>`. */
export const startRecordingProxy = async (options: {
  socketPath: string;
  targetPort: number;
}): Promise<RecordingProxy> => {
  const exchanges: RecordedExchange[] = [];
  const server: Server = createServer((clientRequest, clientResponse) => {
    const exchange: RecordedExchange = {
      method: clientRequest.method ?? 'GET',
      url: clientRequest.url ?? '/',
      headers: { ...clientRequest.headers },
      frames: [],
      keepalives: 0,
    };
    exchanges.push(exchange);
    const chunks: Buffer[] = [];
    clientRequest.on('data', (chunk: Buffer) => chunks.push(chunk));
    clientRequest.on('end', () => {
      const body = Buffer.concat(chunks);
      const path = exchange.url.split('?')[0] ?? '';
      const adapter = turnRoutes.get(path);
      if (adapter !== undefined && exchange.method === 'POST') {
        exchange.protocol = adapter.protocol;
        try {
          exchange.body = JSON.parse(body.toString('utf8')) as unknown;
          const parsed = adapter.parseRequest(exchange.body, flatHeaders(clientRequest.headers));
          exchange.parsed = parsed.ok ? { ok: true, turn: parsed.value } : { ok: false, error: parsed.error };
        } catch {
          exchange.body = body.toString('utf8');
        }
      } else if (path === '/v1/messages/count_tokens' && exchange.method === 'POST') {
        try {
          exchange.body = JSON.parse(body.toString('utf8')) as unknown;
        } catch {
          exchange.body = body.toString('utf8');
        }
      }
      const upstream = httpRequest(
        {
          host: '127.0.0.1',
          port: options.targetPort,
          method: exchange.method,
          path: exchange.url,
          headers: { ...forwardable(clientRequest.headers), 'content-length': String(body.length) },
          agent: false,
        },
        (bridgeResponse) => {
          clientResponse.writeHead(bridgeResponse.statusCode ?? 502, forwardable(bridgeResponse.headers));
          const sse = String(bridgeResponse.headers['content-type'] ?? '').startsWith('text/event-stream');
          let pending = '';
          let text = '';
          bridgeResponse.on('data', (chunk: Buffer) => {
            clientResponse.write(chunk);
            const piece = chunk.toString('utf8');
            if (!sse) {
              text += piece;
              return;
            }
            pending += piece;
            const blocks = pending.split(/\r?\n\r?\n/);
            pending = blocks.pop() ?? '';
            for (const block of blocks) {
              const frame = parseSseBlock(block);
              if (frame === undefined) continue;
              if (isKeepalive(frame, exchange.frames)) exchange.keepalives += 1;
              exchange.frames.push(frame);
            }
          });
          bridgeResponse.on('end', () => {
            exchange.status = bridgeResponse.statusCode ?? 502;
            if (!sse && text !== '') {
              try {
                exchange.json = JSON.parse(text) as unknown;
              } catch {
                exchange.json = text;
              }
            }
            clientResponse.end();
          });
          bridgeResponse.on('error', () => clientResponse.destroy());
          bridgeResponse.on('aborted', () => clientResponse.destroy());
        },
      );
      upstream.on('error', (error) => {
        exchange.error = `proxy → bridge: ${error.message}`;
        if (!clientResponse.headersSent) {
          clientResponse.writeHead(502, { 'content-type': 'text/plain' });
          clientResponse.end(`e2e proxy: the bridge is unreachable: ${error.message}`);
        } else clientResponse.destroy();
      });
      clientResponse.on('close', () => {
        if (!clientResponse.writableFinished) {
          exchange.error ??= 'the client hung up before the response ended';
          upstream.destroy();
        }
      });
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.socketPath, () => resolve());
  });
  return {
    exchanges,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
};
