import { describe, expect, it } from 'vitest';
import { messageDigest } from '../../src/engine/transcript-digest.js';
import { planTurn, type AgentView } from '../../src/engine/turn-planner.js';
import type { TurnMessage } from '../../src/turn/turn-request.js';

const user = (text: string): TurnMessage => ({ role: 'user', content: [{ type: 'text', text }] });
const call = (id: string): TurnMessage => ({
  role: 'assistant',
  content: [{ type: 'tool-call', toolCallId: id, toolName: 'ToolSearch', input: {} }],
});
const result = (id: string): TurnMessage => ({
  role: 'tool',
  toolCallId: id,
  content: [{ type: 'text', text: 'Loaded tool: shout' }],
  isError: false,
});

const first: TurnMessage[] = [
  user('say hello'),
  { role: 'assistant', content: [{ type: 'text', text: 'hello' }] },
];
const parkedTurn = [...first, user('shout hi'), call('t1')];
const request = [...parkedTurn, result('t1')];
const digests = request.map(messageDigest);

const parked = (overrides: Partial<AgentView>): AgentView => ({
  hasAgent: true,
  parkedToolCallIds: ['t1'],
  committed: parkedTurn.map(messageDigest),
  interrupted: false,
  toolsChanged: false,
  heldBeforeRun: first.map(messageDigest),
  ...overrides,
});

describe('planTurn with parked tool calls', () => {
  it('resumes the parked run when the results match and the tool set is unchanged', () => {
    expect(planTurn(parked({}), request, digests, { kind: 'tool-results' })).toEqual({
      kind: 'resume',
      results: [
        { toolCallId: 't1', content: [{ type: 'text', text: 'Loaded tool: shout' }], isError: false },
      ],
    });
  });

  it('re-sends the cut turn to the agent that holds the history before it when the tool set changed', () => {
    const plan = planTurn(parked({ toolsChanged: true }), request, digests, { kind: 'tool-results' });
    expect(plan).toEqual({
      kind: 'slim',
      newMessages: request.slice(first.length),
      held: first.map(messageDigest),
    });
  });

  it('replays when the tool set changed and what the agent held before the run is unknown', () => {
    const plan = planTurn(parked({ toolsChanged: true, heldBeforeRun: undefined }), request, digests, {
      kind: 'tool-results',
    });
    expect(plan).toEqual({ kind: 'replay', reason: 'the tool set changed while tool calls were parked' });
  });

  it('a slim follow-up to an idle agent keeps what the agent holds', () => {
    const idle = parked({ parkedToolCallIds: [], committed: first.map(messageDigest) });
    const next = [...first, user('again')];
    expect(planTurn(idle, next, next.map(messageDigest), { kind: 'user-message' })).toEqual({
      kind: 'slim',
      newMessages: [user('again')],
      held: first.map(messageDigest),
    });
  });
});
