/**
 * Backend faults, end to end: the whole bridge with the real `@cursor/sdk` against the project's fake
 * Cursor backend (run errors of each Connect code class, the backend killed mid-turn and restarted, the
 * backend down, stalls). For each case the client must get a complete protocol answer (Anthropic
 * Messages streaming: `message_start` … `message_stop`), and across the file the client must execute
 * every tool call once and every posted result must reach the model once: 0 duplicate executions, 0
 * lost tool results.
 *
 * No assertion here is on elapsed time. A case that claims one of the bridge's silence bounds ended the
 * turn checks the error naming that bound, received while the fault the test made is still there (the
 * backend still down, or still stalled). The bound a case exercises (`boundMs`) is far above the
 * loopback's latency even on a loaded machine, since the good turns of the same bridge must fit under it;
 * the other bound of that bridge is never reached, so it cannot decide the outcome on a slow machine. The case that lets the SDK exhaust its own
 * retries waits for its back-off (≈16 s; nothing in the SDK lets a test shorten it).
 */

import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { ConnectErrorCode, RunContext, Scenario } from '../fakes/cursor-backend/run-context.js';
import { closeWireBackend, startWireBridge, type WireBridge } from '../helpers/wire-bridge.js';

/** The silence bound a case exercises. */
const boundMs = 5000;
/** A bound no case reaches: the outcome is decided by the fault, never by how fast the machine is. */
const unreachedMs = 120_000;
const configWith = (bounds: { firstEventTimeoutMs: number; idleTimeoutMs: number }) => ({
  Providers: [
    {
      name: 'cursor',
      api_base_url: 'https://cursor.com',
      api_key: '$CURSOR_API_KEY',
      models: ['composer-2'],
      transformer: { use: [['cursor-sdk', bounds]] },
    },
  ],
});
/** Neither bound can end a turn: the backend's own answers do. */
const unbounded = configWith({ firstEventTimeoutMs: unreachedMs, idleTimeoutMs: unreachedMs });
/** The wait for a run's first event is bounded. */
const firstEventBounded = configWith({ firstEventTimeoutMs: boundMs, idleTimeoutMs: unreachedMs });
/** The silence in the middle of an answer is bounded. */
const idleBounded = configWith({ firstEventTimeoutMs: unreachedMs, idleTimeoutMs: boundMs });
/** A safety net for waits on events, never the claim. */
const eventually = { timeout: 30_000, interval: 20 };

const bash = {
  name: 'Bash',
  description: 'Run a shell command on the host',
  input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
};

/** Tool executions on the client side and tool results reaching the fake model, by tool call id. */
const executions = new Map<string, number>();
const delivered = new Map<string, number>();
const bump = (counts: Map<string, number>, id: string): void =>
  void counts.set(id, (counts.get(id) ?? 0) + 1);

let wire: WireBridge | undefined;
afterEach(async () => {
  await wire?.close();
  wire = undefined;
});
afterAll(async () => {
  await closeWireBackend();
  // Across the whole file: every executed call ran once and its result reached the model once.
  expect([...executions.values()].filter((count) => count !== 1)).toEqual([]);
  expect([...delivered.values()].filter((count) => count !== 1)).toEqual([]);
  expect([...executions.keys()].sort()).toEqual([...delivered.keys()].sort());
  expect(executions.size).toBeGreaterThanOrEqual(3);
});

type Answer = {
  status: number;
  events: string[];
  text: string;
  toolUses: Array<{ id: string; name: string; input: Record<string, unknown> }>;
  error: { type: string; message: string } | undefined;
  body: string;
};

/** The fields of Messages SSE events this file reads. */
type SseEvent = {
  content_block?: { type: string; id?: string; name?: string };
  delta?: { type: string; text?: string; partial_json?: string };
  error?: { type: string; message: string };
};

/**
 * One streaming Messages request, parsed as it arrives: `onText` sees the text so far after each text
 * delta (a test acts on what the client has seen, not after a delay).
 */
const send = async (url: string, messages: unknown[], onText?: (text: string) => void): Promise<Answer> => {
  const response = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': 'sk-test',
      'anthropic-version': '2023-06-01',
    },
    body: JSON.stringify({ model: 'composer-2', max_tokens: 200, stream: true, tools: [bash], messages }),
  });
  const answer: Answer = {
    status: response.status,
    events: [],
    text: '',
    toolUses: [],
    error: undefined,
    body: '',
  };
  if (!(response.headers.get('content-type') ?? '').includes('text/event-stream')) {
    answer.body = await response.text();
    answer.error = (JSON.parse(answer.body) as { error: Answer['error'] }).error;
    return answer;
  }
  const inputs: string[] = [];
  const onBlock = (block: string): void => {
    const name = /^event: (.+)$/m.exec(block)?.[1];
    const data = /^data: (.+)$/m.exec(block)?.[1];
    if (name === undefined || data === undefined) return;
    answer.events.push(name);
    const event = JSON.parse(data) as SseEvent;
    const content = event.content_block;
    if (name === 'content_block_start' && content?.type === 'tool_use') {
      answer.toolUses.push({ id: content.id ?? '', name: content.name ?? '', input: {} });
      inputs.push('');
    } else if (name === 'content_block_delta' && event.delta?.type === 'text_delta') {
      answer.text += event.delta.text ?? '';
      onText?.(answer.text);
    } else if (name === 'content_block_delta' && event.delta?.type === 'input_json_delta')
      inputs[inputs.length - 1] += event.delta.partial_json ?? '';
    else if (name === 'error') answer.error = event.error;
  };
  const decoder = new TextDecoder();
  let pending = '';
  for await (const chunk of response.body ?? []) {
    const text = decoder.decode(chunk as Uint8Array, { stream: true });
    answer.body += text;
    pending += text;
    let end: number;
    while ((end = pending.indexOf('\n\n')) >= 0) {
      onBlock(pending.slice(0, end));
      pending = pending.slice(end + 2);
    }
  }
  onBlock(pending);
  answer.toolUses.forEach(
    (use, index) => (use.input = JSON.parse(inputs[index] || '{}') as Record<string, unknown>),
  );
  return answer;
};

/** A complete Messages stream: starts with message_start, ends with message_stop. */
const expectComplete = (answer: Answer): void => {
  expect(answer.status).toBe(200);
  expect(answer.events[0]).toBe('message_start');
  expect(answer.events.at(-1)).toBe('message_stop');
};

/** The in-band error of a turn the bridge's silence bound ended: retryable, naming the bound. */
const silenceError = (phase: 'first-event' | 'idle') => ({
  type: 'overloaded_error',
  message: expect.stringMatching(
    phase === 'first-event'
      ? /^Cursor sent no event within 5 s of the request .*Retry shortly\.$/
      : /^Cursor sent nothing for 5 s in the middle of the answer .*Retry shortly\.$/,
  ),
});

/** The client's side of a tool call: runs it (counted) and returns the follow-up messages. */
const execute = (messages: unknown[], answer: Answer): unknown[] => {
  for (const use of answer.toolUses) bump(executions, use.id);
  return [
    ...messages,
    { role: 'assistant', content: answer.toolUses.map((use) => ({ type: 'tool_use', ...use })) },
    {
      role: 'user',
      content: answer.toolUses.map((use) => ({
        type: 'tool_result',
        tool_use_id: use.id,
        content: `ran ${String(use.input['command'])}`,
      })),
    },
  ];
};

/** The fake model: one tool call (the same id on every attempt, as a server replaying the run would), then text. */
const toolThenText =
  (callId: string, before?: (run: RunContext) => Promise<void>): Scenario =>
  async (run) => {
    const result = await run.toolCall({ callId, toolName: 'Bash', args: { command: `echo ${callId}` } });
    if (result.status === 'success') bump(delivered, result.toolCallId);
    await before?.(run);
    run.text(`model saw ${result.status === 'success' ? JSON.stringify(result.content[0]) : result.status}`);
    run.turnEnded({ inputTokens: 1, outputTokens: 1 });
  };

const attemptsOf =
  (attempts: RunContext[], play: Scenario): Scenario =>
  (run) => {
    attempts.push(run);
    return play(run);
  };

describe('backend run errors, by Connect code class', () => {
  it.each<[ConnectErrorCode, string]>([
    ['unauthenticated', 'authentication_error'],
    ['permission_denied', 'permission_error'],
  ])('%s is final at once: an in-band %s the client must not retry', async (code, type) => {
    wire = await startWireBridge({ config: unbounded, scenario: (run) => run.fail(`fake ${code}`, code) });
    const answer = await send(wire.url, [{ role: 'user', content: `fail with ${code}` }]);
    expectComplete(answer);
    // The backend's error, not a bound: the SDK gave up on the first attempt.
    expect(answer.error).toMatchObject({ type, message: expect.stringContaining(`fake ${code}`) });
    expect(wire.runRequests()).toHaveLength(1);
  });

  it.each<ConnectErrorCode>(['unavailable', 'resource_exhausted', 'internal', 'deadline_exceeded'])(
    '%s on one attempt is retried by the SDK: the client gets the whole answer once',
    async (code) => {
      const attempts: RunContext[] = [];
      wire = await startWireBridge({
        config: unbounded,
        scenario: attemptsOf(attempts, async (run) => {
          run.text('half ');
          if (attempts.length === 1) return run.fail(`fake ${code}`, code);
          run.text('and whole');
        }),
      });
      const answer = await send(wire.url, [{ role: 'user', content: `recover from ${code}` }]);
      expectComplete(answer);
      expect(answer.error).toBeUndefined();
      expect(answer.text).toBe('half and whole');
      expect(attempts).toHaveLength(2);
    },
  );

  it('a retryable code on every attempt ends in-band as a retryable error once the SDK gives up', async () => {
    wire = await startWireBridge({
      config: unbounded,
      scenario: (run) => run.fail('fake unavailable', 'unavailable'),
    });
    const answer = await send(wire.url, [{ role: 'user', content: 'always unavailable' }]);
    expectComplete(answer);
    expect(answer.error).toMatchObject({
      type: 'overloaded_error',
      message: expect.stringContaining('fake unavailable'),
    });
    expect(wire.runRequests().length).toBeGreaterThan(1);
  }, 180_000);
});

describe('backend killed and restarted', () => {
  it('mid-text: the cut turn ends in-band while the backend is down, and the next turn works', async () => {
    let kill: Promise<void> | undefined;
    wire = await startWireBridge({
      config: idleBounded,
      scenario: async (run) => {
        run.text('before the crash ');
        await run.stall(unreachedMs);
      },
    });
    const backend = wire.backend;
    // The backend dies once the client has seen the text.
    const cut = await send(wire.url, [{ role: 'user', content: 'crash please' }], (text) => {
      if (text.includes('before the crash')) kill ??= backend.kill();
    });
    expectComplete(cut);
    expect(cut.text).toBe('before the crash ');
    expect(cut.error).toMatchObject(silenceError('idle'));
    await kill;
    await wire.backend.restart();
    wire.backend.setScenario(toolThenText('toolu_after_restart'));
    const messages = [{ role: 'user', content: 'crash please' }];
    const first = await send(wire.url, messages);
    expectComplete(first);
    expect(first.toolUses.map((use) => use.id)).toEqual(['toolu_after_restart']);
    const second = await send(wire.url, execute(messages, first));
    expectComplete(second);
    expect(second.text).toBe('model saw {"type":"text","text":"ran echo toolu_after_restart"}');
  });

  it('while parked on a tool call: after the restart the result resumes the run, executed and delivered once', async () => {
    const attempts: RunContext[] = [];
    // The SDK reconnects with a backoff of its own: no bound may end the run meanwhile.
    wire = await startWireBridge({
      config: unbounded,
      scenario: attemptsOf(attempts, toolThenText('toolu_parked_kill')),
    });
    const messages = [{ role: 'user', content: 'park then crash' }];
    const first = await send(wire.url, messages);
    expectComplete(first);
    expect(first.toolUses.map((use) => use.id)).toEqual(['toolu_parked_kill']);
    await wire.backend.kill();
    // The parked run's stream is gone before the backend comes back.
    await vi.waitFor(() => expect(attempts.filter((run) => run.open)).toEqual([]), eventually);
    await wire.backend.restart();
    const second = await send(wire.url, execute(messages, first));
    expectComplete(second);
    expect(second.error).toBeUndefined();
    expect(second.toolUses).toEqual([]);
    expect(second.text).toBe('model saw {"type":"text","text":"ran echo toolu_parked_kill"}');
  });

  it('while parked and not back in time: the result turn ends in-band, and its retry reaches the model once', async () => {
    wire = await startWireBridge({ config: idleBounded, scenario: toolThenText('toolu_parked_dead') });
    const messages = [{ role: 'user', content: 'park then die' }];
    const first = await send(wire.url, messages);
    expectComplete(first);
    expect(first.toolUses.map((use) => use.id)).toEqual(['toolu_parked_dead']);
    await wire.backend.kill();
    const withResult = execute(messages, first);
    try {
      // The backend is down for the whole turn: it comes back only once the answer is in.
      const cut = await send(wire.url, withResult);
      expectComplete(cut);
      expect(cut.error).toMatchObject(silenceError('idle'));
    } finally {
      await wire.backend.restart();
    }
    // The client retries the same request: the run is gone, so the result reaches a new run in its prompt.
    wire.backend.setScenario((run) => {
      if (run.prompt.includes('ran echo toolu_parked_dead')) bump(delivered, 'toolu_parked_dead');
      run.text('carried on');
    });
    const retried = await send(wire.url, withResult);
    expectComplete(retried);
    expect(retried.error).toBeUndefined();
    expect(retried.toolUses).toEqual([]);
    expect(retried.text).toBe('carried on');
  });
});

describe('backend down', () => {
  it('from the start (no catalog yet): a clear error answer while it is down, not minutes of keepalives', async () => {
    wire = await startWireBridge({ config: firstEventBounded });
    await wire.backend.kill();
    try {
      const answer = await send(wire.url, [{ role: 'user', content: 'anyone there?' }]);
      expect(answer.error?.message).toMatch(/Cursor/);
      if (answer.status === 200) expectComplete(answer);
      else expect(answer.status).toBeGreaterThanOrEqual(500);
    } finally {
      await wire.backend.restart();
    }
  });

  it('after a good turn (catalog cached): the next turn ends in-band while it is down', async () => {
    wire = await startWireBridge({ config: firstEventBounded });
    expectComplete(await send(wire.url, [{ role: 'user', content: 'warm up' }]));
    await wire.backend.kill();
    try {
      const answer = await send(wire.url, [{ role: 'user', content: 'now it is gone' }]);
      expectComplete(answer);
      expect(answer.error).toMatchObject({
        type: 'overloaded_error',
        message: expect.stringMatching(/(unreachable|no event within 5 s).*Retry/),
      });
    } finally {
      await wire.backend.restart();
    }
  });
});

describe('stalls', () => {
  it('before the first event: an in-band retryable error naming the bound, the stalled stream closed', async () => {
    const attempts: RunContext[] = [];
    wire = await startWireBridge({
      config: firstEventBounded,
      scenario: attemptsOf(attempts, (run) => run.stall(unreachedMs)),
    });
    const answer = await send(wire.url, [{ role: 'user', content: 'stall first' }]);
    expectComplete(answer);
    expect(answer.error).toMatchObject(silenceError('first-event'));
    // The backend never answered: each stream the run opened is closed by the bridge's cancel.
    await vi.waitFor(() => expect(attempts.filter((run) => run.open)).toEqual([]), eventually);
  });

  it('mid-text after a tool result: the text so far, an in-band error, the result delivered once', async () => {
    wire = await startWireBridge({
      config: idleBounded,
      scenario: toolThenText('toolu_then_stall', async (run) => {
        run.text('thinking about it… ');
        await run.stall(unreachedMs);
      }),
    });
    const messages = [{ role: 'user', content: 'tool then stall' }];
    const first = await send(wire.url, messages);
    expectComplete(first);
    const second = await send(wire.url, execute(messages, first));
    expectComplete(second);
    expect(second.text).toBe('thinking about it… ');
    expect(second.error).toMatchObject(silenceError('idle'));
  });
});
