import { describe, expect, it } from 'vitest';
import { convertOpenaiResponsesRequestToTurn } from '../../../src/protocols/openai-responses/openai-responses-to-turn.js';
import type { TurnRequest } from '../../../src/turn/turn-request.js';
import { readJsonFixture } from '../../helpers/protocols/read-fixture.js';

const readFixture = (name: string): unknown => readJsonFixture('openai-responses', `${name}.request.json`);

const convert = (body: unknown, headers: Record<string, string> = {}): TurnRequest => {
  const result = convertOpenaiResponsesRequestToTurn(body, headers);
  if (!result.ok) throw new Error(`unexpected failure: ${result.error.message}`);
  return result.value;
};

const convertError = (body: unknown) => {
  const result = convertOpenaiResponsesRequestToTurn(body, {});
  if (result.ok) throw new Error('expected an invalid-request error');
  return result.error;
};

const codexHeaders = {
  'x-codex-beta-features': 'remote_compaction_v2',
  'x-codex-window-id': '01a228db-05e9-7423-acdd-0c5da67c83c5:0',
  'x-client-request-id': '01a228db-05e9-7423-acdd-0c5da67c83c5',
  'session-id': '01a228db-05e9-7423-acdd-0c5da67c83c5',
  'thread-id': '01a228db-05e9-7423-acdd-0c5da67c83c5',
  accept: 'text/event-stream',
  'content-type': 'application/json',
  authorization: 'Bearer sk-test',
  originator: 'codex_exec',
  'user-agent': 'codex_exec/0.171.0 (Debian 12.0.0; x86_64) dumb (codex_exec; 0.171.0)',
};

const opencodeHeaders = {
  authorization: 'Bearer sk-test',
  'content-type': 'application/json',
  'user-agent': 'opencode/1.18.33 ai-sdk/provider-utils/4.0.40 runtime/bun/1.3.14',
  'x-session-affinity': 'ses_dd72396f8ffeoNcLlOihO0Zp8w',
  'x-session-id': 'ses_dd72396f8ffeoNcLlOihO0Zp8w',
};

describe('convertOpenaiResponsesRequestToTurn — real client fixtures', () => {
  it('maps a Codex 0.171.0 first turn', () => {
    const turn = convert(readFixture('codex-turn-1'), codexHeaders);
    expect(turn.protocol).toBe('openai-responses');
    expect(turn.model).toBe('gpt-5.5');
    expect(turn.stream).toBe(true);
    expect(turn.includeStreamUsage).toBe(true);
    expect(turn.system.map((part) => part.text.slice(0, 30))).toEqual([
      'You are Codex, a coding agent ',
      '<permissions instructions>\nFil',
      '<skills_instructions>\n## Skill',
      'Note from cursor-bridge (the g',
    ]);
    expect(turn.messages).toHaveLength(2);
    expect(turn.messages[0]).toMatchObject({
      role: 'user',
      content: [{ type: 'text', text: expect.stringContaining('<cwd>/tmp/clients-work</cwd>') }],
    });
    expect(turn.messages[1]).toEqual({
      role: 'user',
      content: [{ type: 'text', text: 'Run echo hello-from-tool' }],
    });
    expect(turn.tools.map((tool) => [tool.kind, tool.name])).toEqual([
      ['function', 'exec_command'],
      ['function', 'write_stdin'],
      ['function', 'multi_agent_v1__spawn_agent'],
      ['function', 'multi_agent_v1__wait_agent'],
      ['custom', 'apply_patch'],
      ['function', 'tool_search'],
    ]);
    expect(turn.tools[0]?.inputSchema).toMatchObject({ required: ['cmd'], additionalProperties: false });
    const applyPatch = turn.tools[4];
    expect(applyPatch?.description).toMatch(/FREEFORM tool/);
    expect(applyPatch?.inputSchema).toMatchObject({
      type: 'object',
      properties: { input: { type: 'string', description: expect.stringContaining('lark grammar') } },
      required: ['input'],
    });
    expect(JSON.stringify(applyPatch?.inputSchema)).toContain('*** Begin Patch');
    expect(turn.warnings.filter((warning) => warning.code === 'unsupported-tool')).toEqual([
      { code: 'unsupported-tool', message: expect.stringContaining('tools.3: web_search tool') },
    ]);
    expect(turn.toolChoice).toEqual({ type: 'auto' });
    expect(turn.reasoning).toEqual({ requested: true, effort: 'medium' });
    expect(turn.maxOutputTokens).toBeUndefined();
    expect(turn.identity).toEqual({
      nativeSessionId: { value: '01a228db-05e9-7423-acdd-0c5da67c83c5', source: 'session-id' },
      promptCacheKey: '01a228db-05e9-7423-acdd-0c5da67c83c5',
    });
    expect(turn.headers).not.toHaveProperty('authorization');
    expect(turn.headers['originator']).toBe('codex_exec');
  });

  it('maps a Codex turn 2 with reasoning, function and custom tool history carrying ids', () => {
    const turn = convert(readFixture('codex-turn-2'), codexHeaders);
    expect(turn.system).toHaveLength(4);
    expect(turn.messages.slice(2)).toEqual([
      {
        role: 'assistant',
        content: [
          {
            type: 'reasoning',
            text: '**Running the command**\n\nThe user wants the echo output.',
            signature: 'gAAAAB-fake-encrypted-reasoning',
          },
          { type: 'text', text: 'Running it.' },
          {
            type: 'tool-call',
            toolCallId: 'call_fake_0001',
            toolName: 'exec_command',
            input: { cmd: 'echo hello-from-tool' },
          },
        ],
      },
      {
        role: 'tool',
        toolCallId: 'call_fake_0001',
        toolName: 'exec_command',
        content: [{ type: 'text', text: expect.stringContaining('Output:\nhello-from-tool\n') }],
        isError: false,
      },
      {
        role: 'assistant',
        content: [
          {
            type: 'tool-call',
            toolCallId: 'call_fake_0002',
            toolName: 'apply_patch',
            input: '*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n',
          },
        ],
      },
      {
        role: 'tool',
        toolCallId: 'call_fake_0002',
        toolName: 'apply_patch',
        content: [{ type: 'text', text: expect.stringContaining('A hello.txt') }],
        isError: false,
      },
    ]);
    expect(turn.warnings.filter((warning) => warning.code !== 'unsupported-tool')).toEqual([]);
  });

  it('maps an OpenCode (@ai-sdk/openai) first turn', () => {
    const turn = convert(readFixture('opencode-turn-1'), opencodeHeaders);
    expect(turn.model).toBe('fake-model');
    expect(turn.system).toEqual([
      { type: 'text', text: expect.stringContaining('<env>\n  Working directory:') },
    ]);
    expect(turn.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'say hi' }] }]);
    expect(turn.maxOutputTokens).toBe(8192);
    expect(turn.tools.map((tool) => tool.name)).toEqual(['bash', 'read']);
    expect(turn.tools[0]).toMatchObject({
      kind: 'function',
      description: expect.stringContaining('bash command'),
      inputSchema: { $schema: 'https://json-schema.org/draft/2020-12/schema', required: ['command'] },
    });
    expect(turn.reasoning).toEqual({ requested: false });
    expect(turn.identity).toEqual({
      nativeSessionId: { value: 'ses_dd72396f8ffeoNcLlOihO0Zp8w', source: 'x-session-id' },
      promptCacheKey: 'ses_dd72396f8ffeoNcLlOihO0Zp8w',
    });
    expect(turn.warnings).toEqual([]);
  });

  it('maps an OpenCode tool round trip without item ids', () => {
    const turn = convert(readFixture('opencode-turn-2'), opencodeHeaders);
    expect(turn.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Run echo hello-from-tool with bash' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Running it.' },
          {
            type: 'tool-call',
            toolCallId: 'call_fake_0001',
            toolName: 'bash',
            input: { command: 'echo hello-from-tool' },
          },
        ],
      },
      {
        role: 'tool',
        toolCallId: 'call_fake_0001',
        toolName: 'bash',
        content: [{ type: 'text', text: 'hello-from-tool\n' }],
        isError: false,
      },
    ]);
  });
});

/** Tools as the bridge mirrors them: kind, mirrored name and how the client addresses them. */
const toolAddresses = (turn: TurnRequest) =>
  turn.tools.map((tool) => [tool.kind, tool.name, tool.clientAddress ?? null]);

const unsupportedTools = (turn: TurnRequest) =>
  turn.warnings.filter((warning) => warning.code === 'unsupported-tool').map((warning) => warning.message);

describe('convertOpenaiResponsesRequestToTurn — Codex 0.171 tool items and types', () => {
  it("mirrors the tools of an additional_tools item (Codex's default model sends no `tools`)", () => {
    const turn = convert(readFixture('codex-default-model-turn-1'), codexHeaders);
    expect(turn.model).toBe('gpt-6.2-sol');
    expect(toolAddresses(turn)).toEqual([
      ['custom', 'functions__exec', { name: 'exec', namespace: 'functions' }],
      ['function', 'functions__wait', { name: 'wait', namespace: 'functions' }],
      ['function', 'functions__request_user_input', { name: 'request_user_input', namespace: 'functions' }],
      [
        'function',
        'functions__request_user_input_async',
        { name: 'request_user_input_async', namespace: 'functions' },
      ],
      [
        'function',
        'functions__send_message_to_user_async',
        { name: 'send_message_to_user_async', namespace: 'functions' },
      ],
      ['function', 'clock__sleep', { name: 'sleep', namespace: 'clock' }],
      ['function', 'collaboration__followup_task', { name: 'followup_task', namespace: 'collaboration' }],
      ['function', 'collaboration__interrupt_agent', { name: 'interrupt_agent', namespace: 'collaboration' }],
      ['function', 'collaboration__list_agents', { name: 'list_agents', namespace: 'collaboration' }],
      ['function', 'collaboration__send_message', { name: 'send_message', namespace: 'collaboration' }],
      ['function', 'collaboration__spawn_agent', { name: 'spawn_agent', namespace: 'collaboration' }],
      ['function', 'collaboration__wait_agent', { name: 'wait_agent', namespace: 'collaboration' }],
    ]);
    const exec = turn.tools[0];
    expect(exec?.description).toMatch(/^Run JavaScript code to orchestrate\/compose tool calls/);
    expect(JSON.stringify(exec?.inputSchema)).toContain('lark grammar');
    // The namespace's own description travels with each of its tools.
    expect(turn.tools[5]?.description).toContain('(clock: Tools for reading and waiting on time.)');
    expect(turn.tools[5]?.inputSchema).toMatchObject({ required: ['duration_ms'] });
    // Nothing is dropped, so nothing is reported; the item is not a transcript entry.
    expect(turn.warnings.filter((warning) => warning.code !== 'unsupported-field')).toEqual([]);
    expect(turn.system.map((part) => part.text).join('\n')).not.toContain('cursor-bridge');
    expect(turn.messages.map((message) => message.role)).toEqual(['user', 'user']);
  });

  it('maps the call of a namespace custom tool and its output parts back to the mirrored name', () => {
    const turn = convert(readFixture('codex-default-model-exec-turn-2'), codexHeaders);
    expect(turn.tools.map((tool) => tool.name)).toContain('functions__exec');
    expect(turn.messages.slice(-2)).toEqual([
      {
        role: 'assistant',
        content: [
          {
            type: 'tool-call',
            toolCallId: 'call_1',
            toolName: 'functions__exec',
            input: 'text((await tools.exec_command({cmd:"echo hi-from-exec"})).output)',
          },
        ],
      },
      {
        role: 'tool',
        toolCallId: 'call_1',
        toolName: 'functions__exec',
        content: [
          { type: 'text', text: 'Script completed\nWall time 0.5 seconds\nOutput:\n' },
          { type: 'text', text: 'hi-from-exec\n' },
        ],
        isError: false,
      },
    ]);
  });

  it('maps the call of a namespace function tool back to the mirrored name', () => {
    const turn = convert(readFixture('codex-default-model-namespace-call-turn-2'), codexHeaders);
    expect(turn.messages.slice(-2)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'tool-call', toolCallId: 'call_1', toolName: 'collaboration__list_agents', input: {} },
        ],
      },
      {
        role: 'tool',
        toolCallId: 'call_1',
        toolName: 'collaboration__list_agents',
        content: [{ type: 'text', text: expect.stringContaining('"agent_name":"/root"') }],
        isError: false,
      },
    ]);
  });

  it('mirrors a client tool_search and adds the tools its output loaded (gpt-5.5)', () => {
    const turn = convert(readFixture('codex-gpt-5.5-tool-search-turn-2'), codexHeaders);
    const search = turn.tools.find((tool) => tool.name === 'tool_search');
    expect(search).toEqual({
      kind: 'function',
      name: 'tool_search',
      description: expect.stringContaining('Searches over deferred tool metadata'),
      inputSchema: expect.objectContaining({ required: ['query'] }),
      clientAddress: { name: 'tool_search', call: 'tool_search_call' },
    });
    // Codex answered the search (limit 3) with three tools of the deferred namespace `multi_agent_v1`.
    const loaded = [
      'multi_agent_v1__spawn_agent',
      'multi_agent_v1__close_agent',
      'multi_agent_v1__resume_agent',
    ];
    expect(turn.tools.slice(-loaded.length).map((tool) => [tool.name, tool.clientAddress])).toEqual(
      loaded.map((name) => [
        name,
        { name: name.slice('multi_agent_v1__'.length), namespace: 'multi_agent_v1' },
      ]),
    );
    expect(turn.messages.slice(-2)).toEqual([
      {
        role: 'assistant',
        content: [
          {
            type: 'tool-call',
            toolCallId: 'call_ts',
            toolName: 'tool_search',
            input: { query: 'spawn agent', limit: 3 },
          },
        ],
      },
      {
        role: 'tool',
        toolCallId: 'call_ts',
        toolName: 'tool_search',
        content: [{ type: 'text', text: `Loaded tools, callable from now on: ${loaded.join(', ')}` }],
        isError: false,
      },
    ]);
    // web_search (cached, Codex's default) is the one tool of this request that cannot be offered.
    expect(unsupportedTools(turn)).toEqual([
      expect.stringMatching(/^tools\.9: web_search tool in cached mode/),
    ]);
    expect(turn.webSearch).toBeUndefined();
  });

  it('tells the model, in the system prompt, about each tool it cannot have, and warns naming each', () => {
    const turn = convert({
      model: 'gpt-5.5',
      input: 'hi',
      tools: [
        { type: 'function', name: 'exec_command', parameters: { type: 'object', properties: {} } },
        { type: 'web_search', external_web_access: false },
        { type: 'tool_search', execution: 'server', description: 'hosted search' },
        { type: 'file_search', vector_store_ids: ['vs_1'] },
        { type: 'namespace', name: 'outer', tools: [{ type: 'namespace', name: 'inner', tools: [] }] },
      ],
    });
    expect(turn.tools.map((tool) => tool.name)).toEqual(['exec_command']);
    expect(unsupportedTools(turn)).toEqual([
      'tools.1: web_search tool in cached mode (external_web_access: false: answered from OpenAI\'s cached web index, which cursor-bridge does not have) is not available; dropped. Set web_search = "live" in the Codex config to let the model search the web.',
      "tools.2: tool_search tool with execution 'server' (searched by OpenAI's servers, not by the client) cannot be offered through cursor-bridge; dropped.",
      'tools.3: file_search tool is not supported by the bridge; dropped.',
      "tools.4.tools.0: namespace tool 'outer__inner' inside a namespace is not supported by the bridge; dropped.",
    ]);
    const note = turn.system.at(-1)?.text ?? '';
    expect(note).toMatch(/^Note from cursor-bridge/);
    for (const message of unsupportedTools(turn)) expect(note).toContain(`- ${message}`);
    expect(note).toContain('Do not try to call them. If the task needs one, say so to the user.');
  });

  it("drops the bridge's own note about unavailable tools when the client resends it as history", () => {
    const turn = convert({
      model: 'gpt-5.5',
      input: [
        { role: 'user', content: 'hi' },
        {
          type: 'message',
          role: 'assistant',
          content: [{ type: 'output_text', text: '[cursor-bridge] Some tools your client offered are …' }],
        },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hello.' }] },
      ],
    });
    expect(turn.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Hello.' }] },
    ]);
  });

  it('mirrors a tool offered both in `tools` and in an additional_tools item once', () => {
    const exec = { type: 'function', name: 'exec_command', parameters: { type: 'object', properties: {} } };
    const turn = convert({
      model: 'gpt-5.5',
      input: [
        { type: 'additional_tools', role: 'developer', tools: [exec] },
        { role: 'user', content: 'hi' },
      ],
      tools: [exec],
    });
    expect(turn.tools.map((tool) => tool.name)).toEqual(['exec_command']);
    expect(turn.warnings).toEqual([]);
  });
});

describe('convertOpenaiResponsesRequestToTurn — mapping rules', () => {
  it('turns a string input into one user message and defaults the rest', () => {
    expect(convert({ model: 'm', input: 'hello' })).toEqual({
      protocol: 'openai-responses',
      model: 'm',
      system: [],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }],
      tools: [],
      toolChoice: { type: 'auto' },
      reasoning: { requested: false },
      stream: false,
      includeStreamUsage: true,
      identity: {},
      headers: {},
      warnings: [],
    });
  });

  it('puts instructions and leading system/developer messages in system, later ones in the transcript', () => {
    const turn = convert({
      model: 'm',
      instructions: 'Be brief.',
      input: [
        { type: 'message', role: 'system', content: 'System string.' },
        { role: 'developer', content: [{ type: 'input_text', text: 'Developer part.' }] },
        { role: 'user', content: 'Hi' },
        { role: 'developer', content: 'Mid-conversation string.' },
        {
          type: 'message',
          role: 'system',
          content: [{ type: 'input_text', text: 'Mid-conversation part.' }],
        },
      ],
    });
    expect(turn.system).toEqual([
      { type: 'text', text: 'Be brief.' },
      { type: 'text', text: 'System string.' },
      { type: 'text', text: 'Developer part.' },
    ]);
    expect(turn.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      { role: 'system', content: [{ type: 'text', text: 'Mid-conversation string.' }] },
      { role: 'system', content: [{ type: 'text', text: 'Mid-conversation part.' }] },
    ]);
  });

  it('maps user images given as data URLs and as URLs, and notes an image by file id with a warning', () => {
    const turn = convert({
      model: 'm',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'What is this?' },
            { type: 'input_image', detail: 'auto', image_url: 'data:image/png;base64,iVBORw0KGgo=' },
            { type: 'input_image', detail: 'high', image_url: 'https://example.com/cat.jpg' },
            { type: 'input_image', detail: 'auto', file_id: 'file-abc' },
            { type: 'input_file', file_id: 'file-def' },
          ],
        },
      ],
    });
    expect(turn.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' } },
          { type: 'image', source: { kind: 'url', url: 'https://example.com/cat.jpg' } },
          { type: 'text', text: expect.stringMatching(/^\[An image .* file id "file-abc".* no Files API/) },
        ],
      },
    ]);
    expect(turn.warnings).toEqual([
      { code: 'unsupported-content', message: expect.stringMatching(/^input\.0\.content\.3: .*file_id/) },
      { code: 'unsupported-content', message: expect.stringMatching(/^input\.0\.content\.4: 'input_file'/) },
    ]);
  });

  it('maps tool outputs given as parts (text and images) in order, after their calls', () => {
    const turn = convert({
      model: 'm',
      input: [
        { role: 'user', content: 'Take a screenshot' },
        { type: 'function_call', call_id: 'c1', name: 'screenshot', arguments: '{}' },
        { type: 'function_call', call_id: 'c2', name: 'ls', arguments: '{"path":' },
        {
          type: 'function_call_output',
          call_id: 'c1',
          output: [
            { type: 'input_text', text: 'Here:' },
            { type: 'input_image', image_url: 'data:image/jpeg;base64,/9j/4AAQ' },
          ],
        },
        { type: 'function_call_output', call_id: 'c2', output: '' },
        { type: 'function_call_output', call_id: 'unknown', output: 'orphan' },
      ],
    });
    expect(turn.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'tool-call', toolCallId: 'c1', toolName: 'screenshot', input: {} },
          // Unparseable arguments are kept as the raw string.
          { type: 'tool-call', toolCallId: 'c2', toolName: 'ls', input: '{"path":' },
        ],
      },
      {
        role: 'tool',
        toolCallId: 'c1',
        toolName: 'screenshot',
        content: [
          { type: 'text', text: 'Here:' },
          { type: 'image', source: { kind: 'base64', mediaType: 'image/jpeg', data: '/9j/4AAQ' } },
        ],
        isError: false,
      },
      {
        role: 'tool',
        toolCallId: 'c2',
        toolName: 'ls',
        content: [{ type: 'text', text: '' }],
        isError: false,
      },
      { role: 'tool', toolCallId: 'unknown', content: [{ type: 'text', text: 'orphan' }], isError: false },
    ]);
  });

  it('maps reasoning items (summary or content) and refusals; warns on unknown item types', () => {
    const turn = convert({
      model: 'm',
      input: [
        { role: 'user', content: 'Q' },
        {
          type: 'reasoning',
          id: 'rs_1',
          summary: [],
          content: [{ type: 'reasoning_text', text: 'raw thought' }],
        },
        { type: 'reasoning', id: 'rs_2', summary: [], encrypted_content: null },
        { type: 'message', role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot.' }] },
        { type: 'item_reference', id: 'msg_old' },
        { type: 'file_search_call', id: 'fs_1', status: 'completed' },
      ],
    });
    expect(turn.messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'raw thought' },
        { type: 'text', text: 'I cannot.' },
      ],
    });
    expect(turn.warnings).toEqual([
      {
        code: 'unsupported-content',
        message: "input.4: input item type 'item_reference' is not supported; dropped.",
      },
      {
        code: 'unsupported-content',
        message: "input.5: input item type 'file_search_call' is not supported; dropped.",
      },
    ]);
  });

  it.each([
    [undefined, { type: 'auto' }],
    ['auto', { type: 'auto' }],
    ['none', { type: 'none' }],
    ['required', { type: 'required' }],
    [
      { type: 'function', name: 'bash' },
      { type: 'tool', name: 'bash' },
    ],
    [
      { type: 'custom', name: 'apply_patch' },
      { type: 'tool', name: 'apply_patch' },
    ],
    [{ type: 'allowed_tools', mode: 'required', tools: [] }, { type: 'required' }],
    [{ type: 'web_search_preview' }, { type: 'auto' }],
  ])('maps tool_choice %j', (toolChoice, expected) => {
    expect(convert({ model: 'm', input: 'x', tool_choice: toolChoice }).toolChoice).toEqual(expected);
  });

  // A `reasoning` object that names no effort (Codex's `{summary: "auto"}`) asks for reasoning without an
  // effort, which runs the catalog default variant's effort.
  it.each([
    [undefined, { requested: false }],
    [null, { requested: false }],
    [{ summary: 'auto' }, { requested: true }],
    [{}, { requested: true }],
    [{ effort: null, summary: 'auto' }, { requested: true }],
    [{ effort: 'none', summary: 'auto' }, { requested: false }],
    [{ effort: 'none' }, { requested: false }],
    [{ effort: 'minimal' }, { requested: true, effort: 'minimal' }],
    [
      { effort: 'low', summary: 'detailed' },
      { requested: true, effort: 'low' },
    ],
    [{ effort: 'high' }, { requested: true, effort: 'high' }],
    [{ effort: 'xhigh' }, { requested: true, effort: 'xhigh' }],
  ])('maps reasoning %j', (reasoning, expected) => {
    expect(convert({ model: 'm', input: 'x', reasoning }).reasoning).toEqual(expected);
  });

  it('warns on parallel_tool_calls false and structured output', () => {
    const turn = convert({
      model: 'm',
      input: 'x',
      parallel_tool_calls: false,
      text: { format: { type: 'json_schema', name: 'out', schema: {} }, verbosity: 'low' },
    });
    expect(turn.warnings.map((warning) => warning.message)).toEqual([
      expect.stringContaining('parallel_tool_calls'),
      expect.stringContaining("text.format 'json_schema'"),
    ]);
  });

  it('describes a text-format custom tool as free-form input', () => {
    const turn = convert({
      model: 'm',
      input: 'x',
      tools: [
        { type: 'custom', name: 'note', format: { type: 'text' } },
        { type: 'custom', name: 'bare' },
      ],
    });
    expect(turn.tools).toEqual([
      {
        kind: 'custom',
        name: 'note',
        inputSchema: {
          type: 'object',
          properties: { input: { type: 'string', description: expect.stringContaining('free-form') } },
          required: ['input'],
        },
      },
      expect.objectContaining({ kind: 'custom', name: 'bare' }),
    ]);
  });

  it('gives a function tool without parameters an empty object schema', () => {
    const turn = convert({
      model: 'm',
      input: 'x',
      tools: [{ type: 'function', name: 'now', parameters: null }],
    });
    expect(turn.tools).toEqual([
      { kind: 'function', name: 'now', inputSchema: { type: 'object', properties: {} } },
    ]);
  });

  it('tolerates unknown fields and items carrying client ids and status', () => {
    const turn = convert({
      model: 'm',
      input: [{ type: 'message', id: 'msg_1', status: 'completed', role: 'user', content: 'x', extra: 1 }],
      store: false,
      include: ['reasoning.encrypted_content'],
      client_metadata: { a: 'b' },
      truncation: 'auto',
      metadata: { k: 'v' },
      temperature: 0.2,
      user: 'someone',
      some_future_field: { nested: true },
    });
    expect(turn.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'x' }] }]);
    expect(turn.warnings).toEqual([]);
  });

  it('lower-cases headers and removes secrets', () => {
    const turn = convert(
      { model: 'm', input: 'x' },
      {
        Authorization: 'Bearer k',
        'X-Api-Key': 'k',
        cookie: 'c',
        'Proxy-Authorization': 'p',
        'User-Agent': 'ua',
      },
    );
    expect(turn.headers).toEqual({ 'user-agent': 'ua' });
  });

  it.each([
    [
      { 'x-session-id': 's1', 'session-id': 's2' },
      { value: 's2', source: 'session-id' },
    ],
    [
      { 'x-session-affinity': 'a', 'x-opencode-session': 'o' },
      { value: 'o', source: 'x-opencode-session' },
    ],
    [
      { 'x-grok-conv-id': 'g', 'x-conversation-id': 'c' },
      { value: 'g', source: 'x-grok-conv-id' },
    ],
    [
      { 'x-kilocode-taskid': 'k', 'x-kilo-session': 'ks' },
      { value: 'k', source: 'x-kilocode-taskid' },
    ],
    [{ 'x-session-affinity': 'a' }, { value: 'a', source: 'x-session-affinity' }],
  ])('finds the native session id in headers %j', (headers, nativeSessionId) => {
    expect(convert({ model: 'm', input: 'x' }, headers).identity).toEqual({ nativeSessionId });
  });
});

describe('convertOpenaiResponsesRequestToTurn — rejected requests', () => {
  it('rejects a conversation (nothing is stored server-side)', () => {
    const error = convertError({ model: 'm', input: 'x', conversation: 'conv_123' });
    expect(error).toMatchObject({ kind: 'invalid-request', param: 'conversation', retryable: false });
    expect(error.message).toMatch(/server-side conversations/);
    expect(error.message).toMatch(/full conversation history in `input`/);
  });

  it('rejects previous_response_id', () => {
    const error = convertError({ model: 'm', input: 'x', previous_response_id: 'resp_1' });
    expect(error).toMatchObject({ kind: 'invalid-request', param: 'previous_response_id' });
    expect(error.message).toMatch(/previous_response_id/);
  });

  it.each([
    [[1, 2], undefined],
    [{ input: 'x' }, 'model'],
    [{ model: 'm' }, 'input'],
    [{ model: 'm', input: [{ role: 'user', content: 'ok' }, 'oops'] }, 'input.1'],
    [
      {
        model: 'm',
        input: [
          { role: 'user', content: 'a' },
          { role: 'user', content: 'b' },
          { role: 'user', content: 7 },
        ],
      },
      'input.2.content',
    ],
    [{ model: 'm', input: [{ role: 'critic', content: 'x' }] }, 'input.0.role'],
    [{ model: 'm', input: [{ role: 'user', content: [{ type: 'input_text' }] }] }, 'input.0.content.0.text'],
    [{ model: 'm', input: [{ type: 'function_call', name: 'f', arguments: '{}' }] }, 'input.0.call_id'],
    [{ model: 'm', input: [{ type: 'function_call_output', call_id: 'c', output: 5 }] }, 'input.0.output'],
    [
      { model: 'm', input: 'x', tools: [{ type: 'function', name: 'a' }, { type: 'function' }] },
      'tools.1.name',
    ],
    [{ model: 'm', input: 'x', tools: ['bash'] }, 'tools.0'],
    [{ model: 'm', input: 'x', tool_choice: { type: 'function' } }, 'tool_choice.name'],
    [{ model: 'm', input: 'x', max_output_tokens: 'many' }, 'max_output_tokens'],
    [{ model: 'm', input: 'x', stream: 'yes' }, 'stream'],
  ])('rejects a bad shape %j naming %s', (body, param) => {
    const error = convertError(body);
    expect(error.kind).toBe('invalid-request');
    expect(error.retryable).toBe(false);
    expect(error.param).toBe(param);
    expect(error.message).toContain(param ?? 'body');
  });
});
