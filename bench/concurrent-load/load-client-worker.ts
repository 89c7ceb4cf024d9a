/**
 * The client of `concurrent-load.bench.ts`, in its own process like a real client (Claude Code) and like
 * `side-by-side/bridge-client-worker.ts`: the driver (which runs the fake Cursor backend) asks it over IPC
 * (the protocol of `side-by-side/child-process.ts` `ipc`) to run conversations against
 * `BENCH_BRIDGE_URL`; it runs them all at once, times every request itself and answers with one report,
 * so no figure includes the driver's scheduling. Forked with IPC and `--experimental-strip-types`, without
 * the tsx loader: it imports nothing but Node's modules.
 *
 * A conversation is what Claude Code sends: one `x-claude-code-session-id`, one `Bash` tool, streaming
 * Messages requests, each with the whole history. Its first request asks for `round trips N` (see
 * `round-trips-scenario.ts`); each answer with a tool_use is answered with its tool_result
 * (`trip-result K of N`, K read from the call's input), until the model answers text. A round trip is one
 * request, timed from its start to its `message_stop`: N answered with a tool_use, then the final answer,
 * so N + 1 per conversation. A conversation stops at its first failure and is then lost; there are no retries.
 */

import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';

/** A request from the driver; each gets one {@link LoadReply} with the same `id`. */
export type LoadRequest = {
  id: number;
  op: 'run';
  /** How many conversations run at once. */
  conversations: number;
  /** Tool round trips per conversation. */
  trips: number;
  /** In every conversation's first message, so no two runs' conversations look alike. */
  tag: string;
  /** A request that has not reached its `message_stop` by then is aborted and counted a failure. */
  requestTimeoutMs: number;
};

/** What one {@link LoadRequest} saw. Times in ms of this process's clock. */
export type LoadReport = {
  /** Requests read to their `message_stop`. */
  roundTrips: number;
  /** Of those round trips (nearest rank); NaN when there were none. */
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
  /** Requests that took over 10 s, to their `message_stop` or to their failure. */
  over10s: number;
  /**
   * Requests that failed: not 200, a stream error (in-band `error` event, a body that ends before
   * `message_stop`, a network error, the timeout), an answer with neither tool_use nor text, or an answer
   * out of step with the round trips asked for.
   */
  failures: number;
  /** The first few failures, as seen. */
  failureSamples: string[];
  /** Conversations that did not reach their final answer after all their round trips. */
  lost: number;
  /** From the start of all conversations until the last one ended. */
  wallMs: number;
};

export type LoadReply = { id: number; report?: LoadReport; error?: string };

const url = process.env['BENCH_BRIDGE_URL'];
if (url === undefined) throw new Error('BENCH_BRIDGE_URL is not set');
const model = 'composer-2';
const tools = [
  {
    name: 'Bash',
    description: 'Run a shell command',
    input_schema: { type: 'object', properties: { command: { type: 'string' } } },
  },
];
const slowMs = 10_000;
const failureSamplesKept = 5;

type Block = { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: unknown };
type Message = { role: 'user' | 'assistant'; content: unknown };
/** One request: the answer's blocks and the time to its `message_stop`, or why it failed and when. */
type RoundTrip = { ok: true; ms: number; content: Block[] } | { ok: false; ms: number; error: string };

/** The SSE events read; anything else is skipped. */
type StreamEvent = {
  type?: string;
  index?: number;
  content_block?: { type?: string; id?: string; name?: string; text?: string };
  delta?: { type?: string; text?: string; partial_json?: string };
  error?: unknown;
};

const parseJson = (text: string): { ok: true; value: unknown } | { ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
};

/** POSTs one streaming request and reads its answer to the end of the body. */
const roundTrip = async (session: string, messages: Message[], timeoutMs: number): Promise<RoundTrip> => {
  const start = performance.now();
  const failed = (error: string): RoundTrip => ({ ok: false, ms: performance.now() - start, error });
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-claude-code-session-id': session },
      body: JSON.stringify({ model, max_tokens: 1024, stream: true, tools, messages }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (response.status !== 200) {
      return failed(`HTTP ${response.status}: ${(await response.text()).slice(0, 300)}`);
    }
    const blocks = new Map<
      number,
      { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; json: string }
    >();
    let stopAt: number | undefined;
    let streamError: string | undefined;
    const onEvent = (data: string): void => {
      const parsed = parseJson(data);
      if (!parsed.ok) {
        streamError ??= `unparseable SSE data: ${data.slice(0, 200)}`;
        return;
      }
      const event = parsed.value as StreamEvent;
      const block = event.index === undefined ? undefined : blocks.get(event.index);
      if (event.type === 'error') {
        streamError ??= `error event: ${JSON.stringify(event.error).slice(0, 300)}`;
      } else if (event.type === 'content_block_start' && event.index !== undefined) {
        const started = event.content_block;
        if (started?.type === 'text') blocks.set(event.index, { type: 'text', text: started.text ?? '' });
        if (started?.type === 'tool_use') {
          blocks.set(event.index, {
            type: 'tool_use',
            id: started.id ?? '',
            name: started.name ?? '',
            json: '',
          });
        }
      } else if (event.type === 'content_block_delta') {
        if (block?.type === 'text' && event.delta?.type === 'text_delta')
          block.text += event.delta.text ?? '';
        if (block?.type === 'tool_use' && event.delta?.type === 'input_json_delta') {
          block.json += event.delta.partial_json ?? '';
        }
      } else if (event.type === 'message_stop') {
        stopAt ??= performance.now() - start;
      }
    };
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let newline: number;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline).replace(/\r$/, '');
        buffer = buffer.slice(newline + 1);
        if (line.startsWith('data:')) onEvent(line.slice(5).trimStart());
      }
    }
    if (streamError !== undefined) return failed(streamError);
    if (stopAt === undefined) return failed('the stream ended without message_stop');
    const content: Block[] = [];
    for (const block of [...blocks.entries()].sort(([a], [b]) => a - b).map(([, one]) => one)) {
      if (block.type === 'text') {
        content.push(block);
        continue;
      }
      const input = parseJson(block.json === '' ? '{}' : block.json);
      if (!input.ok)
        return failed(`tool_use ${block.id} with unparseable input: ${block.json.slice(0, 200)}`);
      content.push({ type: 'tool_use', id: block.id, name: block.name, input: input.value });
    }
    return { ok: true, ms: stopAt, content };
  } catch (error) {
    return failed(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
  }
};

/** What the conversations of one run add up to. */
type Tally = { times: number[]; over10s: number; failures: string[]; finished: number };

/** The call number K of a `echo trip-call K` input (`fallback` when the input has none). */
const callNumber = (input: unknown, fallback: number): number => {
  const command = (input as { command?: unknown } | null)?.command;
  const match = typeof command === 'string' ? /trip-call (\d+)/.exec(command) : null;
  return match === null ? fallback : Number(match[1]);
};

/** One conversation to its final answer or its first failure. */
const runConversation = async (
  name: string,
  trips: number,
  timeoutMs: number,
  tally: Tally,
): Promise<void> => {
  const session = randomUUID();
  const messages: Message[] = [{ role: 'user', content: `Conversation ${name}: round trips ${trips}.` }];
  let done = 0;
  const fail = (error: string): void =>
    void tally.failures.push(`${name} after ${done} round trips: ${error}`);
  for (;;) {
    const trip = await roundTrip(session, messages, timeoutMs);
    if (trip.ms > slowMs) tally.over10s += 1;
    if (!trip.ok) return fail(trip.error);
    tally.times.push(trip.ms);
    const calls = trip.content.filter((block) => block.type === 'tool_use');
    if (calls.length === 0) {
      const text = trip.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
      if (text === '') return fail('an answer with neither tool_use nor text');
      if (done !== trips || !text.includes(`after ${trips} round trips`)) {
        return fail(`answered ${JSON.stringify(text.slice(0, 100))}`);
      }
      tally.finished += 1;
      return;
    }
    if (done + calls.length > trips) return fail(`tool call ${done + calls.length} of ${trips} round trips`);
    messages.push(
      // An empty text block is invalid in a request (the Messages API rejects it).
      {
        role: 'assistant',
        content: trip.content.filter((block) => block.type !== 'text' || block.text !== ''),
      },
      {
        role: 'user',
        content: calls.map((call, index) => ({
          type: 'tool_result',
          tool_use_id: call.id,
          content: `trip-result ${callNumber(call.input, done + index + 1)} of ${trips}`,
        })),
      },
    );
    done += calls.length;
  }
};

/** Nearest-rank percentile of sorted values. */
const percentile = (sorted: readonly number[], fraction: number): number =>
  sorted[Math.max(0, Math.ceil(fraction * sorted.length) - 1)] ?? Number.NaN;

const run = async (request: LoadRequest): Promise<LoadReport> => {
  const tally: Tally = { times: [], over10s: 0, failures: [], finished: 0 };
  const start = performance.now();
  await Promise.all(
    Array.from({ length: request.conversations }, (_, index) =>
      runConversation(`${request.tag}-${index}`, request.trips, request.requestTimeoutMs, tally),
    ),
  );
  const wallMs = performance.now() - start;
  const sorted = [...tally.times].sort((a, b) => a - b);
  return {
    roundTrips: sorted.length,
    p50Ms: percentile(sorted, 0.5),
    p95Ms: percentile(sorted, 0.95),
    maxMs: sorted.at(-1) ?? Number.NaN,
    over10s: tally.over10s,
    failures: tally.failures.length,
    failureSamples: tally.failures.slice(0, failureSamplesKept),
    lost: request.conversations - tally.finished,
    wallMs,
  };
};

process.on('message', (request: LoadRequest) => {
  run(request).then(
    (report) => process.send?.({ id: request.id, report } satisfies LoadReply),
    (error: unknown) =>
      process.send?.({ id: request.id, error: error instanceof Error ? error.stack : String(error) }),
  );
});
// Without the driver there is nothing to do (it died or is done).
process.on('disconnect', () => process.exit(0));
process.send?.({ id: 0 } satisfies LoadReply);
