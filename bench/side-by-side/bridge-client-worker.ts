/**
 * The bridge's client for `side-by-side.bench.ts`, in its own process like a real client (Claude Code) and
 * like `bare-sdk-worker.ts` on the other side: the driver (which also runs the fake Cursor backend) sends
 * it requests over IPC, it POSTs streaming Messages requests with `fetch` to `BENCH_BRIDGE_URL`, parses
 * the SSE and times each figure itself (`performance.now()` here, from the request's start), so no figure
 * includes the driver's own scheduling (the fake backend running in the driver's event loop while the
 * bridge's answer waits to be read). Forked with IPC and `--experimental-strip-types`, without the tsx
 * loader.
 */

import { performance } from 'node:perf_hooks';

/** A Messages message as the driver builds it. */
export type Message = { role: 'user' | 'assistant'; content: unknown };

/** One streaming POST: `parse: false` only notes the first `text_delta` (the 10k-delta answer). */
export type Post = { session: string; messages: Message[]; parse: boolean };

/** A request from the driver; every request gets one {@link ClientReply} with the same `id`. */
export type ClientRequest =
  | ({ id: number; op: 'post' } & Post)
  /** All `posts` at once; `ms` is from their start until the last one's first tool_use. */
  | { id: number; op: 'burst'; posts: Post[] };

/** What one POST saw, in ms from its request's start (undefined: no such event). */
export type Posted = {
  /** The response's headers (`fetch` resolved): the client's first response byte. */
  headersAt: number;
  textAt?: number;
  toolAt?: number;
  /** The `message_stop` event: on a tool turn, when the client may run the tool (Claude Code waits for it). */
  stopAt?: number;
  /** The end of the response body. */
  endAt: number;
  /** The assistant's content blocks (text, tool_use with its id), to answer with a tool_result. */
  content: unknown[];
};

export type ClientReply = {
  id: number;
  posted?: Posted[];
  ms?: number;
  error?: string;
};

const url = process.env['BENCH_BRIDGE_URL'];
if (url === undefined) throw new Error('BENCH_BRIDGE_URL is not set');
// Through a router (`ccr3-plugin.bench.ts`): the model its rule routes and the router's API key header.
const model = process.env['BENCH_BRIDGE_MODEL'] ?? 'composer-2';
const extraHeaders = JSON.parse(process.env['BENCH_BRIDGE_HEADERS'] ?? '{}') as Record<string, string>;
const tools = [
  {
    name: 'Bash',
    description: 'Run a shell command',
    input_schema: { type: 'object', properties: { command: { type: 'string' } } },
  },
];

/** POST one streaming Messages request, timed from `start` (a `performance.now()` of this process). */
const post = async ({ session, messages, parse }: Post, start = performance.now()): Promise<Posted> => {
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...extraHeaders, 'content-type': 'application/json', 'x-claude-code-session-id': session },
    body: JSON.stringify({ model, max_tokens: 50, stream: true, tools, messages }),
  });
  if (response.status !== 200)
    throw new Error(`bridge answered ${response.status}: ${await response.text()}`);
  const headersAt = performance.now() - start;
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const result: Posted = { headersAt, endAt: 0, content: [] };
  let buffer = '';
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    if (!parse) {
      if (result.textAt === undefined && decoder.decode(value).includes('text_delta')) {
        result.textAt = performance.now() - start;
      }
      continue;
    }
    buffer += decoder.decode(value, { stream: true });
    let newline: number;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      if (!line.startsWith('data: ')) continue;
      const event = JSON.parse(line.slice(6)) as {
        type: string;
        content_block?: { type: string; id?: string; name?: string };
        delta?: { type: string; text?: string };
      };
      if (event.type === 'content_block_delta' && event.delta?.type === 'text_delta') {
        result.textAt ??= performance.now() - start;
        text += event.delta.text ?? '';
      } else if (event.type === 'content_block_start' && event.content_block?.type === 'tool_use') {
        result.toolAt ??= performance.now() - start;
        if (text !== '') result.content.push({ type: 'text', text });
        text = '';
        result.content.push({ ...event.content_block, input: { command: 'true' } });
      } else if (event.type === 'message_stop') {
        result.stopAt ??= performance.now() - start;
      }
    }
  }
  result.endAt = performance.now() - start;
  // The answer's text after its last tool_use too, so the next turn can send the whole answer back.
  if (text !== '') result.content.push({ type: 'text', text });
  return result;
};

const handle = async (request: ClientRequest): Promise<Omit<ClientReply, 'id'>> => {
  switch (request.op) {
    case 'post':
      return { posted: [await post(request)] };
    case 'burst': {
      const start = performance.now();
      const posted = await Promise.all(request.posts.map((one) => post(one, start)));
      const last = Math.max(...posted.map((one) => one.toolAt ?? Number.NaN));
      return { posted, ms: last };
    }
  }
};

process.on('message', (request: ClientRequest) => {
  handle(request).then(
    (reply) => process.send?.({ id: request.id, ...reply } satisfies ClientReply),
    (error: unknown) =>
      process.send?.({ id: request.id, error: error instanceof Error ? error.stack : String(error) }),
  );
});
// Without the driver there is nothing to do (it died or is done).
process.on('disconnect', () => process.exit(0));
process.send?.({ id: 0 } satisfies ClientReply);
