/**
 * Each `cursorMode` is grounded with text that is true for it. Through the whole bridge (config → templates →
 * workspaces → engine → HTTP) over a scripted upstream, reading the prompt the upstream receives and the
 * scratch workspace the mode leaves on disk.
 *
 * The modes: `bridge` — Claude Code hosts tools; Cursor builtins denied. `plan` — a planning/chat
 * assistant, text/reasoning only (no tool execution). `agent` — a Cursor agent with its own local tooling
 * semantics; optional `cursorCwd` for the local agent cwd.
 */

import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startScriptedBridge } from '../helpers/scripted-bridge.js';

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

const hostRoot = '/home/dev/project';
const environment =
  '# Environment\nYou have been invoked in the following environment: \n' +
  ` - Primary working directory: ${hostRoot}\n - Platform: linux\n`;

/** What one turn in `options` mode handed the upstream, and the workspace files it left. */
type Observed = { prompt: string; workspaceDir: string; files: string[] };

const runTurn = async (options: Record<string, unknown>): Promise<Observed> => {
  const { upstream, url, close } = await startScriptedBridge({
    source: [
      { type: 'text-delta', text: 'ok' },
      { type: 'end', status: 'finished' },
    ],
    config: {
      Providers: [
        {
          name: 'cursor',
          api_base_url: 'https://cursor.com',
          api_key: '$CURSOR_API_KEY',
          models: ['composer-2'],
          transformer: { use: [['cursor-sdk', options]] },
        },
      ],
    },
  });
  cleanup.push(close);
  const response = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-claude-code-session-id': 'mode-1' },
    body: JSON.stringify({
      model: 'composer-2',
      max_tokens: 100,
      system: environment,
      tools: [{ name: 'Bash', input_schema: { type: 'object' } }],
      messages: [{ role: 'user', content: 'Where is my project?' }],
    }),
  });
  expect(response.status).toBe(200);
  await response.text();
  const [call] = upstream.calls;
  if (call === undefined) throw new Error('the upstream was not called');
  const workspaceDir = call.sessionOptions.workspaceDir;
  const entries = await readdir(workspaceDir, { recursive: true, withFileTypes: true });
  const files = entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(workspaceDir, join(entry.parentPath, entry.name)).split(sep).join('/'))
    .sort();
  return { prompt: call.input.prompt.text, workspaceDir, files };
};

/** Head block, the text between, and tail block of a grounded prompt. */
const splitPrompt = (prompt: string): { head: string; tail: string } => {
  const head = /^<bridge_environment>\n[\s\S]*?\n<\/bridge_environment>/.exec(prompt)?.[0];
  const tail = /<bridge_reminder>\n[\s\S]*?\n<\/bridge_reminder>$/.exec(prompt)?.[0];
  if (head === undefined || tail === undefined)
    throw new Error(`prompt is not head + body + tail:\n${prompt}`);
  return { head, tail };
};

/** What bridge mode's grounding says, and must not be said where it is false. */
const bridgeOnlyClaims = [
  'custom-user-tools',
  'Every tool comes from',
  'never use its path',
  'never the scratch workspace path',
];

describe('grounding true for each cursorMode', () => {
  it('bridge: every tool comes from custom-user-tools; the workspace holds AGENTS.md and the deny-hooks', async () => {
    const { prompt, workspaceDir, files } = await runTurn({ cursorMode: 'bridge' });
    const { head, tail } = splitPrompt(prompt);
    expect(head).toContain('Every tool comes from the `custom-user-tools` MCP server');
    expect(head).toContain(`That directory (${workspaceDir}) is an empty scratch workspace`);
    expect(tail).toContain(`Use host paths under ${hostRoot}, never the scratch workspace path.`);
    expect(files).toEqual(['.cursor/hooks.json', '.cursor/hooks/deny-builtin.mjs', '.git', 'AGENTS.md']);
  });

  it('plan: no tool execution, answers with text; no tool server and no deny-hooks', async () => {
    const { prompt, workspaceDir, files } = await runTurn({ cursorMode: 'plan' });
    const { head, tail } = splitPrompt(prompt);
    expect(head).toContain('you have no tools, and you must not try to call or execute any');
    expect(head).toContain('Answer with text');
    expect(head).toContain(`The user's project root there is ${hostRoot}`);
    expect(head).toContain(`(${workspaceDir}) is an empty scratch workspace`);
    expect(tail).toContain('do not call or execute tools');
    for (const claim of ['custom-user-tools', 'Every tool comes from']) expect(prompt).not.toContain(claim);
    // The SDK loads no project settings in plan mode: no rules or hooks are written for it.
    expect(files).toEqual(['.git']);
  });

  it('agent with cursorCwd: its own tools run in cursorCwd; the client tools are not its own', async () => {
    const cursorCwd = join(tmpdir(), 'cursor-bridge-agent-cwd');
    const { prompt, workspaceDir, files } = await runTurn({ cursorMode: 'agent', cursorCwd });
    const { head, tail } = splitPrompt(prompt);
    expect(head).toContain(`in your working directory ${cursorCwd}; use them there.`);
    expect(head).toContain("The user's own client (Claude Code) has tools of its own");
    expect(head).toContain('They are not available to you; do not try to call them.');
    expect(head).toContain(`The user's project root on that machine is ${hostRoot}`);
    expect(tail).toContain(`your own tools run in ${cursorCwd}`);
    expect(prompt).not.toContain(workspaceDir);
    for (const claim of bridgeOnlyClaims) expect(prompt).not.toContain(claim);
    // Cursor's built-ins are the agent's tools: nothing may deny them.
    expect(files).toEqual(['.git']);
  });

  it('agent without cursorCwd: its own tools run in the scratch workspace, which it may use', async () => {
    const { prompt, workspaceDir, files } = await runTurn({ cursorMode: 'agent' });
    const { head, tail } = splitPrompt(prompt);
    expect(head).toContain(
      `in your working directory ${workspaceDir}, an empty scratch workspace created for this conversation; use them there.`,
    );
    expect(tail).toContain(`your own tools run in ${workspaceDir}`);
    for (const claim of bridgeOnlyClaims) expect(prompt).not.toContain(claim);
    expect(files).toEqual(['.git']);
  });
});
