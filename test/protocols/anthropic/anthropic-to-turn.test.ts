import { describe, expect, it } from 'vitest';

import { encodeEncryptedContent } from '../../../src/protocols/anthropic/anthropic-web-search.js';
import { convertAnthropicRequestToTurn } from '../../../src/protocols/anthropic/anthropic-to-turn.js';
import type { TurnRequest } from '../../../src/turn/turn-request.js';

const base = { model: 'claude-opus-4-8', max_tokens: 1024, messages: [{ role: 'user', content: 'hi' }] };

const parse = (body: Record<string, unknown>, headers: Record<string, string> = {}): TurnRequest => {
  const result = convertAnthropicRequestToTurn(body, headers);
  if (!result.ok) throw new Error(`unexpected failure: ${result.error.message}`);
  return result.value;
};

const parseError = (body: unknown) => {
  const result = convertAnthropicRequestToTurn(body, {});
  if (result.ok) throw new Error('expected a failure');
  return result.error;
};

describe('convertAnthropicRequestToTurn: basics', () => {
  it('maps a minimal request with defaults', () => {
    expect(parse(base)).toEqual({
      protocol: 'anthropic',
      model: 'claude-opus-4-8',
      system: [],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      tools: [],
      toolChoice: { type: 'auto' },
      reasoning: { requested: false },
      maxOutputTokens: 1024,
      stream: false,
      includeStreamUsage: true,
      identity: {},
      headers: {},
      warnings: [],
    });
  });

  it('reads stream and leaves maxOutputTokens out when max_tokens is absent', () => {
    const turn = parse({ model: 'm', messages: [], stream: true });
    expect(turn.stream).toBe(true);
    expect('maxOutputTokens' in turn).toBe(false);
  });

  it('accepts system as a string or as text blocks with cache_control', () => {
    expect(parse({ ...base, system: 'be brief' }).system).toEqual([{ type: 'text', text: 'be brief' }]);
    const turn = parse({
      ...base,
      system: [
        { type: 'text', text: 'one' },
        { type: 'text', text: 'two', cache_control: { type: 'ephemeral' } },
      ],
    });
    expect(turn.system).toEqual([
      { type: 'text', text: 'one' },
      { type: 'text', text: 'two' },
    ]);
  });

  it("drops Claude Code's billing-header system block", () => {
    const turn = parse({
      ...base,
      system: [
        { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1.197.123; cc_entrypoint=sdk-cli;' },
        { type: 'text', text: 'You are a Claude agent.' },
      ],
    });
    expect(turn.system).toEqual([{ type: 'text', text: 'You are a Claude agent.' }]);
  });

  it('turns mid-conversation system messages (string or blocks) into system entries in place', () => {
    const turn = parse({
      ...base,
      messages: [
        { role: 'user', content: 'first' },
        { role: 'system', content: 'agents: …' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'second' },
        {
          role: 'system',
          content: [{ type: 'text', text: '# Environment', cache_control: { type: 'ephemeral' } }],
        },
      ],
    });
    expect(turn.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'first' }] },
      { role: 'system', content: [{ type: 'text', text: 'agents: …' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'ok' }] },
      { role: 'user', content: [{ type: 'text', text: 'second' }] },
      { role: 'system', content: [{ type: 'text', text: '# Environment' }] },
    ]);
  });

  it('maps user text and images (base64 and url)', () => {
    const turn = parse({
      ...base,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
          ],
        },
      ],
    });
    expect(turn.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'AAAA' } },
          { type: 'image', source: { kind: 'url', url: 'https://example.com/a.png' } },
        ],
      },
    ]);
  });

  it('maps assistant text, thinking and tool calls; redacted thinking is dropped without a warning', () => {
    const turn = parse({
      ...base,
      messages: [
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hmm', signature: 'sig-1' },
            { type: 'redacted_thinking', data: 'opaque' },
            { type: 'thinking', thinking: 'no signature' },
            { type: 'text', text: 'Running it.' },
            { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls' } },
            { type: 'tool_use', id: 'toolu_2', name: 'Bash', input: '{"command":"pwd"}' },
            { type: 'tool_use', id: 'toolu_3', name: 'Bash', input: 'not json' },
          ],
        },
      ],
    });
    expect(turn.messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'hmm', signature: 'sig-1' },
        { type: 'reasoning', text: 'no signature' },
        { type: 'text', text: 'Running it.' },
        { type: 'tool-call', toolCallId: 'toolu_1', toolName: 'Bash', input: { command: 'ls' } },
        { type: 'tool-call', toolCallId: 'toolu_2', toolName: 'Bash', input: { command: 'pwd' } },
        { type: 'tool-call', toolCallId: 'toolu_3', toolName: 'Bash', input: 'not json' },
      ],
    });
    expect(turn.warnings).toEqual([]);
  });

  it('splits tool results out of a user message, in order, with string and block content', () => {
    const turn = parse({
      ...base,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'hello', is_error: false },
            {
              type: 'tool_result',
              tool_use_id: 'toolu_2',
              content: [
                { type: 'text', text: 'shot:' },
                { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: 'BBBB' } },
              ],
            },
            { type: 'tool_result', tool_use_id: 'toolu_3', content: 'denied', is_error: true },
            { type: 'tool_result', tool_use_id: 'toolu_4' },
            { type: 'text', text: 'continue' },
          ],
        },
      ],
    });
    expect(turn.messages).toEqual([
      { role: 'tool', toolCallId: 'toolu_1', content: [{ type: 'text', text: 'hello' }], isError: false },
      {
        role: 'tool',
        toolCallId: 'toolu_2',
        content: [
          { type: 'text', text: 'shot:' },
          { type: 'image', source: { kind: 'base64', mediaType: 'image/jpeg', data: 'BBBB' } },
        ],
        isError: false,
      },
      { role: 'tool', toolCallId: 'toolu_3', content: [{ type: 'text', text: 'denied' }], isError: true },
      { role: 'tool', toolCallId: 'toolu_4', content: [], isError: false },
      { role: 'user', content: [{ type: 'text', text: 'continue' }] },
    ]);
  });

  it('keeps user text that precedes a tool result before it', () => {
    const turn = parse({
      ...base,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'before' },
            { type: 'tool_result', tool_use_id: 't', content: 'r' },
          ],
        },
      ],
    });
    expect(turn.messages.map((message) => message.role)).toEqual(['user', 'tool']);
  });

  it("turns ToolSearch's tool_reference blocks into a note", () => {
    const turn = parse({
      ...base,
      messages: [
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 't',
              content: [{ type: 'tool_reference', tool_name: 'WebFetch' }],
            },
          ],
        },
      ],
    });
    expect(turn.messages[0]).toMatchObject({ content: [{ type: 'text', text: 'Loaded tool: WebFetch' }] });
  });

  it('drops documents and unknown blocks with warnings and notes an image by file id, never a 400', () => {
    const turn = parse({
      ...base,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'doc' } },
            { type: 'image', source: { type: 'file', file_id: 'file_1' } },
            { type: 'text', text: 'kept' },
          ],
        },
        {
          role: 'assistant',
          content: [{ type: 'code_execution_tool_result', tool_use_id: 's', content: {} }],
        },
        { role: 'system', content: [{ type: 'image', source: { type: 'url', url: 'https://x/y.png' } }] },
      ],
    });
    // An image by file id is a note to the model (no Files API), warned about like the dropped blocks.
    expect(turn.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: expect.stringMatching(/^\[An image .* file id "file_1".* no Files API/) },
          { type: 'text', text: 'kept' },
        ],
      },
    ]);
    expect(turn.warnings).toEqual([
      { code: 'unsupported-content', message: expect.stringContaining('messages.0.content.0') },
      { code: 'unsupported-content', message: expect.stringContaining('messages.0.content.1.source') },
      { code: 'unsupported-content', message: expect.stringContaining('messages.1.content.0') },
      { code: 'unsupported-content', message: expect.stringContaining('messages.2.content.0') },
    ]);
    expect(turn.warnings[0]?.message).toContain('document');
  });
});

describe('convertAnthropicRequestToTurn: tools and tool_choice', () => {
  const bash = { name: 'Bash', description: 'Run', input_schema: { type: 'object', properties: {} } };

  it('keeps client tools (also defer_loading and type custom), reads the web search server tool, drops other server tools with a warning', () => {
    const turn = parse({
      ...base,
      tools: [
        bash,
        {
          name: 'DeferredToolPlaceholder',
          description: 'never call this tool.',
          input_schema: { type: 'object', properties: {} },
          defer_loading: true,
        },
        { type: 'custom', name: 'NoDescription', input_schema: { type: 'object' } },
        { type: 'web_search_20250305', name: 'web_search', max_uses: 5 },
        { type: 'bash_20250124', name: 'bash' },
        'garbage',
      ],
    });
    expect(turn.tools).toEqual([
      { kind: 'function', name: 'Bash', description: 'Run', inputSchema: { type: 'object', properties: {} } },
      {
        kind: 'function',
        name: 'DeferredToolPlaceholder',
        description: 'never call this tool.',
        inputSchema: { type: 'object', properties: {} },
      },
      { kind: 'function', name: 'NoDescription', inputSchema: { type: 'object' } },
    ]);
    expect(turn.webSearch).toEqual({ name: 'web_search', maxUses: 5 });
    expect(turn.warnings).toEqual([
      { code: 'unsupported-tool', message: expect.stringContaining('tools.4: bash_20250124 bash') },
      { code: 'unsupported-tool', message: expect.stringContaining('tools.5') },
    ]);
  });

  it("reads Claude Code's web search side request: the server tool with its filters, tool_choice naming it", () => {
    const turn = parse({
      ...base,
      messages: [{ role: 'user', content: 'Perform a web search for the query: node 22 release date' }],
      tools: [
        {
          type: 'web_search_20250305',
          name: 'web_search',
          allowed_domains: ['nodejs.org'],
          blocked_domains: null,
          max_uses: 8,
          user_location: { type: 'approximate', city: 'Berlin', country: 'DE', timezone: null },
        },
      ],
      tool_choice: { type: 'tool', name: 'web_search' },
    });
    expect(turn.tools).toEqual([]);
    expect(turn.toolChoice).toEqual({ type: 'tool', name: 'web_search' });
    expect(turn.webSearch).toEqual({
      name: 'web_search',
      allowedDomains: ['nodejs.org'],
      maxUses: 8,
      userLocation: { city: 'Berlin', country: 'DE' },
    });
    expect(turn.warnings).toEqual([]);
  });

  it('names the field of a malformed web search tool in a 400', () => {
    const result = convertAnthropicRequestToTurn(
      { ...base, tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 'many' }] },
      {},
    );
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.param).toBe('tools.0.max_uses');
  });

  it('reads earlier hosted searches of the transcript as one part each, sources and bridge excerpts included', () => {
    const turn = parse({
      ...base,
      messages: [
        { role: 'user', content: 'search' },
        {
          role: 'assistant',
          content: [
            { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'node 22' } },
            {
              type: 'web_search_tool_result',
              tool_use_id: 'srvtoolu_1',
              content: [
                {
                  type: 'web_search_result',
                  url: 'https://nodejs.org/a',
                  title: 'Node 22',
                  encrypted_content: encodeEncryptedContent('Released in April'),
                  page_age: null,
                },
                {
                  type: 'web_search_result',
                  url: 'https://b.example/',
                  title: 'B',
                  encrypted_content: 'opaque',
                },
              ],
            },
            { type: 'server_tool_use', id: 'srvtoolu_2', name: 'web_search', input: { query: 'x' } },
            {
              type: 'web_search_tool_result',
              tool_use_id: 'srvtoolu_2',
              content: { type: 'web_search_tool_result_error', error_code: 'unavailable' },
            },
            { type: 'text', text: 'Node 22 came out in April.' },
          ],
        },
        { role: 'user', content: 'thanks' },
      ],
    });
    expect(turn.messages[1]).toEqual({
      role: 'assistant',
      content: [
        {
          type: 'web-search',
          id: 'srvtoolu_1',
          query: 'node 22',
          sources: [
            { url: 'https://nodejs.org/a', title: 'Node 22', snippet: 'Released in April' },
            { url: 'https://b.example/', title: 'B' },
          ],
        },
        { type: 'web-search', id: 'srvtoolu_2', query: 'x', error: 'unavailable' },
        { type: 'text', text: 'Node 22 came out in April.' },
      ],
    });
    expect(turn.warnings).toEqual([]);
  });

  it.each([
    [undefined, { type: 'auto' }],
    [{ type: 'auto', disable_parallel_tool_use: true }, { type: 'auto' }],
    [{ type: 'any' }, { type: 'required' }],
    [{ type: 'none' }, { type: 'none' }],
    [
      { type: 'tool', name: 'Bash' },
      { type: 'tool', name: 'Bash' },
    ],
  ])('maps tool_choice %j', (toolChoice, expected) => {
    expect(parse({ ...base, tools: [bash], tool_choice: toolChoice }).toolChoice).toEqual(expected);
  });
});

describe('convertAnthropicRequestToTurn: reasoning', () => {
  it.each([
    ['no thinking, no effort', {}, { requested: false }],
    ['effort alone', { output_config: { effort: 'low' } }, { requested: true, effort: 'low' }],
    ['disabled', { thinking: { type: 'disabled' }, output_config: { effort: 'high' } }, { requested: false }],
    [
      'enabled with budget',
      { thinking: { type: 'enabled', budget_tokens: 16000 } },
      { requested: true, budgetTokens: 16000 },
    ],
    [
      'enabled with budget and effort',
      { thinking: { type: 'enabled', budget_tokens: 2048 }, output_config: { effort: 'max' } },
      { requested: true, effort: 'max', budgetTokens: 2048 },
    ],
    ['adaptive', { thinking: { type: 'adaptive' } }, { requested: true }],
    [
      'adaptive, display omitted, effort high',
      { thinking: { type: 'adaptive', display: 'omitted' }, output_config: { effort: 'high' } },
      { requested: true, effort: 'high' },
    ],
    [
      'adaptive with xhigh',
      { thinking: { type: 'adaptive' }, output_config: { effort: 'xhigh' } },
      { requested: true, effort: 'xhigh' },
    ],
  ])('%s', (_name, fields, expected) => {
    expect(parse({ ...base, ...fields }).reasoning).toEqual(expected);
  });

  it('warns on an unknown thinking type instead of failing', () => {
    const turn = parse({ ...base, thinking: { type: 'deep' }, output_config: { effort: 'high' } });
    expect(turn.reasoning).toEqual({ requested: true, effort: 'high' });
    expect(turn.warnings.map((warning) => warning.message)).toEqual([
      expect.stringContaining('thinking.type "deep"'),
    ]);
  });

  it('rejects an unknown effort, naming output_config.effort', () => {
    const error = parseError({
      ...base,
      thinking: { type: 'adaptive' },
      output_config: { effort: 'ludicrous' },
    });
    expect(error).toMatchObject({ kind: 'invalid-request', param: 'output_config.effort' });
  });

  it('reads effort none as no reasoning, even with thinking enabled', () => {
    const turn = parse({ ...base, thinking: { type: 'adaptive' }, output_config: { effort: 'none' } });
    expect(turn.reasoning).toEqual({ requested: false });
  });
});

describe('convertAnthropicRequestToTurn: identity and headers', () => {
  const claudeCodeUserId = JSON.stringify({
    device_id: '3e934313',
    account_uuid: '',
    session_id: 'a1e5998a-797c-4922-af20-866a493bdddf',
  });

  it('reads session_id from the JSON metadata.user_id', () => {
    const turn = parse(
      { ...base, metadata: { user_id: claudeCodeUserId } },
      { 'x-claude-code-session-id': 'other' },
    );
    expect(turn.identity).toEqual({
      nativeSessionId: { value: 'a1e5998a-797c-4922-af20-866a493bdddf', source: 'metadata.user_id' },
    });
  });

  it('reads the legacy _session_ suffix', () => {
    const userId = 'user_abc123_account_0f1e_session_5d3c2b1a-0000-4000-8000-000000000001';
    expect(parse({ ...base, metadata: { user_id: userId } }).identity).toEqual({
      nativeSessionId: { value: '5d3c2b1a-0000-4000-8000-000000000001', source: 'metadata.user_id' },
    });
  });

  it('uses an opaque user_id as it is', () => {
    expect(parse({ ...base, metadata: { user_id: 'opaque-42' } }).identity).toEqual({
      nativeSessionId: { value: 'opaque-42', source: 'metadata.user_id' },
    });
  });

  it.each(['{"device_id":"d"}', '{"device_id":"d","session_id":""}', '42', '"quoted"'])(
    'uses JSON without a session_id as the raw string %s, before the header',
    (userId) => {
      const header = { 'X-Claude-Code-Session-Id': 'hdr-1' };
      expect(parse({ ...base, metadata: { user_id: userId } }, header).identity).toEqual({
        nativeSessionId: { value: userId, source: 'metadata.user_id' },
      });
    },
  );

  it('falls back to x-claude-code-session-id when user_id is absent or empty', () => {
    const header = { 'X-Claude-Code-Session-Id': 'hdr-1' };
    const expected = { nativeSessionId: { value: 'hdr-1', source: 'x-claude-code-session-id' } };
    expect(parse(base, header).identity).toEqual(expected);
    expect(parse({ ...base, metadata: { user_id: '' } }, header).identity).toEqual(expected);
    expect(parse({ ...base, metadata: { user_id: null } }, header).identity).toEqual(expected);
    expect(parse({ ...base, metadata: {} }).identity).toEqual({});
  });

  it('lower-cases headers and removes secrets', () => {
    const turn = parse(base, {
      Authorization: 'Bearer sk',
      'X-Api-Key': 'sk-test',
      Cookie: 'a=b',
      'Proxy-Authorization': 'Basic x',
      'User-Agent': 'claude-cli/2.1.197 (external, sdk-cli)',
      'anthropic-beta': 'claude-code-20250219',
    });
    expect(turn.headers).toEqual({
      'user-agent': 'claude-cli/2.1.197 (external, sdk-cli)',
      'anthropic-beta': 'claude-code-20250219',
    });
  });
});

describe('convertAnthropicRequestToTurn: tolerated and ignored fields', () => {
  it('ignores context_management and sampling parameters silently', () => {
    const turn = parse({
      ...base,
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
      temperature: 1,
      top_p: 0.9,
      top_k: 5,
    });
    expect(turn.warnings).toEqual([]);
  });

  it('warns about unknown fields, stop_sequences and output_config.format', () => {
    const turn = parse({
      ...base,
      stop_sequences: ['END'],
      mcp_servers: [],
      container: 'c',
      output_config: { format: { type: 'json_schema', schema: {} } },
    });
    expect(turn.warnings).toEqual([
      { code: 'unsupported-field', message: 'ignored unsupported fields: mcp_servers, container' },
      { code: 'unsupported-field', message: expect.stringContaining('stop_sequences') },
      { code: 'unsupported-field', message: expect.stringContaining('output_config.format') },
    ]);
  });
});

describe('convertAnthropicRequestToTurn: invalid requests', () => {
  it.each([
    [
      'messages.2.content',
      {
        ...base,
        messages: [base.messages[0], { role: 'assistant', content: 'a' }, { role: 'user', content: 5 }],
      },
    ],
    ['messages.0.role', { ...base, messages: [{ role: 'developer', content: 'x' }] }],
    [
      'messages.0.content.1.text',
      {
        ...base,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'a' },
              { type: 'text', text: 7 },
            ],
          },
        ],
      },
    ],
    ['messages.0.content.0.type', { ...base, messages: [{ role: 'user', content: [{ text: 'no type' }] }] }],
    [
      'messages.0.content.0.source.data',
      {
        ...base,
        messages: [
          { role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png' } }] },
        ],
      },
    ],
    [
      'messages.0.content.0.tool_use_id',
      { ...base, messages: [{ role: 'user', content: [{ type: 'tool_result', content: 'x' }] }] },
    ],
    [
      'messages.0.content.0.content.0.text',
      {
        ...base,
        messages: [
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'text' }] }] },
        ],
      },
    ],
    [
      'messages.0.content.0.name',
      { ...base, messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 't', input: {} }] }] },
    ],
    ['messages', { model: 'm' }],
    ['model', { messages: [] }],
    ['max_tokens', { ...base, max_tokens: 'lots' }],
    ['stream', { ...base, stream: 'yes' }],
    ['system', { ...base, system: 42 }],
    ['system.0.text', { ...base, system: [{ type: 'text' }] }],
    ['tool_choice.name', { ...base, tool_choice: { type: 'tool' } }],
    ['metadata.user_id', { ...base, metadata: { user_id: 7 } }],
  ])('names %s', (param, body) => {
    const error = parseError(body);
    expect(error).toMatchObject({ kind: 'invalid-request', param, retryable: false });
    expect(error.message).toContain(param);
  });

  it.each([null, [], 'text', 3])('rejects a non-object body %j', (body) => {
    expect(parseError(body)).toMatchObject({ kind: 'invalid-request', retryable: false });
  });
});
