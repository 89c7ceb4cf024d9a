/**
 * Scratch-path detection: a host tool call with any string argument that references the scratch workspace —
 * including inside a shell command such as cd <workspace> && ls — is not forwarded to Claude Code; the model
 * receives a corrective tool result naming the offending argument and the real host root, and retries. The
 * scratch root lives under the bridge's home, so a model may write it as `~/…`, `$HOME/…` or `${HOME}/…`:
 * those spellings are the same reference and get the same correction.
 */

import { describe, expect, it } from 'vitest';
import { ScratchPathGuards } from '../../src/workspace/scratch-path-guards.js';
import type { ScriptSource } from '../../src/upstream/scripted/scripted-upstream.js';
import {
  collect,
  createTestEngine,
  never,
  request,
  silentLogger,
  textOf,
  user,
} from '../helpers/engine-helpers.js';

const homeDir = '/home/bridge';
const scratchRoot = `${homeDir}/.claude-code-router/cursor-sdk-workspaces`;
const sessionKey = '0123456789abcdef0123456789abcdef';

/** One host tool call with `input`, then the text of whatever result the run got for it. */
const callThenEcho = (toolName: string, input: Record<string, unknown>): ScriptSource => [
  { type: 'tool-call', toolCallId: 'call-1', toolName, input },
  { type: 'tool-batch-end' },
  { type: 'await-tool-results' },
  {
    type: 'emit',
    events: ({ toolResults }) => [
      {
        type: 'text-delta',
        text: toolResults
          .map((result) => `${result.isError ? 'error' : 'ok'}: ${JSON.stringify(result.content)}`)
          .join('\n'),
      },
      { type: 'end', status: 'finished' },
    ],
  },
];

const startEngine = (script: ScriptSource) =>
  createTestEngine(script, {
    guard: new ScratchPathGuards({ logger: silentLogger, scratchRoot, homeDir }),
  });

describe('scratch-path detection: the scratch root written relative to the home directory', () => {
  it.each([
    [
      '~ in a shell command',
      'Bash',
      { command: `cd ~/.claude-code-router/cursor-sdk-workspaces/${sessionKey} && ls` },
      'command',
    ],
    [
      '$HOME in a shell command',
      'Bash',
      { command: `ls "$HOME/.claude-code-router/cursor-sdk-workspaces"` },
      'command',
    ],
    [
      '${HOME} in a shell command',
      'Bash',
      { command: `cat \${HOME}/.claude-code-router/cursor-sdk-workspaces/${sessionKey}/a.ts` },
      'command',
    ],
    [
      '~ in a path argument',
      'Read',
      { file_path: `~/.claude-code-router/cursor-sdk-workspaces/${sessionKey}/src/a.ts` },
      'file_path',
    ],
    [
      '$HOME in a path argument',
      'Read',
      { file_path: `$HOME/.claude-code-router/cursor-sdk-workspaces/${sessionKey}` },
      'file_path',
    ],
  ])(
    '%s: the call is not forwarded; the model gets the correction',
    async (_case, toolName, input, argument) => {
      const { engine, upstream } = startEngine(callThenEcho(toolName, input));
      const events = await collect(await engine.handleTurn(request([user('look around')]), never));
      expect(events.filter((event) => event.type === 'tool-call')).toEqual([]);
      expect(events.at(-1)).toMatchObject({ type: 'turn-end', stopReason: 'end' });
      const [result] = upstream.calls[0]?.toolResults ?? [];
      expect(result?.isError).toBe(true);
      const correction = JSON.stringify(result?.content);
      expect(correction).toContain(`The ${toolName} call was not run: its argument \`${argument}\``);
      expect(textOf(events)).toContain('refers to the Cursor scratch workspace');
      await engine.close();
    },
  );

  it('still forwards a home-relative path outside the scratch root', async () => {
    const { engine } = startEngine([
      {
        type: 'tool-call',
        toolCallId: 'call-1',
        toolName: 'Bash',
        input: { command: 'ls ~/src && cat $HOME/.claude-code-router/config.json' },
      },
      { type: 'tool-batch-end' },
      { type: 'await-tool-results' },
      { type: 'end', status: 'finished' },
    ]);
    const events = await collect(await engine.handleTurn(request([user('look around')]), never));
    expect(events.filter((event) => event.type === 'tool-call')).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: 'turn-end', stopReason: 'tool-use' });
    await engine.close();
  });
});
