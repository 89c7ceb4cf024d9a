/**
 * planTurn when the agent's hosted web tools differ from the request's (`webToolsChanged`): the SDK binds
 * them at create, so a new agent is needed — except for a parked run, which finishes its turn with the
 * set it had.
 */
import { describe, expect, it } from 'vitest';
import { messageDigest } from '../../src/engine/transcript-digest.js';
import { planTurn, type AgentView } from '../../src/engine/turn-planner.js';
import type { TurnMessage } from '../../src/turn/turn-request.js';

const user = (text: string): TurnMessage => ({ role: 'user', content: [{ type: 'text', text }] });
const answer = (text: string): TurnMessage => ({ role: 'assistant', content: [{ type: 'text', text }] });
const call = (id: string): TurnMessage => ({
  role: 'assistant',
  content: [{ type: 'tool-call', toolCallId: id, toolName: 'shell', input: {} }],
});
const result = (id: string): TurnMessage => ({
  role: 'tool',
  toolCallId: id,
  content: [{ type: 'text', text: 'ok' }],
  isError: false,
});
const digestsOf = (messages: readonly TurnMessage[]) => messages.map(messageDigest);

const first = [user('search the news'), answer('here they are')];

const idle = (overrides: Partial<AgentView> = {}): AgentView => ({
  hasAgent: true,
  parkedToolCallIds: [],
  committed: digestsOf(first),
  interrupted: false,
  toolsChanged: false,
  heldBeforeRun: undefined,
  ...overrides,
});

const parkedTurn = [...first, user('run ls'), call('t1')];
const parked = (overrides: Partial<AgentView> = {}): AgentView =>
  idle({
    parkedToolCallIds: ['t1'],
    committed: digestsOf(parkedTurn),
    heldBeforeRun: digestsOf(first),
    ...overrides,
  });

describe('planTurn and the hosted web tools', () => {
  const next = [...first, user('and now without search')];

  it('replays a follow-up on a new agent when the web tools changed', () => {
    expect(
      planTurn(idle({ webToolsChanged: true }), next, digestsOf(next), { kind: 'user-message' }),
    ).toEqual({ kind: 'replay', reason: 'the hosted web tools changed' });
  });

  it.each<[string, Partial<AgentView>]>([
    ['unchanged', { webToolsChanged: false }],
    ['not stated', {}],
  ])('a follow-up with the web tools %s stays slim', (_name, overrides) => {
    expect(planTurn(idle(overrides), next, digestsOf(next), { kind: 'user-message' })).toEqual({
      kind: 'slim',
      newMessages: [user('and now without search')],
      held: digestsOf(first),
    });
  });

  it('replays an interrupted turn’s re-send too (it would go to the same agent)', () => {
    const cut = [...first, user('cut'), answer('par'), user('go on')];
    expect(
      planTurn(idle({ webToolsChanged: true, interrupted: true }), cut, digestsOf(cut), {
        kind: 'user-message',
      }),
    ).toEqual({ kind: 'replay', reason: 'the hosted web tools changed' });
  });

  it('earlier reasons win: no agent, unknown history, a diverged transcript', () => {
    const digests = digestsOf(next);
    const trailing = { kind: 'user-message' } as const;
    expect(planTurn(idle({ hasAgent: false, webToolsChanged: true }), next, digests, trailing)).toEqual({
      kind: 'replay',
      reason: 'no agent yet',
    });
    expect(planTurn(idle({ committed: undefined, webToolsChanged: true }), next, digests, trailing)).toEqual({
      kind: 'replay',
      reason: 'agent history unknown',
    });
    const other = [user('something else'), answer('x'), user('y')];
    expect(planTurn(idle({ webToolsChanged: true }), other, digestsOf(other), trailing)).toEqual({
      kind: 'replay',
      reason: 'transcript diverged',
    });
  });

  it('a parked run given exactly its results still resumes: it finishes its turn with the tools it had', () => {
    const withResults = [...parkedTurn, result('t1')];
    expect(
      planTurn(parked({ webToolsChanged: true }), withResults, digestsOf(withResults), {
        kind: 'tool-results',
      }),
    ).toEqual({
      kind: 'resume',
      results: [{ toolCallId: 't1', content: [{ type: 'text', text: 'ok' }], isError: false }],
    });
  });

  it('a parked run given other results is replayed, as without the change', () => {
    const wrong = [...parkedTurn, result('t2')];
    expect(
      planTurn(parked({ webToolsChanged: true }), wrong, digestsOf(wrong), { kind: 'tool-results' }),
    ).toEqual({ kind: 'replay', reason: 'tool results do not match the parked calls' });
  });

  it('a parked run whose host tools and web tools both changed is replayed on a new agent', () => {
    const withResults = [...parkedTurn, result('t1')];
    expect(
      planTurn(parked({ toolsChanged: true, webToolsChanged: true }), withResults, digestsOf(withResults), {
        kind: 'tool-results',
      }),
    ).toEqual({ kind: 'replay', reason: 'the hosted web tools changed' });
  });
});
