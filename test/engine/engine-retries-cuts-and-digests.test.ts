import { afterEach, describe, expect, it, vi } from 'vitest';
import { messageDigest } from '../../src/engine/transcript-digest.js';
import { never as neverSettles } from '../helpers/gate.js';
import {
  assistant,
  collect,
  createTestEngine,
  never,
  readUntil,
  request,
  textOf,
  toolResult,
  user,
  withId,
} from '../helpers/engine-helpers.js';

/** A safety net for what the engine does after the client left, never a speed claim. */
const eventually = { timeout: 30_000, interval: 10 };

afterEach(() => {
  vi.useRealTimers();
});

describe('a repeated opening within the replay window is a retry', () => {
  // The replay window is measured on a fake clock: the test moves it.
  const useFakeClock = () =>
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });

  it('answers the second of two sequential identical openings from the finished turn: one run, one agent', async () => {
    useFakeClock();
    const { engine, upstream } = createTestEngine([
      { type: 'text-delta', text: 'hi there' },
      { type: 'end', status: 'finished' },
    ]);
    const first = await collect(await engine.handleTurn(request([user('say hi')], withId('s-1')), never));
    await vi.advanceTimersByTimeAsync(1_000);
    const second = await collect(await engine.handleTurn(request([user('say hi')], withId('s-1')), never));
    expect(textOf(first)).toBe('hi there');
    expect(second).toEqual(first);
    expect(upstream.calls).toHaveLength(1);
    expect(upstream.sessions).toHaveLength(1);
    expect(upstream.sessions[0]?.disposed).toBe(false);
    expect(await engine.metrics()).toMatchObject({ turns: 1, retriesReplayed: 1 });
    // The agent still holds the finished turn: the next turn is a slim follow-up on it.
    await collect(
      await engine.handleTurn(
        request([user('say hi'), assistant('hi there'), user('more')], withId('s-1')),
        never,
      ),
    );
    expect(upstream.calls.map((call) => call.sessionId)).toEqual(['scripted-1', 'scripted-1']);
    expect(upstream.calls[1]?.input.prompt.text).not.toContain('say hi');
    await engine.close();
  });

  it('replays nothing after a later turn of the conversation, nor after the window', async () => {
    useFakeClock();
    const { engine, upstream } = createTestEngine(
      [
        { type: 'text-delta', text: 'answer' },
        { type: 'end', status: 'finished' },
      ],
      { replayWindowMs: 300 },
    );
    const opening = () => request([user('q1')], withId('s-2'));
    await collect(await engine.handleTurn(opening(), never));
    await vi.advanceTimersByTimeAsync(299);
    await collect(await engine.handleTurn(opening(), never));
    expect(upstream.calls).toHaveLength(1);
    await collect(
      await engine.handleTurn(request([user('q1'), assistant('answer'), user('q2')], withId('s-2')), never),
    );
    expect(upstream.calls).toHaveLength(2);
    // Within the window but after a later turn: a new run.
    await collect(await engine.handleTurn(opening(), never));
    expect(upstream.calls).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(300);
    // After the window: a new run.
    await collect(await engine.handleTurn(opening(), never));
    expect(upstream.calls).toHaveLength(4);
    await engine.close();
  });
});

describe('a resumed run cut short keeps the agent history', () => {
  it('q1 finishes, q2 parks, the resume is cut at its first text, q3 → a slim follow-up on the same agent', async () => {
    const { engine, upstream } = createTestEngine([
      [
        { type: 'text-delta', text: 'a1' },
        { type: 'end', status: 'finished' },
      ],
      [
        { type: 'tool-call', toolCallId: 't1', toolName: 'Bash', input: { command: 'ls' } },
        { type: 'tool-batch-end' },
        { type: 'await-tool-results' },
        { type: 'text-delta', text: 'partial' },
        // Only the cancel ends this wait.
        { type: 'wait', until: neverSettles },
        { type: 'end', status: 'finished' },
      ],
      [
        { type: 'text-delta', text: 'a3' },
        { type: 'end', status: 'finished' },
      ],
    ]);
    const q1 = [user('first question')];
    await collect(await engine.handleTurn(request(q1, withId('s-3')), never));
    const q2 = [...q1, assistant('a1'), user('second question')];
    await collect(await engine.handleTurn(request(q2, withId('s-3')), never));
    const resume = [
      ...q2,
      assistant('', [{ id: 't1', name: 'Bash', input: { command: 'ls' } }]),
      toolResult('t1', 'a.txt'),
    ];
    const abort = new AbortController();
    await readUntil(
      await engine.handleTurn(request(resume, withId('s-3')), abort.signal),
      abort,
      (event) => event.type === 'text-delta',
    );
    await expect.poll(() => upstream.calls[1]?.cancelled, eventually).toBe(true);
    const q3 = [...resume, assistant('partial'), user('third question')];
    const events = await collect(await engine.handleTurn(request(q3, withId('s-3')), never));
    expect(textOf(events)).toBe('a3');
    expect(upstream.calls.map((call) => call.sessionId)).toEqual(['scripted-1', 'scripted-1', 'scripted-1']);
    const prompt = upstream.calls[2]?.input.prompt.text ?? '';
    // Slim: what the agent holds (q1, a1) is not re-sent; the cut turn and the new question are.
    expect(prompt).not.toContain('first question');
    expect(prompt).not.toContain('You are Claude Code.');
    expect(prompt).toContain('second question');
    expect(prompt).toContain('a.txt');
    expect(prompt).toContain('third question');
    expect(await engine.metrics()).toMatchObject({ slim: 2, resumed: 1, replayed: 1 });
    await engine.close();
  });
});

describe('cancellations are not failures', () => {
  it('counts a client abort of a cut-short turn as cancelled, and an upstream error as failed', async () => {
    const { engine, upstream } = createTestEngine([
      [
        { type: 'text-delta', text: 'partial' },
        { type: 'wait', until: neverSettles },
        { type: 'end', status: 'finished' },
      ],
      [{ type: 'error', error: { kind: 'api', message: 'boom', retryable: true } }],
    ]);
    const abort = new AbortController();
    await readUntil(
      await engine.handleTurn(request([user('cut me')]), abort.signal),
      abort,
      (event) => event.type === 'text-delta',
    );
    await expect.poll(async () => (await engine.metrics()).cancelledTurns, eventually).toBe(1);
    expect(upstream.calls[0]?.cancelled).toBe(true);
    expect(await engine.metrics()).toMatchObject({ failedTurns: 0 });
    await collect(await engine.handleTurn(request([user('fail me')]), never));
    // A turn is counted when its producer stops, which may be just after its terminal event reached the
    // consumer (the coalescer reads a finished producer to its end on its own).
    await expect
      .poll(() => engine.metrics(), eventually)
      .toMatchObject({ failedTurns: 1, cancelledTurns: 1, turns: 2 });
    await engine.close();
  });
});

describe('exact transcript digests', () => {
  const longText = (edit?: number): string => {
    const chars = Array.from({ length: 10_000 }, (_, index) => String.fromCharCode(97 + (index % 26)));
    if (edit !== undefined) chars[edit] = 'Z';
    return chars.join('');
  };

  it('a same-length edit anywhere in a long text changes the digest', () => {
    const base = messageDigest(toolResult('t1', longText()));
    for (const at of [0, 450, 5_017, 9_999])
      expect(messageDigest(toolResult('t1', longText(at)))).not.toBe(base);
    expect(messageDigest(toolResult('t1', longText()))).toBe(base);
    // Lone surrogates stay distinct (UTF-8 would turn both into U+FFFD).
    expect(messageDigest(user(`${longText()}\uD800`))).not.toBe(messageDigest(user(`${longText()}\uFFFD`)));
  });

  it('an edit inside a long tool result that keeps its length → a full replay, not a slim follow-up', async () => {
    const { engine, upstream } = createTestEngine([
      [
        { type: 'tool-call', toolCallId: 't1', toolName: 'Bash', input: { command: 'cat big' } },
        { type: 'tool-batch-end' },
        { type: 'await-tool-results' },
        { type: 'text-delta', text: 'read it' },
        { type: 'end', status: 'finished' },
      ],
      [
        { type: 'text-delta', text: 'again' },
        { type: 'end', status: 'finished' },
      ],
    ]);
    const opening = [user('read the big file')];
    await collect(await engine.handleTurn(request(opening, withId('s-4')), never));
    const call = assistant('', [{ id: 't1', name: 'Bash', input: { command: 'cat big' } }]);
    await collect(
      await engine.handleTurn(
        request([...opening, call, toolResult('t1', longText())], withId('s-4')),
        never,
      ),
    );
    const edited = [
      ...opening,
      call,
      toolResult('t1', longText(450)),
      assistant('read it'),
      user('and now?'),
    ];
    await collect(await engine.handleTurn(request(edited, withId('s-4')), never));
    expect(upstream.calls).toHaveLength(2);
    expect(upstream.calls[1]?.input.prompt.text).toContain('read the big file');
    expect(await engine.metrics()).toMatchObject({ replayed: 2, slim: 0 });
    await engine.close();
  });
});
