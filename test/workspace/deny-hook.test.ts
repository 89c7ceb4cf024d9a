import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostFacts } from '../../src/workspace/host-facts.js';
import { buildHookCommand } from '../../src/workspace/render-workspace-files.js';
import { createSessionKey } from '../../src/workspace/session-key.js';
import { TemplateStore } from '../../src/workspace/template-store.js';
import { resolveDefaultTemplateDir } from '../../src/workspace/workspace-paths.js';
import { WorkspaceManager } from '../../src/workspace/workspace-manager.js';
import { createCapturingLogger, createTempDirs } from '../helpers/workspace-test-helpers.js';

type HookAnswer = { permission: string; user_message?: string; agent_message?: string };
type HooksConfig = {
  version: number;
  hooks: Record<string, Array<{ command: string; matcher?: string; timeout?: number; failClosed?: boolean }>>;
};

const facts: HostFacts = {
  source: 'claude-code',
  facts: [
    { key: 'Primary working directory', value: "/home/o'neil/proj" },
    { key: 'Platform', value: 'linux' },
    { key: 'OS Version', value: 'Linux 6.18.44-fc-v657' },
  ],
  root: "/home/o'neil/proj",
  platform: 'linux',
  osVersion: 'Linux 6.18.44-fc-v657',
};

const temp = createTempDirs();
let manager: WorkspaceManager;
let withFacts: string;
let withoutFacts: string;

beforeAll(async () => {
  const templates = await TemplateStore.load({ defaultDir: resolveDefaultTemplateDir() });
  // A root with a space and a quote exercises the shell quoting of the hook command.
  const root = join(await temp.make(), "work spaces 'x'");
  manager = new WorkspaceManager({ root, templates, logger: createCapturingLogger().logger });
  withFacts = await manager.ensureWorkspace(createSessionKey(), facts);
  withoutFacts = await manager.ensureWorkspace(createSessionKey(), undefined);
});

afterAll(async () => {
  await manager.close();
  await temp.cleanup();
});

/** Cursor's hooks loader: strip `//…` and block comments, then JSON.parse (as the SDK bundle does). */
const loadHooksLikeCursor = async (dir: string): Promise<HooksConfig> => {
  const text = await readFile(join(dir, '.cursor', 'hooks.json'), 'utf8');
  return JSON.parse(text.replace(/\/\/.*$/gm, '').replace(/\/\*[\s\S]*?\*\//g, '')) as HooksConfig;
};

/** Run the hook the way Cursor does: its command through a shell, in the workspace, event JSON on stdin. */
const runHook = async (dir: string, stdin: string): Promise<HookAnswer> => {
  const config = await loadHooksLikeCursor(dir);
  const command = config.hooks.preToolUse?.[0]?.command;
  if (command === undefined) throw new Error('no preToolUse hook');
  const child = spawn('/bin/sh', ['-c', command], { cwd: dir, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  child.stdin.end(stdin);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  return JSON.parse(stdout) as HookAnswer;
};

const event = (fields: Record<string, unknown>): string =>
  JSON.stringify({ conversation_id: 'c1', generation_id: 'g1', workspace_roots: [withFacts], ...fields });

describe('the rendered hooks.json', () => {
  it('loads the way Cursor loads it and registers the hook for the built-in tool events only', async () => {
    const config = await loadHooksLikeCursor(withFacts);
    expect(config.version).toBe(1);
    // No beforeMCPExecution: in bridge mode the only MCP server is custom-user-tools, and a hook process
    // per host tool call cost ~100 ms of tool-call latency for a check that always allows.
    expect(Object.keys(config.hooks).sort()).toEqual(
      ['beforeReadFile', 'beforeShellExecution', 'preToolUse', 'subagentStart'].sort(),
    );
    for (const entries of Object.values(config.hooks)) {
      expect(entries).toHaveLength(1);
      expect(entries[0]?.failClosed).toBe(true);
      expect(entries[0]?.command).toBe(config.hooks.preToolUse?.[0]?.command);
    }
  });

  it('skips MCP tool calls in preToolUse by matcher (Cursor tests it against the tool name)', async () => {
    const matcher = new RegExp((await loadHooksLikeCursor(withFacts)).hooks.preToolUse?.[0]?.matcher ?? '');
    expect(matcher.test('Shell')).toBe(true);
    expect(matcher.test('Read')).toBe(true);
    expect(matcher.test('MCP:Bash')).toBe(false);
  });
});

describe('the rendered deny-hook script', () => {
  it('denies a Cursor built-in tool with a message stating the topology and the host facts', async () => {
    const answer = await runHook(
      withFacts,
      event({ hook_event_name: 'preToolUse', tool_name: 'Shell', tool_input: {} }),
    );
    expect(answer.permission).toBe('deny');
    expect(answer.agent_message).toBe(answer.user_message);
    const message = answer.user_message ?? '';
    expect(message).toContain('"Shell"');
    expect(message).toContain("Your tools run on the user's machine");
    expect(message).toContain("Primary working directory: /home/o'neil/proj");
    expect(message).toContain('OS Version: Linux 6.18.44-fc-v657');
    expect(message).toContain('not in this directory');
    expect(message).toContain('custom-user-tools');
  });

  it('allows an MCP call to custom-user-tools', async () => {
    const answer = await runHook(
      withFacts,
      event({
        hook_event_name: 'beforeMCPExecution',
        tool_name: 'Bash',
        tool_input: '{"command":"ls"}',
        mcp_server_name: 'custom-user-tools',
        command: 'custom-user-tools',
      }),
    );
    expect(answer).toEqual({ permission: 'allow' });
    expect(await runHook(withFacts, event({ hook_event_name: 'preToolUse', tool_name: 'MCP:Bash' }))).toEqual(
      {
        permission: 'allow',
      },
    );
  });

  it('denies MCP calls to any other server', async () => {
    const answer = await runHook(
      withFacts,
      event({ hook_event_name: 'beforeMCPExecution', tool_name: 'x', mcp_server_name: 'other-server' }),
    );
    expect(answer.permission).toBe('deny');
    expect(answer.user_message).toContain('other-server');
  });

  it.each(['beforeShellExecution', 'beforeReadFile', 'subagentStart', 'someFutureEvent'])(
    'denies %s',
    async (name) => {
      const answer = await runHook(
        withFacts,
        event({ hook_event_name: name, command: 'ls', file_path: '/etc/passwd' }),
      );
      expect(answer.permission).toBe('deny');
      expect(answer.user_message).toContain('/home/o');
    },
  );

  it('denies when the input is unreadable', async () => {
    expect((await runHook(withFacts, 'not json')).permission).toBe('deny');
    expect((await runHook(withFacts, '')).permission).toBe('deny');
  });

  it('never guesses a root when no environment was reported', async () => {
    const answer = await runHook(withoutFacts, event({ hook_event_name: 'preToolUse', tool_name: 'Read' }));
    expect(answer.permission).toBe('deny');
    expect(answer.user_message).toContain('Use only absolute host paths that appear in the conversation');
  });
});

describe('buildHookCommand', () => {
  it('quotes for POSIX shells', () => {
    expect(buildHookCommand('/usr/bin/node', "/w/it's/h.mjs", 'linux')).toBe(
      `'/usr/bin/node' '/w/it'\\''s/h.mjs'`,
    );
  });

  it('uses the PowerShell call operator on Windows', () => {
    expect(buildHookCommand('C:\\Program Files\\nodejs\\node.exe', "C:\\w\\o'n\\h.mjs", 'win32')).toBe(
      "& 'C:\\Program Files\\nodejs\\node.exe' 'C:\\w\\o''n\\h.mjs'",
    );
  });
});
