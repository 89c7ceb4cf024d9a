/**
 * An idle agent gets a slim prompt only when the next host transcript is the exact committed assistant text
 * and tool calls plus one supported user message, and after a stream dies mid-turn the next request uses a
 * slim follow-up prompt when the agent session already has history. A run cut short checkpoints nothing, so
 * its agent holds what it held before and the cut turn is new to it; when the backend did checkpoint part of
 * the cut turn, a slim prompt would repeat that turn to the agent, and the transcript is replayed to a new
 * agent instead.
 */

import { describe, expect, it } from 'vitest';
import type { ScriptStep } from '../../src/upstream/scripted/scripted-upstream.js';
import {
  assistant,
  collect,
  createTestEngine,
  never,
  request,
  textOf,
  user,
} from '../helpers/engine-helpers.js';

const neverSettles = new Promise<never>(() => {});

describe.each([
  { checkpointed: false, expected: 'a slim follow-up to the same agent' },
  { checkpointed: true, expected: 'a full replay to a new agent' },
])('a turn cut short (backend checkpointed part of it: $checkpointed)', ({ checkpointed }) => {
  it(`continues the conversation with ${checkpointed ? 'a full replay to a new agent' : 'a slim follow-up to the same agent'}`, async () => {
    const cut: ScriptStep[] = [
      ...(checkpointed ? [{ type: 'checkpoint' as const }] : []),
      { type: 'text-delta', text: 'partial' },
      { type: 'wait', until: neverSettles },
      { type: 'end', status: 'finished' },
    ];
    const { engine, upstream } = createTestEngine([
      [
        { type: 'text-delta', text: 'first answer' },
        { type: 'end', status: 'finished' },
      ],
      cut,
      [
        { type: 'text-delta', text: 'third answer' },
        { type: 'end', status: 'finished' },
      ],
    ]);
    const q1 = [user('q1')];
    await collect(await engine.handleTurn(request(q1), never));
    const q2 = [...q1, assistant('first answer'), user('q2')];
    const abort = new AbortController();
    for await (const event of await engine.handleTurn(request(q2), abort.signal)) {
      if (event.type === 'text-delta') abort.abort();
    }
    const q3 = [...q2, assistant('partial'), user('q3')];
    expect(textOf(await collect(await engine.handleTurn(request(q3), never)))).toBe('third answer');

    const [first, , third] = upstream.calls;
    const prompt = third?.input.prompt.text ?? '';
    // The cut turn reaches the agent that runs q3 exactly once either way.
    expect(prompt.split('q2').length - 1).toBe(1);
    expect(prompt).toContain('q3');
    if (checkpointed) {
      expect(third?.sessionId).not.toBe(first?.sessionId);
      expect(prompt).toContain('q1');
      expect(await engine.metrics()).toMatchObject({ slim: 1, replayed: 2 });
    } else {
      expect(third?.sessionId).toBe(first?.sessionId);
      expect(prompt).not.toContain('q1');
      expect(await engine.metrics()).toMatchObject({ slim: 2, replayed: 1 });
    }
    await engine.close();
  });
});
