import { describe, expect, it } from 'vitest';
import { convertOpenaiChatRequestToTurn } from '../../../src/protocols/openai-chat/openai-chat-to-turn.js';
import type { TurnError } from '../../../src/turn/turn-error.js';
import type { TurnRequest } from '../../../src/turn/turn-request.js';

const parse = (body: Record<string, unknown>, headers: Record<string, string> = {}): TurnRequest => {
  const result = convertOpenaiChatRequestToTurn({ model: 'composer-2', ...body }, headers);
  if (!result.ok) throw new Error(`unexpected failure: ${result.error.message}`);
  return result.value;
};

const parseError = (body: unknown): TurnError => {
  const result = convertOpenaiChatRequestToTurn(body, {});
  if (result.ok) throw new Error('expected a failure');
  return result.error;
};

const user = (content: unknown) => ({ role: 'user', content });

describe('convertOpenaiChatRequestToTurn: defaults', () => {
  it('maps a minimal request with neutral defaults', () => {
    expect(parse({ messages: [user('hi')] })).toEqual({
      protocol: 'openai-chat',
      model: 'composer-2',
      system: [],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      tools: [],
      toolChoice: { type: 'auto' },
      reasoning: { requested: false },
      stream: false,
      includeStreamUsage: false,
      identity: {},
      headers: {},
      warnings: [],
    });
  });

  it('keeps the model string as sent, including a provider prefix', () => {
    expect(parse({ model: 'cursor,gpt-5', messages: [user('hi')] }).model).toBe('cursor,gpt-5');
  });
});

describe('convertOpenaiChatRequestToTurn: system and developer messages', () => {
  it('puts the leading run of system/developer messages (string or parts) into system', () => {
    const turn = parse({
      messages: [
        { role: 'system', content: 'one' },
        {
          role: 'developer',
          content: [
            { type: 'text', text: 'two' },
            { type: 'text', text: 'three' },
          ],
        },
        user('hi'),
      ],
    });
    expect(turn.system).toEqual([
      { type: 'text', text: 'one' },
      { type: 'text', text: 'two' },
      { type: 'text', text: 'three' },
    ]);
    expect(turn.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
  });

  it('keeps later system/developer messages in place as role system entries', () => {
    const turn = parse({
      messages: [
        { role: 'system', content: 'top' },
        user('a'),
        { role: 'system', content: 'mid string' },
        { role: 'developer', content: [{ type: 'text', text: 'mid parts' }] },
        user('b'),
      ],
    });
    expect(turn.system).toEqual([{ type: 'text', text: 'top' }]);
    expect(turn.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'a' }] },
      { role: 'system', content: [{ type: 'text', text: 'mid string' }] },
      { role: 'system', content: [{ type: 'text', text: 'mid parts' }] },
      { role: 'user', content: [{ type: 'text', text: 'b' }] },
    ]);
  });

  it('drops non-text parts of a system message with a warning', () => {
    const turn = parse({
      messages: [
        {
          role: 'system',
          content: [
            { type: 'text', text: 'keep' },
            { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
          ],
        },
        user('x'),
      ],
    });
    expect(turn.system).toEqual([{ type: 'text', text: 'keep' }]);
    expect(turn.warnings).toEqual([
      { code: 'unsupported-content', message: expect.stringContaining('messages.0.content.1') },
    ]);
  });
});

describe('convertOpenaiChatRequestToTurn: user content', () => {
  it('maps text, base64 data-URL images and http URL images', () => {
    const turn = parse({
      messages: [
        user([
          { type: 'text', text: 'look' },
          { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,QUJD', detail: 'low' } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
          { type: 'image_url', image_url: 'http://example.com/bare.png' },
        ]),
      ],
    });
    expect(turn.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image', source: { kind: 'base64', mediaType: 'image/jpeg', data: 'QUJD' } },
          { type: 'image', source: { kind: 'url', url: 'https://example.com/cat.png' } },
          { type: 'image', source: { kind: 'url', url: 'http://example.com/bare.png' } },
        ],
      },
    ]);
    expect(turn.warnings).toEqual([]);
  });

  it('drops unsupported parts with warnings and keeps every image URL for the image preparer, never a 400', () => {
    const turn = parse({
      messages: [
        user([
          { type: 'input_audio', input_audio: { data: 'AAA', format: 'wav' } },
          { type: 'image_url', image_url: { url: 'data:image/png,%89PNG%0D%0A' } },
          { type: 'image_url', image_url: { url: 'file:///etc/passwd' } },
          { type: 'text', text: 'left' },
        ]),
      ],
    });
    // A percent-encoded data URL is decoded into its bytes; any other URL is the image preparer's to fetch
    // or to refuse with a note to the model (file: is refused there).
    expect(turn.messages).toEqual([
      {
        role: 'user',
        content: [
          {
            type: 'image',
            source: {
              kind: 'base64',
              mediaType: 'image/png',
              data: Buffer.from('\x89PNG\r\n', 'latin1').toString('base64'),
            },
          },
          { type: 'image', source: { kind: 'url', url: 'file:///etc/passwd' } },
          { type: 'text', text: 'left' },
        ],
      },
    ]);
    expect(turn.warnings.map((warning) => warning.message)).toEqual([
      expect.stringContaining('messages.0.content.0'),
    ]);
    expect(turn.warnings.every((warning) => warning.code === 'unsupported-content')).toBe(true);
  });
});

describe('convertOpenaiChatRequestToTurn: assistant history and tool results', () => {
  it('maps reasoning_content, text and tool calls (parsed arguments) and names tool results', () => {
    const turn = parse({
      messages: [
        user('go'),
        {
          role: 'assistant',
          content: 'Running it.',
          reasoning_content: 'I need ls.',
          tool_calls: [
            { id: 'call_a', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } },
            { id: 'call_b', type: 'function', function: { name: 'noop', arguments: '' } },
            { id: 'call_c', type: 'function', function: { name: 'bad', arguments: '{"x":' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_a', content: 'a.txt\n' },
        { role: 'tool', tool_call_id: 'call_b', content: [{ type: 'text', text: 'ok' }] },
        { role: 'tool', tool_call_id: 'call_unknown', content: '' },
      ],
    });
    expect(turn.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'I need ls.' },
          { type: 'text', text: 'Running it.' },
          { type: 'tool-call', toolCallId: 'call_a', toolName: 'bash', input: { command: 'ls' } },
          { type: 'tool-call', toolCallId: 'call_b', toolName: 'noop', input: {} },
          { type: 'tool-call', toolCallId: 'call_c', toolName: 'bad', input: '{"x":' },
        ],
      },
      {
        role: 'tool',
        toolCallId: 'call_a',
        toolName: 'bash',
        content: [{ type: 'text', text: 'a.txt\n' }],
        isError: false,
      },
      {
        role: 'tool',
        toolCallId: 'call_b',
        toolName: 'noop',
        content: [{ type: 'text', text: 'ok' }],
        isError: false,
      },
      { role: 'tool', toolCallId: 'call_unknown', content: [{ type: 'text', text: '' }], isError: false },
    ]);
  });

  it('accepts assistant content "" or null next to tool_calls, and tool results with images', () => {
    const turn = parse({
      messages: [
        user('go'),
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read', arguments: '{}' } }],
        },
        {
          role: 'tool',
          tool_call_id: 'c1',
          content: [
            { type: 'text', text: 'image:' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBO' } },
          ],
        },
        {
          role: 'assistant',
          content: '',
          tool_calls: [{ id: 'c2', type: 'function', function: { name: 'read', arguments: '{}' } }],
        },
      ],
    });
    expect(turn.messages[1]).toEqual({
      role: 'assistant',
      content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'read', input: {} }],
    });
    expect(turn.messages[2]).toMatchObject({
      role: 'tool',
      content: [
        { type: 'text', text: 'image:' },
        { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'iVBO' } },
      ],
    });
    expect(turn.messages[3]).toEqual({
      role: 'assistant',
      content: [{ type: 'tool-call', toolCallId: 'c2', toolName: 'read', input: {} }],
    });
  });

  it('maps assistant text/refusal parts and custom tool calls (raw input string)', () => {
    const turn = parse({
      messages: [
        user('go'),
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'part one' },
            { type: 'refusal', refusal: 'cannot do that' },
          ],
          tool_calls: [
            { id: 'p1', type: 'custom', custom: { name: 'apply_patch', input: '*** Begin Patch' } },
          ],
        },
        { role: 'assistant', content: null, refusal: 'No.' },
      ],
    });
    expect(turn.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'part one' },
          { type: 'text', text: 'cannot do that' },
          { type: 'tool-call', toolCallId: 'p1', toolName: 'apply_patch', input: '*** Begin Patch' },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'No.' }] },
    ]);
  });

  it('drops messages with an unknown role with a warning', () => {
    const turn = parse({ messages: [user('a'), { role: 'function', name: 'f', content: 'x' }] });
    expect(turn.messages).toHaveLength(1);
    expect(turn.warnings).toEqual([
      { code: 'unsupported-content', message: expect.stringContaining('"function"') },
    ]);
  });
});

describe('convertOpenaiChatRequestToTurn: tools and tool_choice', () => {
  it('keeps function tools (schema untouched, default schema when missing) and drops others with warnings', () => {
    const parameters = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { n: { type: 'integer', minimum: -9007199254740991 } },
    };
    const turn = parse({
      messages: [user('x')],
      tools: [
        { type: 'function', function: { name: 'count', description: 'Count.', parameters } },
        { type: 'function', function: { name: 'bare' } },
        { type: 'custom', custom: { name: 'apply_patch' } },
        { type: 'web_search' },
        { type: 'function', function: { description: 'no name' } },
        'not-a-tool',
      ],
    });
    expect(turn.tools).toEqual([
      { kind: 'function', name: 'count', description: 'Count.', inputSchema: parameters },
      { kind: 'function', name: 'bare', inputSchema: { type: 'object', properties: {} } },
    ]);
    expect(turn.warnings.map((warning) => warning.code)).toEqual([
      'unsupported-tool',
      'unsupported-tool',
      'unsupported-tool',
      'unsupported-tool',
    ]);
    expect(turn.warnings[0]?.message).toContain('"custom"');
    expect(turn.warnings[2]?.message).toContain('tools.4.function.name');
  });

  it.each([
    ['auto', { type: 'auto' }],
    ['none', { type: 'none' }],
    ['required', { type: 'required' }],
    [
      { type: 'function', function: { name: 'bash' } },
      { type: 'tool', name: 'bash' },
    ],
  ])('maps tool_choice %j', (choice, expected) => {
    expect(parse({ messages: [user('x')], tool_choice: choice }).toolChoice).toEqual(expected);
  });

  it('falls back to auto with a warning for an unknown tool_choice', () => {
    const turn = parse({ messages: [user('x')], tool_choice: { type: 'allowed_tools', allowed_tools: {} } });
    expect(turn.toolChoice).toEqual({ type: 'auto' });
    expect(turn.warnings).toEqual([
      { code: 'unsupported-field', message: expect.stringContaining('tool_choice') },
    ]);
  });
});

describe('convertOpenaiChatRequestToTurn: reasoning, limits, stream', () => {
  // No thinking, effort or reasoning field (or effort none) requests no reasoning; a `reasoning` object
  // that names no effort asks for reasoning without an effort (the catalog default variant's effort);
  // `enabled: false` turns it off.
  it.each([
    [{}, { requested: false }],
    [{ reasoning: null, reasoning_effort: null }, { requested: false }],
    [{ reasoning: {} }, { requested: true }],
    [{ reasoning: { enabled: true } }, { requested: true }],
    [{ reasoning: { enabled: false } }, { requested: false }],
    [{ reasoning: { enabled: false }, reasoning_effort: 'high' }, { requested: false }],
    [{ reasoning: { effort: 'none', enabled: true } }, { requested: false }],
    [
      { reasoning: {}, reasoning_effort: 'low' },
      { requested: true, effort: 'low' },
    ],
    [{ reasoning_effort: 'none' }, { requested: false }],
    [{ reasoning_effort: 'minimal' }, { requested: true, effort: 'minimal' }],
    [{ reasoning_effort: 'low' }, { requested: true, effort: 'low' }],
    [{ reasoning_effort: 'medium' }, { requested: true, effort: 'medium' }],
    [{ reasoning_effort: 'high' }, { requested: true, effort: 'high' }],
    [{ reasoning_effort: 'xhigh' }, { requested: true, effort: 'xhigh' }],
    [{ reasoning: { effort: 'low' } }, { requested: true, effort: 'low' }],
    [{ reasoning: { effort: 'none' } }, { requested: false }],
    [
      { reasoning_effort: 'high', reasoning: { effort: 'low' } },
      { requested: true, effort: 'high' },
    ],
  ])('maps %j to %j', (fields, expected) => {
    expect(parse({ messages: [user('x')], ...fields }).reasoning).toEqual(expected);
  });

  it('rejects an unknown effort, naming the field', () => {
    expect(parseError({ model: 'gpt', messages: [user('x')], reasoning_effort: 'turbo' })).toMatchObject({
      kind: 'invalid-request',
      param: 'reasoning_effort',
    });
  });

  it('prefers max_completion_tokens over max_tokens', () => {
    expect(parse({ messages: [user('x')], max_tokens: 100 }).maxOutputTokens).toBe(100);
    expect(
      parse({ messages: [user('x')], max_completion_tokens: 200, max_tokens: 100 }).maxOutputTokens,
    ).toBe(200);
    expect(parse({ messages: [user('x')], max_tokens: null })).not.toHaveProperty('maxOutputTokens');
  });

  it('reads stream and stream_options.include_usage', () => {
    const turn = parse({ messages: [user('x')], stream: true, stream_options: { include_usage: true } });
    expect(turn.stream).toBe(true);
    expect(turn.includeStreamUsage).toBe(true);
    expect(parse({ messages: [user('x')], stream: true }).includeStreamUsage).toBe(false);
  });

  it('tolerates unknown fields and warns about ignored sampling parameters', () => {
    const turn = parse({
      messages: [user('x')],
      parallel_tool_calls: false,
      store: false,
      some_future_field: { nested: true },
      temperature: 0.2,
      response_format: { type: 'json_object' },
      n: 2,
    });
    expect(turn.warnings.map((warning) => warning.message)).toEqual([
      expect.stringMatching(/^temperature:/),
      expect.stringMatching(/^response_format:/),
      expect.stringMatching(/^n:/),
    ]);
  });
});

describe('convertOpenaiChatRequestToTurn: headers and identity', () => {
  it('lower-cases headers and removes credentials', () => {
    const turn = parse(
      { messages: [user('x')] },
      {
        Authorization: 'Bearer sk-secret',
        'X-Api-Key': 'k',
        Cookie: 'a=b',
        'proxy-authorization': 'Basic x',
        'User-Agent': 'opencode/1.18.33',
      },
    );
    expect(turn.headers).toEqual({ 'user-agent': 'opencode/1.18.33' });
  });

  it.each([
    'x-opencode-session',
    'x-kilocode-taskid',
    'x-kilo-session',
    'x-grok-session-id',
    'x-grok-conv-id',
    'x-conversation-id',
    'session-id',
    'x-session-id',
    'x-session-affinity',
  ])('reads the session header %s', (header) => {
    const turn = parse({ messages: [user('x')], conversation: 'conv-body' }, { [header]: 'sess-1' });
    expect(turn.identity.nativeSessionId).toEqual({ value: 'sess-1', source: header });
  });

  it('takes the first header in the precedence order, not the request order', () => {
    const turn = parse(
      { messages: [user('x')] },
      { 'x-session-affinity': 'aff', 'x-session-id': 'sid', 'x-kilo-session': 'kilo' },
    );
    expect(turn.identity.nativeSessionId).toEqual({ value: 'kilo', source: 'x-kilo-session' });
  });

  it('falls back to conversation (string or object) and conversation_id, and reads prompt_cache_key', () => {
    expect(parse({ messages: [user('x')], conversation: 'c1' }).identity).toEqual({
      nativeSessionId: { value: 'c1', source: 'conversation' },
    });
    expect(parse({ messages: [user('x')], conversation: { id: 'c2' } }).identity.nativeSessionId).toEqual({
      value: 'c2',
      source: 'conversation',
    });
    expect(parse({ messages: [user('x')], conversation_id: 'c3', prompt_cache_key: 'pck' }).identity).toEqual(
      { nativeSessionId: { value: 'c3', source: 'conversation' }, promptCacheKey: 'pck' },
    );
    expect(parse({ messages: [user('x')] }, { 'x-session-id': '  ' }).identity).toEqual({});
  });
});

describe('convertOpenaiChatRequestToTurn: invalid shapes', () => {
  it.each([
    [
      {
        model: 'm',
        messages: [
          { role: 'user', content: 'a' },
          { role: 'user', content: 'b' },
          { role: 'user', content: 42 },
        ],
      },
      'messages.2.content',
    ],
    [{ model: 'm', messages: [{ role: 'user', content: [{ type: 'text' }] }] }, 'messages.0.content.0.text'],
    [
      { model: 'm', messages: [{ role: 'user', content: [{ text: 'no type' }] }] },
      'messages.0.content.0.type',
    ],
    [
      { model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] },
      'messages.0.content.0.image_url.url',
    ],
    [{ model: 'm', messages: [{ role: 'tool', content: 'x' }] }, 'messages.0.tool_call_id'],
    [
      { model: 'm', messages: [{ role: 'assistant', tool_calls: [{ id: 'c', function: {} }] }] },
      'messages.0.tool_calls.0.function.name',
    ],
    [{ model: 'm', messages: [{ content: 'x' }] }, 'messages.0.role'],
    [{ model: 'm', messages: [] }, 'messages'],
    [{ model: 'm', messages: 'hi' }, 'messages'],
    [{ messages: [{ role: 'user', content: 'x' }] }, 'model'],
    [{ model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 1.5 }, 'max_tokens'],
    [{ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: 'yes' }, 'stream'],
    [{ model: 'm', messages: [{ role: 'user', content: 'x' }], tools: {} }, 'tools'],
  ])('rejects %j at %s', (body, param) => {
    const error = parseError(body);
    expect(error).toMatchObject({ kind: 'invalid-request', param, retryable: false });
    expect(error.message).toContain(param);
  });

  it('explains a union failure by listing the expected shapes', () => {
    expect(parseError({ model: 'm', messages: [{ role: 'user', content: 42 }] }).message).toBe(
      'Invalid request: messages.0.content: Invalid input: expected string or array',
    );
  });

  it('rejects a body that is not an object without a param', () => {
    const error = parseError([1, 2]);
    expect(error.kind).toBe('invalid-request');
    expect(error.param).toBeUndefined();
    expect(error.message).toMatch(/^Invalid request body:/);
  });
});
