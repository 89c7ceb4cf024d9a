import { afterEach, describe, expect, it, vi } from 'vitest';
import type { TurnEvent } from '../../src/turn/turn-event.js';
import { never as neverSettles } from '../helpers/gate.js';
import {
  assistant,
  collect,
  createTestEngine,
  request,
  textOf,
  toolResult,
  user,
} from '../helpers/engine-helpers.js';

const never = new AbortController().signal;
const withId = (id: string) => ({ identity: { nativeSessionId: { value: id, source: 'x-session-id' } } });

afterEach(() => {
  vi.useRealTimers();
});

describe('engine sessions', () => {
  it('coalescing: two identical requests in flight share one send and both see the whole turn', async () => {
    const { engine, upstream } = createTestEngine([
      { type: 'text-delta', text: 'one ' },
      { type: 'delay', ms: 50 },
      { type: 'text-delta', text: 'answer' },
      { type: 'end', status: 'finished' },
    ]);
    const [first, second] = await Promise.all([
      engine.handleTurn(request([user('same question')]), never),
      engine.handleTurn(request([user('same question')]), never),
    ]);
    const [a, b] = await Promise.all([collect(first!), collect(second!)]);
    expect(textOf(a)).toBe('one answer');
    expect(textOf(b)).toBe('one answer');
    expect(upstream.calls).toHaveLength(1);
    await engine.close();
  });

  it('cancellation: a disconnect while a call is parked mid-batch cancels the run at the park deadline, not at once', async () => {
    // The park deadline runs on a fake clock: the test moves it.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const { engine, upstream } = createTestEngine(
      [
        { type: 'tool-call', toolCallId: 'c1', toolName: 'Bash', input: { command: 'ls' } },
        { type: 'delay', ms: 10_000 },
        { type: 'tool-batch-end' },
        { type: 'await-tool-results' },
        { type: 'end', status: 'finished' },
      ],
      { parkTimeoutMs: 500 },
    );
    const abort = new AbortController();
    const seen: TurnEvent[] = [];
    for await (const event of await engine.handleTurn(request([user('list files')]), abort.signal)) {
      seen.push(event);
      if (event.type === 'tool-call') abort.abort();
      if (abort.signal.aborted && (event.type === 'turn-end' || event.type === 'error')) break;
    }
    await vi.advanceTimersByTimeAsync(499);
    expect(upstream.calls[0]?.cancelled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(upstream.calls[0]?.cancelled).toBe(true);
    expect(upstream.sessions[0]?.disposed ?? false).toBe(false);
    expect(await engine.metrics()).toMatchObject({ inFlightSessions: 0 });
    await engine.close();
  });

  it('a side call under the same session id (a title request) gets its own agent', async () => {
    const { engine, upstream } = createTestEngine([
      [
        { type: 'text-delta', text: 'main' },
        { type: 'end', status: 'finished' },
      ],
      [
        { type: 'text-delta', text: 'A title' },
        { type: 'end', status: 'finished' },
      ],
      [
        { type: 'text-delta', text: 'main 2' },
        { type: 'end', status: 'finished' },
      ],
    ]);
    await collect(await engine.handleTurn(request([user('fix the bug')], withId('ses_1')), never));
    await collect(
      await engine.handleTurn(
        request([user('Generate a title for this conversation:\n'), user('fix the bug')], {
          ...withId('ses_1'),
          tools: [],
        }),
        never,
      ),
    );
    await collect(
      await engine.handleTurn(
        request([user('fix the bug'), assistant('main'), user('thanks')], withId('ses_1')),
        never,
      ),
    );
    expect(upstream.calls.map((call) => call.sessionId)).toEqual(['scripted-1', 'scripted-2', 'scripted-1']);
    expect(upstream.calls[2]?.input.prompt.text).not.toContain('fix the bug');
    await engine.close();
  });

  it('a repeated opening after the retry window gets a fresh agent, never the earlier history', async () => {
    const { engine, upstream } = createTestEngine(
      [
        { type: 'text-delta', text: 'hi' },
        { type: 'end', status: 'finished' },
      ],
      {},
    );
    await collect(await engine.handleTurn(request([user('hello')], { identity: {} }), never));
    await collect(
      await engine.handleTurn(
        request([user('hello'), assistant('hi'), user('more')], { identity: {} }),
        never,
      ),
    );
    // The same opening again, after a later turn: a new conversation.
    await collect(await engine.handleTurn(request([user('hello')], { identity: {} }), never));
    expect(upstream.calls.map((call) => call.sessionId)).toEqual(['scripted-1', 'scripted-1', 'scripted-2']);
    await engine.close();
  });

  it('a rejected tool result with replacement text retires the parked run and replays', async () => {
    const { engine, upstream } = createTestEngine([
      [
        { type: 'tool-call', toolCallId: 't1', toolName: 'Bash', input: { command: 'rm -rf x' } },
        { type: 'tool-batch-end' },
        { type: 'await-tool-results' },
        { type: 'end', status: 'finished' },
      ],
      [
        { type: 'text-delta', text: 'ok, not deleting' },
        { type: 'end', status: 'finished' },
      ],
    ]);
    await collect(await engine.handleTurn(request([user('clean up')]), never));
    const events = await collect(
      await engine.handleTurn(
        request([
          user('clean up'),
          assistant('', [{ id: 't1', name: 'Bash', input: { command: 'rm -rf x' } }]),
          toolResult(
            't1',
            "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.",
            true,
          ),
          user('do not delete anything, just list'),
        ]),
        never,
      ),
    );
    expect(textOf(events)).toBe('ok, not deleting');
    expect(upstream.calls[0]?.cancelled).toBe(true);
    expect(upstream.calls[1]?.input.prompt.text).toContain('do not delete anything');
    expect(await engine.metrics()).toMatchObject({ resumed: 0 });
    await engine.close();
  });

  it('40 concurrent conversations: the LRU holds 32 and the in-flight ones survive', async () => {
    const { engine, upstream } = createTestEngine((input) =>
      input.prompt.text.includes('park')
        ? [
            {
              type: 'tool-call',
              toolCallId: `id-${input.prompt.text.match(/park (\d+)/)?.[1]}`,
              toolName: 'Bash',
              input: {},
            },
            { type: 'tool-batch-end' },
            { type: 'await-tool-results' },
            { type: 'text-delta', text: 'resumed' },
            { type: 'end', status: 'finished' },
          ]
        : [
            { type: 'delay', ms: 5 },
            { type: 'end', status: 'finished' },
          ],
    );
    const turns = Array.from({ length: 40 }, (_, index) =>
      engine
        .handleTurn(
          request([user(index < 8 ? `park ${index}` : `chat ${index}`)], withId(`conversation-${index}`)),
          never,
        )
        .then(collect),
    );
    await Promise.all(turns);
    expect(await engine.metrics()).toMatchObject({ sessions: 32, inFlightSessions: 8 });
    for (let index = 0; index < 8; index += 1) {
      const events = await collect(
        await engine.handleTurn(
          request(
            [
              user(`park ${index}`),
              assistant('', [{ id: `id-${index}`, name: 'Bash' }]),
              toolResult(`id-${index}`, 'done'),
            ],
            withId(`conversation-${index}`),
          ),
          never,
        ),
      );
      expect(textOf(events)).toBe('resumed');
    }
    expect(upstream.calls.filter((call) => call.toolResults.length === 1)).toHaveLength(8);
    await engine.close();
  });
});

describe('engine sessions: lifecycle edges', () => {
  it('never runs two different turns of one conversation at once', async () => {
    const { engine, upstream } = createTestEngine((input) => [
      { type: 'delay', ms: 20 },
      {
        type: 'text-delta',
        text: `answer to ${/<user>\n(\w+)\n<\/user>\s*<\/current_request>/.exec(input.prompt.text)?.[1]}`,
      },
      { type: 'end', status: 'finished' },
    ]);
    await collect(await engine.handleTurn(request([user('start')], withId('busy')), never));
    const followUps = ['alpha', 'beta', 'gamma'].map((word) =>
      engine
        .handleTurn(request([user('start'), assistant('answer to start'), user(word)], withId('busy')), never)
        .then(collect),
    );
    const results = await Promise.all(followUps);
    for (const events of results) {
      expect(events.filter((event) => event.type === 'error')).toEqual([]);
      expect(events.at(-1)).toMatchObject({ type: 'turn-end' });
    }
    expect(results.map(textOf).sort()).toEqual(['answer to alpha', 'answer to beta', 'answer to gamma']);
    expect(upstream.sessions.filter((session) => !session.disposed).length).toBeLessThanOrEqual(1);
    await engine.close();
  });

  it('replays instead of resuming when the parked run died before the results came', async () => {
    const { engine, upstream } = createTestEngine([
      [
        { type: 'tool-call', toolCallId: 'p1', toolName: 'Bash', input: {} },
        { type: 'tool-batch-end' },
        { type: 'await-tool-results' },
        { type: 'text-delta', text: 'never' },
        { type: 'end', status: 'finished' },
      ],
      [
        { type: 'text-delta', text: 'replayed' },
        { type: 'end', status: 'finished' },
      ],
    ]);
    await collect(await engine.handleTurn(request([user('run it')]), never));
    await upstream.sessions[0]?.activeRun?.cancel();
    const events = await collect(
      await engine.handleTurn(
        request([user('run it'), assistant('', [{ id: 'p1', name: 'Bash' }]), toolResult('p1', 'ok')]),
        never,
      ),
    );
    expect(textOf(events)).toBe('replayed');
    expect(upstream.calls).toHaveLength(2);
    expect(upstream.calls[1]?.input.prompt.text).toContain('<tool_result id="p1"');
    await engine.close();
  });

  it('after a first turn cut short, the next request replays it in full (the agent kept nothing)', async () => {
    const { engine, upstream } = createTestEngine([
      [
        { type: 'text-delta', text: 'partial' },
        // Only the cancel ends this wait.
        { type: 'wait', until: neverSettles },
        { type: 'end', status: 'finished' },
      ],
      [
        { type: 'text-delta', text: 'done' },
        { type: 'end', status: 'finished' },
      ],
    ]);
    const abort = new AbortController();
    for await (const event of await engine.handleTurn(request([user('first-question')]), abort.signal)) {
      if (event.type === 'text-delta') abort.abort();
      if (event.type === 'turn-end' || event.type === 'error') break;
    }
    await expect.poll(() => upstream.calls[0]?.cancelled, { timeout: 30_000 }).toBe(true);
    await collect(
      await engine.handleTurn(
        request([user('first-question'), assistant('partial'), user('do this instead')]),
        never,
      ),
    );
    const prompt = upstream.calls[1]?.input.prompt.text ?? '';
    expect(prompt).toContain('first-question');
    expect(prompt).toContain('do this instead');
    expect(prompt).toContain('You are Claude Code.');
    await engine.close();
  });
});
