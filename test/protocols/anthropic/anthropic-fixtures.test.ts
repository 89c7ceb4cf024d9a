import { describe, expect, it } from 'vitest';

import { convertAnthropicRequestToTurn } from '../../../src/protocols/anthropic/anthropic-to-turn.js';
import type { TurnRequest } from '../../../src/turn/turn-request.js';
import { readJsonFixture } from '../../helpers/protocols/read-fixture.js';

/** Request bodies modelled on captured Claude Code 2.1.197 / 2.1.332 requests, shortened. */
const readFixture = (name: string): unknown => readJsonFixture('anthropic', name);

const parseFixture = (name: string, headers: Record<string, string> = {}): TurnRequest => {
  const result = convertAnthropicRequestToTurn(readFixture(`${name}.request.json`), headers);
  if (!result.ok) throw new Error(`fixture ${name} failed: ${result.error.message}`);
  return result.value;
};

const textOf = (parts: ReadonlyArray<{ type: string; text?: string }>): string =>
  parts.map((part) => part.text ?? '').join('\n');

describe('Claude Code 2.1.197 first turn', () => {
  const headers = readFixture('claude-code-2.1.197.headers.json') as Record<string, string>;
  const turn = parseFixture('claude-code-2.1.197', headers);

  it('maps the top-level fields', () => {
    expect(turn).toMatchObject({
      protocol: 'anthropic',
      model: 'claude-opus-4-8',
      toolChoice: { type: 'auto' },
      reasoning: { requested: true, effort: 'high' },
      maxOutputTokens: 64000,
      stream: true,
      includeStreamUsage: true,
      warnings: [],
    });
  });

  it('drops the billing-header block and keeps the identity line and the main prompt with # Environment', () => {
    expect(turn.system).toHaveLength(2);
    expect(turn.system[0]).toEqual({
      type: 'text',
      text: "You are a Claude agent, built on Anthropic's Claude Agent SDK.",
    });
    expect(turn.system[1]?.text).toContain('# Environment');
    expect(turn.system[1]?.text).toContain(' - Primary working directory: /tmp/clients/work\n');
    expect(textOf(turn.system)).not.toContain('x-anthropic-billing-header');
  });

  it('keeps the user message and the mid-conversation system string in order', () => {
    expect(turn.messages.map((message) => message.role)).toEqual(['user', 'system']);
    expect(turn.messages[0]).toMatchObject({
      role: 'user',
      content: [
        { type: 'text', text: expect.stringContaining('# currentDate') },
        { type: 'text', text: 'say hi' },
      ],
    });
    expect(turn.messages[1]).toEqual({
      role: 'system',
      content: [{ type: 'text', text: expect.stringMatching(/^Available agent types for the Agent tool:/) }],
    });
  });

  it('keeps all 24 tools with their $schema', () => {
    expect(turn.tools.map((tool) => tool.name)).toEqual([
      'Agent',
      'Bash',
      'CronCreate',
      'CronDelete',
      'CronList',
      'Edit',
      'EnterWorktree',
      'ExitWorktree',
      'NotebookEdit',
      'Read',
      'ReportFindings',
      'ScheduleWakeup',
      'SendMessage',
      'Skill',
      'TaskCreate',
      'TaskGet',
      'TaskList',
      'TaskOutput',
      'TaskStop',
      'TaskUpdate',
      'WebFetch',
      'WebSearch',
      'Workflow',
      'Write',
    ]);
    expect(turn.tools.every((tool) => tool.kind === 'function')).toBe(true);
    expect(turn.tools[1]).toMatchObject({
      name: 'Bash',
      description: expect.stringContaining('Executes a given bash command'),
      inputSchema: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        required: ['command'],
      },
    });
  });

  it('takes the session from metadata.user_id and strips the API key from the headers', () => {
    expect(turn.identity).toEqual({
      nativeSessionId: { value: 'a1e5998a-797c-4922-af20-866a493bdddf', source: 'metadata.user_id' },
    });
    expect(turn.headers['x-api-key']).toBeUndefined();
    expect(turn.headers['x-claude-code-session-id']).toBe('a1e5998a-797c-4922-af20-866a493bdddf');
    expect(turn.headers['user-agent']).toBe('claude-cli/2.1.197 (external, sdk-cli)');
  });
});

describe('Claude Code 2.1.332 first turn', () => {
  const turn = parseFixture('claude-code-2.1.332');

  it('maps adaptive thinking with display omitted and effort medium', () => {
    expect(turn).toMatchObject({
      model: 'claude-opus-5-5',
      reasoning: { requested: true, effort: 'medium' },
      maxOutputTokens: 128000,
      stream: true,
      warnings: [],
    });
    expect(turn.reasoning).not.toHaveProperty('budgetTokens');
  });

  it('keeps the # Environment block of the mid-conversation system message', () => {
    expect(turn.messages.map((message) => message.role)).toEqual(['user', 'system']);
    const system = turn.messages[1];
    expect(system?.role).toBe('system');
    expect(textOf(system?.content ?? [])).toMatch(/^# Environment\n/);
    expect(textOf(system?.content ?? [])).toContain(' - Primary working directory: /tmp/clients/work\n');
    expect(turn.system).toHaveLength(2);
  });

  it('keeps all 12 tools, including the defer_loading placeholder', () => {
    expect(turn.tools.map((tool) => tool.name)).toEqual([
      'Agent',
      'Bash',
      'Edit',
      'ListAgents',
      'Read',
      'ReportFindings',
      'ScheduleWakeup',
      'Skill',
      'ToolSearch',
      'Workflow',
      'DeferredToolPlaceholder',
      'Write',
    ]);
    expect(turn.tools[10]).toEqual({
      kind: 'function',
      name: 'DeferredToolPlaceholder',
      description: 'Reserved placeholder that keeps deferred tool loading active; never call this tool.',
      inputSchema: { type: 'object', properties: {} },
    });
  });

  it('takes the session from metadata.user_id', () => {
    expect(turn.identity.nativeSessionId).toEqual({
      value: '5f0c2b8e-2d1a-4c3b-9e8f-7a6b5c4d3e2f',
      source: 'metadata.user_id',
    });
  });
});

describe('Claude Code turn 2 with tool results', () => {
  const turn = parseFixture('claude-code-turn-2');

  it('orders user, system (blocks), assistant, then one tool entry per result', () => {
    expect(turn.messages.map((message) => message.role)).toEqual([
      'user',
      'system',
      'assistant',
      'tool',
      'tool',
    ]);
    expect(turn.messages[1]).toEqual({
      role: 'system',
      content: [{ type: 'text', text: expect.stringMatching(/^Available agent types/) }],
    });
  });

  it('maps the assistant text and both tool calls with parsed inputs', () => {
    expect(turn.messages[2]).toEqual({
      role: 'assistant',
      content: [
        { type: 'text', text: 'Running it.' },
        {
          type: 'tool-call',
          toolCallId: 'toolu_fake_0001',
          toolName: 'Bash',
          input: { command: 'echo hello-from-tool', description: 'Print a greeting' },
        },
        {
          type: 'tool-call',
          toolCallId: 'toolu_fake_0002',
          toolName: 'Bash',
          input: { command: 'touch /tmp/clients/work/marker', description: 'Create a marker file' },
        },
      ],
    });
  });

  it('maps the tool results with is_error, ignoring cache_control', () => {
    expect(turn.messages.slice(3)).toEqual([
      {
        role: 'tool',
        toolCallId: 'toolu_fake_0001',
        content: [{ type: 'text', text: 'hello-from-tool' }],
        isError: false,
      },
      {
        role: 'tool',
        toolCallId: 'toolu_fake_0002',
        content: [{ type: 'text', text: expect.stringContaining('was blocked') }],
        isError: true,
      },
    ]);
    expect(turn.warnings).toEqual([]);
  });
});

describe('history with thinking blocks', () => {
  const turn = parseFixture('thinking-history');

  it('maps enabled thinking with its budget and a non-streaming request', () => {
    expect(turn).toMatchObject({
      model: 'claude-sonnet-4-5',
      reasoning: { requested: true, budgetTokens: 16000 },
      maxOutputTokens: 32000,
      stream: false,
      system: [{ type: 'text', text: 'You are a helpful coding assistant.' }],
      identity: {},
      warnings: [],
    });
  });

  it('keeps thinking with signatures, drops redacted thinking and carries images in results', () => {
    expect(turn.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'What is in README.md?' }] },
      {
        role: 'assistant',
        content: [
          {
            type: 'reasoning',
            text: 'The user wants the README. I should read it.',
            signature: 'EqQBCkYIBxgCKkCsig1',
          },
          {
            type: 'tool-call',
            toolCallId: 'toolu_01A',
            toolName: 'Read',
            input: { file_path: '/work/README.md' },
          },
        ],
      },
      {
        role: 'tool',
        toolCallId: 'toolu_01A',
        content: [
          { type: 'text', text: '# Demo\nA screenshot follows.' },
          { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' } },
        ],
        isError: false,
      },
      {
        role: 'assistant',
        content: [
          {
            type: 'reasoning',
            text: 'It is a demo readme with a screenshot.',
            signature: 'EqQBCkYIBxgCKkDsig2',
          },
          { type: 'text', text: 'README.md describes a demo and contains a screenshot.' },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Compare it with this one:' },
          { type: 'image', source: { kind: 'url', url: 'https://example.com/other.png' } },
        ],
      },
    ]);
  });
});
