import { describe, expect, it } from 'vitest';
import type { TurnEvent } from '../../src/turn/turn-event.js';
import {
  assistant,
  collect,
  createTestEngine,
  request,
  textOf,
  toolResult,
  user,
} from '../helpers/engine-helpers.js';
import { never as neverSettles } from '../helpers/gate.js';

const never = new AbortController().signal;

describe('engine', () => {
  it('streams a text turn and ends it with usage', async () => {
    const { engine, upstream } = createTestEngine([
      { type: 'reasoning-delta', text: 'hmm' },
      { type: 'reasoning-end' },
      { type: 'text-delta', text: 'Hello' },
      { type: 'text-delta', text: ' there' },
      { type: 'usage', usage: { inputTokens: 10, outputTokens: 2, cacheReadTokens: 3, cacheWriteTokens: 0 } },
      { type: 'end', status: 'finished' },
    ]);
    const events = await collect(await engine.handleTurn(request([user('hi')]), never));
    expect(events.map((event) => event.type)).toEqual([
      'reasoning-start',
      'reasoning-delta',
      'reasoning-end',
      'text-start',
      'text-delta',
      'text-delta',
      'usage',
      'text-end',
      'turn-end',
    ]);
    expect(textOf(events)).toBe('Hello there');
    const end = events.at(-1) as Extract<TurnEvent, { type: 'turn-end' }>;
    expect(end).toEqual({
      type: 'turn-end',
      stopReason: 'end',
      usage: { inputTokens: 10, outputTokens: 2, cacheReadTokens: 3, cacheWriteTokens: 0 },
    });
    const reasoningEnd = events[2] as Extract<TurnEvent, { type: 'reasoning-end' }>;
    expect(reasoningEnd.signature).toMatch(/^cursor-bridge\./);
    expect(upstream.calls).toHaveLength(1);
    expect(upstream.calls[0]?.input.prompt.text).toContain('HEAD');
    expect(upstream.calls[0]?.input.prompt.text).toContain('<user>\nhi\n</user>');
    expect(upstream.calls[0]?.input.prompt.text).toContain('You are Claude Code.');
    await engine.close();
  });

  it('parks a tool call, ends the response with tool-use, and resumes the same run with the result', async () => {
    const { engine, upstream } = createTestEngine([
      { type: 'text-delta', text: 'Running it.' },
      { type: 'tool-call', toolCallId: 'call-1', toolName: 'Bash', input: { command: 'echo hi' } },
      { type: 'tool-batch-end' },
      { type: 'await-tool-results' },
      {
        type: 'emit',
        events: ({ toolResults }) => [
          {
            type: 'text-delta',
            text: `Tool said: ${toolResults.map((r) => (r.content[0] as { text: string }).text).join()}`,
          },
          { type: 'end', status: 'finished' },
        ],
      },
    ]);
    const first = await collect(await engine.handleTurn(request([user('run echo')]), never));
    expect(first.filter((event) => event.type === 'tool-call')).toEqual([
      {
        type: 'tool-call',
        toolCallId: 'call-1',
        toolName: 'Bash',
        kind: 'function',
        input: '{"command":"echo hi"}',
      },
    ]);
    expect(first.at(-1)).toMatchObject({ type: 'turn-end', stopReason: 'tool-use' });

    const second = await collect(
      await engine.handleTurn(
        request([
          user('run echo'),
          assistant('Running it.', [{ id: 'call-1', name: 'Bash', input: { command: 'echo hi' } }]),
          toolResult('call-1', 'hi'),
        ]),
        never,
      ),
    );
    expect(textOf(second)).toBe('Tool said: hi');
    expect(second.at(-1)).toMatchObject({ type: 'turn-end', stopReason: 'end' });
    expect(upstream.calls).toHaveLength(1);
    expect(upstream.calls[0]?.toolResults).toEqual([
      { toolCallId: 'call-1', content: [{ type: 'text', text: 'hi' }], isError: false },
    ]);
    expect(await engine.metrics()).toMatchObject({ resumed: 1, replayed: 1 });
    await engine.close();
  });

  it('emits two parallel tool calls in one response', async () => {
    const { engine } = createTestEngine([
      { type: 'tool-call', toolCallId: 'a', toolName: 'Bash', input: { command: 'ls' } },
      { type: 'tool-call', toolCallId: 'b', toolName: 'Bash', input: { command: 'pwd' } },
      { type: 'tool-batch-end' },
      { type: 'await-tool-results' },
      { type: 'end', status: 'finished' },
    ]);
    const events = await collect(await engine.handleTurn(request([user('two')]), never));
    expect(
      events
        .filter((event) => event.type === 'tool-call')
        .map((event) => event.type === 'tool-call' && event.toolCallId),
    ).toEqual(['a', 'b']);
    await engine.close();
  });

  it('sends a slim follow-up to an idle agent whose history matches, and replays a diverged transcript', async () => {
    const { engine, upstream } = createTestEngine([
      [
        { type: 'text-delta', text: 'First answer.' },
        { type: 'end', status: 'finished' },
      ],
      [
        { type: 'text-delta', text: 'Second answer.' },
        { type: 'end', status: 'finished' },
      ],
      [
        { type: 'text-delta', text: 'Third answer.' },
        { type: 'end', status: 'finished' },
      ],
    ]);
    await collect(await engine.handleTurn(request([user('one')]), never));
    await collect(
      await engine.handleTurn(request([user('one'), assistant('First answer.'), user('two')]), never),
    );
    expect(upstream.sessions).toHaveLength(1);
    const slim = upstream.calls[1]?.input.prompt.text ?? '';
    expect(slim).toContain('<user>\ntwo\n</user>');
    expect(slim).not.toContain('one');

    await collect(
      await engine.handleTurn(request([user('one'), assistant('An edited answer.'), user('three')]), never),
    );
    expect(upstream.sessions).toHaveLength(2);
    const replay = upstream.calls[2]?.input.prompt.text ?? '';
    expect(replay).toContain('An edited answer.');
    expect(replay).toContain('<user>\nthree\n</user>');
    await engine.close();
  });

  it('answers a non-streaming retry of a turn that failed in-stream with the same error, without a second run', async () => {
    const { engine, upstream } = createTestEngine([
      { type: 'text-delta', text: 'partial' },
      { type: 'error', error: { kind: 'overloaded', message: 'Cursor is overloaded', retryable: true } },
    ]);
    const events = await collect(await engine.handleTurn(request([user('boom')]), never));
    expect(events.at(-1)).toEqual({
      type: 'error',
      error: { kind: 'overloaded', message: 'Cursor is overloaded', retryable: true },
    });
    await expect(engine.handleTurn(request([user('boom')], { stream: false }), never)).rejects.toMatchObject({
      turnError: { kind: 'overloaded', message: 'Cursor is overloaded' },
    });
    expect(upstream.calls).toHaveLength(1);
    // A streaming retry of the same turn runs again.
    await collect(await engine.handleTurn(request([user('boom')]), never));
    expect(upstream.calls).toHaveLength(2);
    await engine.close();
  });

  it('replays a failure to one non-streaming retry only: the next one (after its wait) runs again', async () => {
    const limited = {
      kind: 'rate-limit',
      message: 'Slow down',
      retryable: true,
      retryAfterSeconds: 1,
    } as const;
    const { engine, upstream } = createTestEngine([{ type: 'error', error: limited }]);
    await collect(await engine.handleTurn(request([user('limited')]), never));
    // Claude Code's non-streaming retry of the in-stream failure: the same error, no second run.
    await expect(
      engine.handleTurn(request([user('limited')], { stream: false }), never),
    ).rejects.toMatchObject({ turnError: limited });
    expect(upstream.calls).toHaveLength(1);
    // Its retry after the rate limit's retry-after: a new run, not the replayed error.
    await collect(await engine.handleTurn(request([user('limited')], { stream: false }), never));
    expect(upstream.calls).toHaveLength(2);
    await engine.close();
  });

  it('cancels the run and settles the parked call when the client disconnects mid-stream', async () => {
    const { engine, upstream } = createTestEngine([
      { type: 'text-delta', text: 'working' },
      // Only the cancel ends this wait.
      { type: 'wait', until: neverSettles },
      { type: 'text-delta', text: 'never' },
      { type: 'end', status: 'finished' },
    ]);
    const abort = new AbortController();
    const stream = await engine.handleTurn(request([user('slow')]), abort.signal);
    const seen: string[] = [];
    for await (const event of stream) {
      seen.push(event.type);
      if (event.type === 'text-delta') abort.abort();
      if (abort.signal.aborted && event.type === 'turn-end') break;
    }
    expect(upstream.calls[0]?.cancelled).toBe(true);
    expect(seen).not.toContain('error');
    await engine.close();
  });

  it('refuses before streaming when preflight fails', async () => {
    const { engine, upstream } = createTestEngine([{ type: 'end', status: 'finished' }]);
    upstream.preflightError = {
      kind: 'authentication',
      message: 'Cursor API key not found',
      retryable: false,
    };
    await expect(engine.handleTurn(request([user('hi')]), never)).rejects.toMatchObject({
      turnError: { kind: 'authentication' },
    });
    expect(upstream.calls).toHaveLength(0);
    await engine.close();
  });

  it('reports a start failure in-band', async () => {
    const { engine } = createTestEngine({
      startError: { kind: 'rate-limit', message: 'slow down', retryable: true },
    });
    const events = await collect(await engine.handleTurn(request([user('hi')]), never));
    expect(events).toEqual([
      { type: 'error', error: { kind: 'rate-limit', message: 'slow down', retryable: true } },
    ]);
    await engine.close();
  });

  it('keeps at most 32 sessions and never evicts one with parked tools', async () => {
    const { engine, upstream } = createTestEngine((input) =>
      input.prompt.text.includes('park-me')
        ? [
            { type: 'tool-call', toolCallId: 'p1', toolName: 'Bash', input: {} },
            { type: 'tool-batch-end' },
            { type: 'await-tool-results' },
            { type: 'end', status: 'finished' },
          ]
        : [{ type: 'end', status: 'finished' }],
    );
    const parked = request([user('park-me')], {
      identity: { nativeSessionId: { value: 'parked', source: 'test' } },
    });
    await collect(await engine.handleTurn(parked, never));
    for (let index = 0; index < 40; index += 1) {
      await collect(
        await engine.handleTurn(
          request([user(`conversation ${index}`)], {
            identity: { nativeSessionId: { value: `s${index}`, source: 'test' } },
          }),
          never,
        ),
      );
    }
    expect(await engine.metrics()).toMatchObject({ sessions: 32, inFlightSessions: 1, evicted: 9 });
    const resumed = await collect(
      await engine.handleTurn(
        request([user('park-me'), assistant('', [{ id: 'p1', name: 'Bash' }]), toolResult('p1', 'ok')], {
          identity: { nativeSessionId: { value: 'parked', source: 'test' } },
        }),
        never,
      ),
    );
    expect(resumed.at(-1)).toMatchObject({ type: 'turn-end', stopReason: 'end' });
    expect(upstream.calls[0]?.toolResults).toHaveLength(1);
    await engine.close();
  });
});
