/**
 * Cut streams and retries, end to end: the HTTP server, engine and the REAL `@cursor/sdk` against the
 * fake Cursor backend. Clients cut their streams at the worst moments and retry the identical request,
 * and the suite counts what a user would lose: **0 duplicate executions** (a retry that shows the client
 * a tool call under a new id makes it run the tool again) and **0 lost tool results** (a result posted
 * for a call must reach the run that asked for it).
 */

import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { FakeToolResult, Scenario } from '../fakes/cursor-backend/run-context.js';
import { createGate } from '../helpers/gate.js';
import { closeWireBackend, startWireBridge, type WireBridge } from '../helpers/wire-bridge.js';

let wire: WireBridge | undefined;
afterEach(async () => {
  await wire?.close();
  wire = undefined;
});
afterAll(closeWireBackend);

/** A safety net for waits on events, never the claim. */
const eventually = { timeout: 30_000, interval: 10 };
const resultText = (result: FakeToolResult): string =>
  result.status === 'success'
    ? result.content.map((item) => (item.type === 'text' ? item.text : '')).join('')
    : result.status;

type Protocol = 'anthropic' | 'chat' | 'responses';
type Call = { id: string; name: string; args: string };

const schema = { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] };

/** One protocol's request bodies: an opening, and the opening followed by a call and its result. */
const protocols: Record<
  Protocol,
  { path: string; opening: (stream: boolean) => object; withResult: (call: Call, result: string) => object }
> = {
  anthropic: {
    path: '/v1/messages',
    opening: (stream) => ({
      model: 'composer-2',
      max_tokens: 100,
      stream,
      tools: [{ name: 'Bash', description: 'Run a command', input_schema: schema }],
      messages: [{ role: 'user', content: 'run the listing' }],
    }),
    withResult: (call, result) => ({
      ...protocols.anthropic.opening(true),
      messages: [
        { role: 'user', content: 'run the listing' },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: call.id, name: call.name, input: JSON.parse(call.args) }],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: result }] },
      ],
    }),
  },
  chat: {
    path: '/v1/chat/completions',
    opening: (stream) => ({
      model: 'composer-2',
      stream,
      tools: [
        { type: 'function', function: { name: 'Bash', description: 'Run a command', parameters: schema } },
      ],
      messages: [{ role: 'user', content: 'run the listing' }],
    }),
    withResult: (call, result) => ({
      ...protocols.chat.opening(true),
      messages: [
        { role: 'user', content: 'run the listing' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: call.id, type: 'function', function: { name: call.name, arguments: call.args } },
          ],
        },
        { role: 'tool', tool_call_id: call.id, content: result },
      ],
    }),
  },
  responses: {
    path: '/v1/responses',
    opening: (stream) => ({
      model: 'composer-2',
      stream,
      tools: [{ type: 'function', name: 'Bash', description: 'Run a command', parameters: schema }],
      input: [{ role: 'user', content: 'run the listing' }],
    }),
    withResult: (call, result) => ({
      ...protocols.responses.opening(true),
      input: [
        { role: 'user', content: 'run the listing' },
        { type: 'function_call', call_id: call.id, name: call.name, arguments: call.args },
        { type: 'function_call_output', call_id: call.id, output: result },
      ],
    }),
  },
};

const post = (url: string, body: object, signal?: AbortSignal) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test', 'x-api-key': 'sk-test' },
    body: JSON.stringify(body),
    ...(signal === undefined ? {} : { signal }),
  });

/** The tool calls a stream (or JSON answer) showed the client, in the protocol's own fields. */
const callsIn = (text: string): Call[] => {
  const calls = new Map<string, Call>();
  for (const match of text.matchAll(/"(?:id|call_id)":"(toolu_fake_\d+)"/g)) {
    const id = match[1] ?? '';
    if (!calls.has(id)) calls.set(id, { id, name: 'Bash', args: JSON.stringify({ command: 'ls' }) });
  }
  return [...calls.values()];
};

/** Read a stream until `stop(textSoFar)`, then cut the connection. */
const readThenCut = async (url: string, body: object, stop: (text: string) => boolean): Promise<string> => {
  const abort = new AbortController();
  const response = await post(url, body, abort.signal);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (stop(text)) break;
  }
  abort.abort();
  return text;
};

const isComplete = (text: string): boolean =>
  /message_stop|\[DONE\]|response\.completed|response\.failed/.test(text);

describe('engine faults with the real SDK: stream cuts and dropped clients', () => {
  for (const protocol of ['anthropic', 'chat', 'responses'] as const) {
    it(`${protocol}: a stream cut after the tool call, an identical retry, then the result → 0 duplicate executions, 0 lost results`, async () => {
      const delivered: string[] = [];
      const scenario: Scenario = async (run) => {
        // No announced batch size: the batch ends after the quiet period, which this test widens so that
        // the client's cut (right after it reads the call) always comes first, even on a loaded machine.
        const [result] = await run.toolCalls([{ toolName: 'Bash', args: { command: 'ls' } }], {
          listed: 'none',
        });
        if (result !== undefined) delivered.push(resultText(result));
        run.text(`listed: ${result === undefined ? 'nothing' : resultText(result)}`);
        run.turnEnded();
      };
      wire = await startWireBridge({ scenario, cursor: { batchQuietMs: 1_500 } });
      const { path, opening, withResult } = protocols[protocol];
      const url = `${wire.url}${path}`;
      const executed = new Set<string>();
      let executions = 0;
      const execute = (calls: Call[]) => {
        for (const call of calls) {
          if (executed.has(call.id)) continue;
          executed.add(call.id);
          executions += 1;
        }
      };

      const cut = await readThenCut(url, opening(true), (text) => callsIn(text).length > 0);
      expect(isComplete(cut)).toBe(false);
      execute(callsIn(cut));
      // The bridge is done with the cut response (its turn is counted as ended) before the retry.
      const bridge = wire.bridge;
      await vi.waitFor(async () => expect((await bridge.metrics.snapshot()).turns).toBe(1), eventually);
      // The identical retry (the client did not see the end of the answer).
      const retry = await (await post(url, opening(true))).text();
      expect(isComplete(retry)).toBe(true);
      execute(callsIn(retry));
      // And a second, identical re-send after the complete answer.
      const resend = await (await post(url, opening(true))).text();
      execute(callsIn(resend));
      expect(callsIn(retry)).toEqual(callsIn(cut));
      expect(callsIn(resend)).toEqual(callsIn(cut));
      const [call] = callsIn(cut);
      const final = await (await post(url, withResult(call!, 'a.txt b.txt'))).text();
      expect(final).toContain('listed: a.txt b.txt');
      console.log(
        `[engine-faults] ${protocol}: cut after the tool call + 2 identical re-sends + result: ` +
          `executions ${executions} (duplicates ${executions - 1}), results posted 1, delivered ${delivered.length}, ` +
          `backend runs ${wire.runRequests().length}`,
      );
      expect(executions).toBe(1);
      expect(delivered).toEqual(['a.txt b.txt']);
      expect(wire.runs()).toHaveLength(1);
    });
  }

  it('a stream cut mid-text is cancelled; its identical retry runs again and completes', async () => {
    /** The runs started (an SDK re-send of a run keeps its id). */
    const runs = new Set<string>();
    let cancelled = 0;
    // The rest of the answer waits for the test: the first run can only end by being cancelled.
    const rest = createGate();
    const scenario: Scenario = async (run) => {
      runs.add(run.request.runId);
      run.text('first part. ');
      const aborted = new Promise<void>((resolve) =>
        run.signal.aborted
          ? resolve()
          : run.signal.addEventListener('abort', () => resolve(), { once: true }),
      );
      await Promise.race([rest.opened, aborted]);
      if (run.signal.aborted) {
        cancelled += 1;
        return;
      }
      run.text('second part.');
      run.turnEnded();
    };
    wire = await startWireBridge({ scenario });
    const url = `${wire.url}/v1/messages`;
    const cut = await readThenCut(url, protocols.anthropic.opening(true), (text) =>
      text.includes('first part'),
    );
    expect(isComplete(cut)).toBe(false);
    await vi.waitFor(() => expect(cancelled).toBe(1), eventually);
    rest.open();
    const retry = await (await post(url, protocols.anthropic.opening(true))).text();
    expect(retry).toContain('second part.');
    expect(runs.size).toBe(2);
  });

  it('a client gone before the headers, then the same request without streaming once the bridge let go of it → 200 with the answer', async () => {
    const scenario: Scenario = (run) => {
      run.text('the answer');
      run.turnEnded();
    };
    wire = await startWireBridge({ scenario });
    const { backend, bridge } = wire;
    const url = `${wire.url}/v1/messages`;
    // A new bridge reads the model catalog before it answers anything: held, the bridge cannot have sent
    // a header when the client leaves.
    const catalogFrom = backend.requests.length;
    const releaseCatalog = backend.hold('/v1/models');
    const abort = new AbortController();
    const dropped = post(url, protocols.anthropic.opening(true), abort.signal).catch(
      (error: unknown) => error,
    );
    try {
      await vi.waitFor(
        () =>
          expect(backend.requests.slice(catalogFrom).map((request) => request.path)).toContain('/v1/models'),
        eventually,
      );
      abort.abort();
      expect(await dropped).toMatchObject({ name: 'AbortError' });
    } finally {
      releaseCatalog();
    }
    await vi.waitFor(
      async () => expect((await bridge.metrics.snapshot()).inFlightSessions).toBe(0),
      eventually,
    );
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const response = await post(url, protocols.anthropic.opening(false));
      statuses.push(response.status);
      const json = (await response.json()) as { content?: Array<{ text?: string }> };
      if (response.status === 200) expect(json.content?.[0]?.text).toBe('the answer');
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
  });
});
