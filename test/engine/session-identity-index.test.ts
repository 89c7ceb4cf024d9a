import { describe, expect, it } from 'vitest';
import { computeIdentity } from '../../src/engine/identity/conversation-identity.js';
import { IdentityIndex } from '../../src/engine/identity/identity-index.js';
import type { TurnMessage } from '../../src/turn/turn-request.js';
import { assistant, request, tool, user, type IdentityHint } from '../helpers/identity-fixtures.js';

const native: IdentityHint = { native: 'session-1' };
const idOf = (messages: TurnMessage[], hint: IdentityHint = native) =>
  computeIdentity(request(messages, hint));

const opening = [user('say hi')];
/** A later turn of the conversation whose first assistant turn called `callId`. */
const laterTurn = (callId: string, more: TurnMessage[] = []) => [
  user('say hi'),
  assistant('Running it.', [callId]),
  tool(callId, 'ok'),
  ...more,
];

/** Resolve and admit like the engine: reuse the session id or mint the next one. */
const createDriver = (index = new IdentityIndex()) => {
  let next = 0;
  return {
    index,
    turn(messages: TurnMessage[], now: number, hint: IdentityHint = native) {
      const identity = idOf(messages, hint);
      const resolution = index.resolve(identity, now);
      const sessionId = resolution.kind === 'existing' ? resolution.sessionId : `s${(next += 1)}`;
      index.admit(sessionId, identity);
      return { resolution, sessionId };
    },
  };
};

describe('side calls under the same native id get their own agent', () => {
  it.each([
    {
      name: 'OpenCode title request',
      side: [user('Generate a title for this conversation:\n'), user('say hi')],
    },
    { name: 'parallel Claude Code Task', side: [user('Find every TODO in src/')] },
  ])('$name while the main turn runs', ({ side }) => {
    const driver = createDriver();
    const main = driver.turn(opening, 0);
    const sideCall = driver.turn(side, 10);
    expect(sideCall.resolution).toEqual({ kind: 'new', reason: 'new-opening' });
    expect(sideCall.sessionId).not.toBe(main.sessionId);
    driver.index.turnFinished(main.sessionId, 20);
    driver.index.turnFinished(sideCall.sessionId, 20);
    expect(driver.turn(laterTurn('toolu_1'), 30).sessionId).toBe(main.sessionId);
  });
});

describe('without a native id a later turn must extend the session’s user-text list', () => {
  const anonymous: IdentityHint = {};
  const conversation = (...texts: string[]): TurnMessage[] =>
    texts.flatMap((text, index) => [
      user(text),
      ...(index < texts.length - 1
        ? [assistant(`reply ${index}`, [`call-${index}`]), tool(`call-${index}`, 'r')]
        : []),
    ]);

  it.each([
    {
      name: 'same list (tool-result follow-up)',
      next: [...conversation('A', 'B'), assistant('x', ['c']), tool('c', 'r')],
      same: true,
    },
    { name: 'extends the list', next: conversation('A', 'B', 'C'), same: true },
    { name: 'a sibling sharing only an earlier prefix', next: conversation('A', 'D'), same: false },
  ])('$name', ({ next, same }) => {
    const driver = createDriver();
    const first = driver.turn(conversation('A', 'B'), 0, anonymous);
    driver.index.turnFinished(first.sessionId, 1);
    const second = driver.turn(next, 2, anonymous);
    expect(second.sessionId === first.sessionId).toBe(same);
    if (!same) expect(second.resolution).toEqual({ kind: 'new', reason: 'unknown-conversation' });
  });

  it('once the session moved on, an older sibling branch does not take it over', () => {
    const driver = createDriver();
    const first = driver.turn(conversation('A', 'B'), 0, anonymous);
    driver.turn(conversation('A', 'B', 'C'), 1, anonymous);
    expect(driver.turn(conversation('A', 'B', 'C', 'D'), 2, anonymous).sessionId).toBe(first.sessionId);
    expect(driver.turn(conversation('A', 'B', 'E'), 3, anonymous).sessionId).not.toBe(first.sessionId);
  });
});

describe('repeated openings', () => {
  type Step = { at: number; messages: TurnMessage[]; finish?: number; expect: string };
  const scenarios: Array<{ name: string; steps: Step[] }> = [
    {
      name: 'a retry while the first turn still runs (catalog lookup, agent creation) reuses its agent',
      steps: [
        { at: 0, messages: opening, expect: 'new:new-opening@s1' },
        { at: 120_000, messages: opening, expect: 'existing:opening-retry@s1' },
      ],
    },
    {
      name: 'a retry within 60 s after the turn finished reuses its agent',
      steps: [
        { at: 0, messages: opening, finish: 1_000, expect: 'new:new-opening@s1' },
        { at: 61_000, messages: opening, expect: 'existing:opening-retry@s1' },
      ],
    },
    {
      name: 'a repeat after the 60-second window gets a fresh agent',
      steps: [
        { at: 0, messages: opening, finish: 1_000, expect: 'new:new-opening@s1' },
        { at: 61_001, messages: opening, expect: 'new:repeated-opening@s2' },
      ],
    },
    {
      name: 'a repeat after a later turn gets a fresh agent, even within the window',
      steps: [
        { at: 0, messages: opening, finish: 1_000, expect: 'new:new-opening@s1' },
        { at: 2_000, messages: laterTurn('toolu_1'), finish: 3_000, expect: 'existing:same-conversation@s1' },
        { at: 4_000, messages: opening, expect: 'new:repeated-opening@s2' },
      ],
    },
    {
      name: 'an opening with the same first text but different further texts is not a repeat',
      steps: [
        { at: 0, messages: opening, expect: 'new:new-opening@s1' },
        { at: 10, messages: [user('say hi'), user('and then explain')], expect: 'new:new-opening@s2' },
      ],
    },
    {
      name: 'a repeated opening never takes over the ongoing conversation',
      steps: [
        { at: 0, messages: opening, finish: 1_000, expect: 'new:new-opening@s1' },
        { at: 2_000, messages: laterTurn('toolu_1'), finish: 3_000, expect: 'existing:same-conversation@s1' },
        { at: 100_000, messages: opening, finish: 101_000, expect: 'new:repeated-opening@s2' },
        {
          at: 102_000,
          messages: laterTurn('toolu_2'),
          finish: 103_000,
          expect: 'existing:same-conversation@s2',
        },
        {
          at: 104_000,
          messages: laterTurn('toolu_1', [assistant('done'), user('next')]),
          expect: 'existing:same-conversation@s1',
        },
        {
          at: 105_000,
          messages: laterTurn('toolu_2', [assistant('done'), user('next')]),
          expect: 'existing:same-conversation@s2',
        },
      ],
    },
    {
      name: 'identical openings without a later turn cannot be told apart: the next later turn is a fresh replay',
      steps: [
        { at: 0, messages: opening, finish: 1_000, expect: 'new:new-opening@s1' },
        { at: 100_000, messages: opening, finish: 101_000, expect: 'new:repeated-opening@s2' },
        {
          at: 102_000,
          messages: laterTurn('toolu_1'),
          finish: 103_000,
          expect: 'fresh-replay:indistinguishable-openings@s3',
        },
        {
          at: 104_000,
          messages: laterTurn('toolu_1', [assistant('ok'), user('more')]),
          expect: 'existing:same-conversation@s3',
        },
        { at: 105_000, messages: laterTurn('toolu_2'), expect: 'fresh-replay:indistinguishable-openings@s4' },
      ],
    },
    {
      name: 'a later turn after the retry window still continues its opening’s session',
      steps: [
        { at: 0, messages: opening, finish: 1_000, expect: 'new:new-opening@s1' },
        { at: 600_000, messages: laterTurn('toolu_1'), expect: 'existing:same-conversation@s1' },
      ],
    },
  ];

  it.each(scenarios)('$name', ({ steps }) => {
    const driver = createDriver();
    const seen = steps.map((step) => {
      const { resolution, sessionId } = driver.turn(step.messages, step.at);
      if (step.finish !== undefined) driver.index.turnFinished(sessionId, step.finish);
      return `${resolution.kind}:${resolution.reason}@${sessionId}`;
    });
    expect(seen).toEqual(steps.map((step) => step.expect));
  });

  it('names the ambiguous sessions in a fresh replay', () => {
    const driver = createDriver();
    driver.turn(opening, 0);
    driver.index.turnFinished('s1', 1);
    driver.turn(opening, 100_000);
    const resolution = driver.index.resolve(idOf(laterTurn('toolu_1')), 100_001);
    expect(resolution).toEqual({
      kind: 'fresh-replay',
      reason: 'indistinguishable-openings',
      ambiguousSessionIds: ['s1', 's2'],
    });
  });

  it('stays ambiguous after the replaced session was forgotten', () => {
    const driver = createDriver();
    driver.turn(opening, 0);
    driver.index.turnFinished('s1', 1);
    driver.turn(opening, 100_000);
    driver.index.forget('s1');
    expect(driver.index.resolve(idOf(laterTurn('toolu_1')), 100_001)).toMatchObject({
      kind: 'fresh-replay',
      ambiguousSessionIds: ['s2'],
    });
  });

  it('keys later turns by the first assistant text when it called no tools', () => {
    const driver = createDriver();
    driver.turn(opening, 0);
    driver.index.turnFinished('s1', 1);
    driver.turn([user('say hi'), assistant('Hello!'), user('how are you')], 2);
    driver.index.turnFinished('s1', 3);
    driver.turn(opening, 100_000);
    expect(driver.turn([user('say hi'), assistant('Hi there.'), user('x')], 100_001).sessionId).toBe('s2');
    expect(
      driver.turn(
        [user('say hi'), assistant('Hello!'), user('how are you'), assistant('Fine.'), user('good')],
        100_002,
      ).sessionId,
    ).toBe('s1');
  });

  it('honours a custom retry window and counts overlapping admits', () => {
    const driver = createDriver(new IdentityIndex({ retryWindowMs: 10 }));
    driver.turn(opening, 0);
    driver.turn(opening, 1);
    driver.index.turnFinished('s1', 2);
    // One of the two admitted turns still runs.
    expect(driver.index.resolve(idOf(opening), 1_000)).toMatchObject({ kind: 'existing', sessionId: 's1' });
    driver.index.turnFinished('s1', 5);
    expect(driver.index.resolve(idOf(opening), 15)).toMatchObject({ kind: 'existing', sessionId: 's1' });
    expect(driver.index.resolve(idOf(opening), 16)).toEqual({ kind: 'new', reason: 'repeated-opening' });
  });

  it('forget drops a session', () => {
    const driver = createDriver();
    driver.turn(opening, 0);
    expect(driver.index.size).toBe(1);
    driver.index.forget('s1');
    expect(driver.index.size).toBe(0);
    expect(driver.index.resolve(idOf(laterTurn('toolu_1')), 1)).toEqual({
      kind: 'new',
      reason: 'unknown-conversation',
    });
  });
});
