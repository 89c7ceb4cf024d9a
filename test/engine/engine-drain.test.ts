import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BridgeError } from '../../src/turn/turn-error.js';
import {
  assistant,
  collect,
  createTestEngine,
  request,
  toolResult,
  user,
} from '../helpers/engine-helpers.js';

const never = new AbortController().signal;

const withId = (value: string) => ({
  identity: { nativeSessionId: { value, source: 'x-claude-code-session-id' } },
});

// The drain's polling runs on a fake clock: the test moves it.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** Whether `promise` settles while the fake clock moves by `ms` (0: with no time passing at all). */
const settlesWithin = async (promise: Promise<unknown>, ms: number): Promise<boolean> => {
  let settled = false;
  void promise.then(() => (settled = true));
  await vi.advanceTimersByTimeAsync(ms);
  return settled;
};

describe('engine drain', () => {
  it('refuses a new conversation with a retryable unavailable error, lets the parked one finish, then reports idle', async () => {
    const { engine, upstream } = createTestEngine([
      [
        { type: 'tool-call', toolCallId: 'call-1', toolName: 'Bash', input: { command: 'echo hi' } },
        { type: 'tool-batch-end' },
        { type: 'await-tool-results' },
        { type: 'text-delta', text: 'done' },
        { type: 'end', status: 'finished' },
      ],
    ]);
    const opening = [user('run echo')];
    const first = await collect(await engine.handleTurn(request(opening, withId('live')), never));
    expect(first.at(-1)).toMatchObject({ type: 'turn-end', stopReason: 'tool-use' });

    const drained = engine.drain();
    // The parked call keeps the conversation in flight, however long.
    expect(await settlesWithin(drained, 60_000)).toBe(false);

    const refusal = await engine.handleTurn(request([user('a new one')], withId('new')), never).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(BridgeError);
    expect((refusal as BridgeError).turnError).toMatchObject({
      kind: 'unavailable',
      retryable: true,
      retryAfterSeconds: 2,
    });

    const resumed = await collect(
      await engine.handleTurn(
        request(
          [
            ...opening,
            assistant('', [{ id: 'call-1', name: 'Bash', input: { command: 'echo hi' } }]),
            toolResult('call-1', 'hi'),
          ],
          withId('live'),
        ),
        never,
      ),
    );
    expect(resumed.at(-1)).toMatchObject({ type: 'turn-end', stopReason: 'end' });
    // The result resumed the parked run: one run, no second agent for the refused conversation.
    expect(upstream.calls).toHaveLength(1);
    // Idle at the drain's next look (it looks every 100 ms).
    expect(await settlesWithin(drained, 100)).toBe(true);
    await engine.close();
  });

  it('reports idle at once when nothing is in flight, and still serves a live conversation’s next turn', async () => {
    const { engine, upstream } = createTestEngine([
      [
        { type: 'text-delta', text: 'first' },
        { type: 'end', status: 'finished' },
      ],
      [
        { type: 'text-delta', text: 'second' },
        { type: 'end', status: 'finished' },
      ],
    ]);
    await collect(await engine.handleTurn(request([user('hello')], withId('idle')), never));
    expect(await settlesWithin(engine.drain(), 0)).toBe(true);
    const next = await collect(
      await engine.handleTurn(
        request([user('hello'), assistant('first'), user('more')], withId('idle')),
        never,
      ),
    );
    expect(next.at(-1)).toMatchObject({ type: 'turn-end', stopReason: 'end' });
    expect(upstream.calls.map((call) => call.sessionId)).toEqual(['scripted-1', 'scripted-1']);
    await engine.close();
  });

  it('still serves a side call under the session id of a conversation in flight (a Task, a title request)', async () => {
    const { engine, upstream } = createTestEngine([
      [
        { type: 'tool-call', toolCallId: 'call-1', toolName: 'Bash', input: { command: 'echo hi' } },
        { type: 'tool-batch-end' },
        { type: 'await-tool-results' },
        { type: 'end', status: 'finished' },
      ],
      [
        { type: 'text-delta', text: 'A title' },
        { type: 'end', status: 'finished' },
      ],
    ]);
    await collect(await engine.handleTurn(request([user('fix the bug')], withId('parent')), never));
    void engine.drain();
    const side = await collect(
      await engine.handleTurn(
        request([user('Generate a title for this conversation:\n'), user('fix the bug')], {
          ...withId('parent'),
          tools: [],
        }),
        never,
      ),
    );
    expect(side.at(-1)).toMatchObject({ type: 'turn-end', stopReason: 'end' });
    expect(upstream.calls.map((call) => call.sessionId)).toEqual(['scripted-1', 'scripted-2']);
    await expect(engine.handleTurn(request([user('other')], withId('stranger')), never)).rejects.toThrow(
      'draining',
    );
    await engine.close();
  });
});
