import { describe, expect, it } from 'vitest';
import type { Script } from '../../src/upstream/scripted/scripted-upstream.js';
import type { TurnMessage } from '../../src/turn/turn-request.js';
import {
  assistant,
  collect,
  createTestEngine,
  never,
  request,
  toolResult,
  withId,
} from '../helpers/engine-helpers.js';
import { claudeCodeForkMessage, dateReminder, user } from '../helpers/identity-fixtures.js';

/** Every run answers `answer <n>`, n counting runs from 1, so a later request can quote the answer it got. */
const numberedAnswers = () =>
  createTestEngine((_input, runIndex): Script => [
    { type: 'text-delta', text: `answer ${runIndex + 1}` },
    { type: 'end', status: 'finished' },
  ]);

const sessionIds = (upstream: ReturnType<typeof numberedAnswers>['upstream']): string[] =>
  upstream.calls.map((call) => call.sessionId);

const promptOf = (upstream: ReturnType<typeof numberedAnswers>['upstream'], call: number): string =>
  upstream.calls[call]?.input.prompt.text ?? '';

describe('large user texts identify a conversation exactly', () => {
  /** 40 KB of pasted log lines; `editAt` changes one character and keeps the length. */
  const pastedLog = (editAt?: number): string => {
    let text = '';
    for (let line = 0; text.length < 40_000; line += 1)
      text += `2026-12-02T10:${String(line % 60).padStart(2, '0')} worker ${line} ok\n`;
    text = text.slice(0, 40_000);
    if (editAt === undefined) return text;
    return `${text.slice(0, editAt)}${text[editAt] === '#' ? '%' : '#'}${text.slice(editAt + 1)}`;
  };
  const anonymous = { identity: {} };

  // Without a native id a conversation is its substantive user-text list (as prefix hashes): a later turn
  // that extends it keeps the session; a sibling that only shares an earlier prefix does not.
  it('a sibling whose 40 KB text differs at character 600 gets its own agent; the first conversation keeps its agent', async () => {
    const { engine, upstream } = numberedAnswers();
    const opening = [user('review these logs')];
    const turn = async (messages: TurnMessage[]) =>
      collect(await engine.handleTurn(request(messages, anonymous), never));

    await turn(opening);
    const first = [...opening, assistant('answer 1'), user(pastedLog())];
    await turn(first);
    await turn([...opening, assistant('answer 1'), user(pastedLog(600))]);
    await turn([...first, assistant('answer 2'), user('and the next step?')]);

    expect(sessionIds(upstream)).toEqual(['scripted-1', 'scripted-1', 'scripted-2', 'scripted-1']);
    // The opening and the sibling were replayed, each to its own agent; the first conversation's agent
    // was not disposed and its next turn is a slim follow-up.
    expect(promptOf(upstream, 2)).toContain('review these logs');
    expect(upstream.sessions[0]?.disposed).toBe(false);
    expect(promptOf(upstream, 3)).not.toContain('review these logs');
    expect(await engine.metrics()).toMatchObject({ replayed: 2, slim: 2 });
    await engine.close();
  });
});

describe('a fork marker opens a worker context only where Claude Code puts it', () => {
  const parentOpening = user(dateReminder('2026-12-02'), 'build the feature');

  // Worker forks with inherited history use their latest explicit fork marker (<fork-boilerplate> or
  // You are a worker fork) as the identity boundary. A marker pasted into a prompt is not Claude Code's
  // fork message.
  it.each([
    {
      name: 'the <fork-boilerplate> block',
      text: `Claude Code printed this, what does it mean?\n\n${claudeCodeForkMessage('write the tests')}`,
    },
    {
      name: '"You are a worker fork"',
      text: 'My own orchestrator says "You are a worker fork" to its workers. Should we do the same?',
    },
  ])('$name pasted into the middle of a prompt continues the conversation on its agent', async ({ text }) => {
    const { engine, upstream } = numberedAnswers();
    const id = withId('cc-paste');
    await collect(await engine.handleTurn(request([parentOpening], id), never));
    await collect(
      await engine.handleTurn(request([parentOpening, assistant('answer 1'), user(text)], id), never),
    );

    expect(sessionIds(upstream)).toEqual(['scripted-1', 'scripted-1']);
    expect(promptOf(upstream, 1)).not.toContain('build the feature');
    expect(await engine.metrics()).toMatchObject({ slim: 1 });
    await engine.close();
  });

  // A worker's own opening instructions and first assistant reply identify its agent, not the inherited
  // parent turns. Shared boilerplate followed by different instructions separates sibling workers; the
  // full inherited transcript still reaches the SDK.
  it("Claude Code's fork message (a text part starting with the boilerplate, after the spawning call's result) gives each worker its own agent", async () => {
    const { engine, upstream } = numberedAnswers();
    const id = withId('cc-fork');
    await collect(await engine.handleTurn(request([parentOpening], id), never));
    const inherited = [
      parentOpening,
      assistant('answer 1', [{ id: 'toolu_fork', name: 'Agent', input: { subagent_type: 'fork' } }]),
      toolResult('toolu_fork', 'Fork started \u2014 that fork is you.'),
    ];
    const worker = [...inherited, user(claudeCodeForkMessage('write the tests'))];
    await collect(await engine.handleTurn(request(worker, id), never));
    await collect(
      await engine.handleTurn(
        request([...inherited, user(claudeCodeForkMessage('update the docs'))], id),
        never,
      ),
    );
    await collect(
      await engine.handleTurn(
        request([...worker, assistant('answer 2'), user('also run the linter')], id),
        never,
      ),
    );

    expect(sessionIds(upstream)).toEqual(['scripted-1', 'scripted-2', 'scripted-3', 'scripted-2']);
    expect(promptOf(upstream, 1)).toContain('build the feature');
    expect(promptOf(upstream, 1)).toContain('Your directive: write the tests');
    expect(promptOf(upstream, 3)).not.toContain('build the feature');
    await engine.close();
  });
});
