/**
 * Host facts are re-read every turn, a tool-result turn that resumes the parked run too. Its workspace is
 * prepared from that request (so the files follow a changed environment) and the resumed run's next tool
 * calls are checked against that request's host root.
 */

import { describe, expect, it } from 'vitest';
import type { ToolCallGuard, WorkspacePort } from '../../src/engine/engine-deps.js';
import type { TurnRequest } from '../../src/turn/turn-request.js';
import {
  assistant,
  collect,
  createTestEngine,
  never,
  request,
  toolResult,
  user,
} from '../helpers/engine-helpers.js';

/** The root a request reports, as `root: <path>` in its first system text. */
const rootOf = (turn: TurnRequest): string | undefined => {
  const first = turn.system[0];
  return first?.type === 'text' ? /root: (\S+)/.exec(first.text)?.[1] : undefined;
};

describe('a tool-result turn that resumes a parked run', () => {
  it('re-reads the host facts: the workspace is prepared from it, and its calls are checked against its root', async () => {
    const prepared: Array<string | undefined> = [];
    const workspace: WorkspacePort = {
      prepare: async (_key, turn) => {
        const hostRoot = rootOf(turn);
        prepared.push(hostRoot);
        return {
          workspaceDir: '/tmp/scratch',
          grounding: { head: '', tail: '' },
          ...(hostRoot === undefined ? {} : { hostRoot }),
        };
      },
      remove: async () => {},
      scratch: async () => ({ workspaceDir: '/tmp/scratch', release: async () => {} }),
    };
    const checkedAgainst: Array<string | undefined> = [];
    const guard: ToolCallGuard = {
      check: (_key, _call, context) => {
        checkedAgainst.push(context.hostRoot);
        return { forward: true };
      },
      endTurn: () => {},
      forget: () => {},
    };
    const { engine, upstream } = createTestEngine(
      [
        { type: 'tool-call', toolCallId: 'call-1', toolName: 'Bash', input: { command: 'ls' } },
        { type: 'tool-batch-end' },
        { type: 'await-tool-results' },
        { type: 'tool-call', toolCallId: 'call-2', toolName: 'Bash', input: { command: 'pwd' } },
        { type: 'tool-batch-end' },
        { type: 'await-tool-results' },
        { type: 'text-delta', text: 'done' },
        { type: 'end', status: 'finished' },
      ],
      { workspace, guard },
    );
    const system = (root: string) => ({ system: [{ type: 'text' as const, text: `root: ${root}` }] });
    const opening = [user('list it')];
    await collect(await engine.handleTurn(request(opening, system('/home/u/old')), never));
    const afterFirst = [
      ...opening,
      assistant('', [{ id: 'call-1', name: 'Bash', input: { command: 'ls' } }]),
      toolResult('call-1', 'a.txt'),
    ];
    // The client now reports another project root (the user moved, or the env block changed).
    await collect(await engine.handleTurn(request(afterFirst, system('/home/u/new')), never));

    expect(upstream.calls).toHaveLength(1);
    expect(prepared).toEqual(['/home/u/old', '/home/u/new']);
    expect(checkedAgainst).toEqual(['/home/u/old', '/home/u/new']);
    await engine.close();
  });
});
