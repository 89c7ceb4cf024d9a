import { describe, expect, it } from 'vitest';
import { convertOpenaiChatRequestToTurn } from '../../../src/protocols/openai-chat/openai-chat-to-turn.js';
import type { TurnRequest } from '../../../src/turn/turn-request.js';
import { readJsonFixture } from '../../helpers/protocols/read-fixture.js';

const fixture = (name: string): Record<string, unknown> =>
  readJsonFixture('openai-chat', `${name}.request.json`) as Record<string, unknown>;

/** Headers OpenCode 1.18.33 was captured sending, minus the transport ones. */
const openCodeHeaders = {
  authorization: 'Bearer sk-test',
  'content-type': 'application/json',
  'user-agent': 'opencode/1.18.33 ai-sdk/provider-utils/4.0.23 runtime/bun/1.3.14',
  'x-session-affinity': 'ses_dd72396f8ffeoNcLlOihO0Zp8w',
  'x-session-id': 'ses_dd72396f8ffeoNcLlOihO0Zp8w',
};

const convert = (name: string, headers: Record<string, string> = {}): TurnRequest => {
  const result = convertOpenaiChatRequestToTurn(fixture(name), headers);
  if (!result.ok) throw new Error(`${name}: ${result.error.message}`);
  return result.value;
};

const openCodeToolNames = [
  'bash',
  'edit',
  'glob',
  'grep',
  'read',
  'skill',
  'task',
  'todowrite',
  'webfetch',
  'write',
];

describe('OpenCode 1.18.33 request fixtures', () => {
  it('title request: system string, two user messages, no tools, usage chunks requested', () => {
    const turn = convert('opencode-title', openCodeHeaders);
    expect(turn).toMatchObject({
      protocol: 'openai-chat',
      model: 'fake-model',
      maxOutputTokens: 8192,
      stream: true,
      includeStreamUsage: true,
      tools: [],
      toolChoice: { type: 'auto' },
      reasoning: { requested: false },
      identity: { nativeSessionId: { value: 'ses_dd72396f8ffeoNcLlOihO0Zp8w', source: 'x-session-id' } },
      warnings: [],
    });
    expect(turn.system).toHaveLength(1);
    expect(turn.system[0]?.text).toMatch(/^You are a title generator\. You output ONLY a thread title\./);
    expect(turn.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Generate a title for this conversation:\n' }] },
      { role: 'user', content: [{ type: 'text', text: 'say hi' }] },
    ]);
    expect(turn.headers).not.toHaveProperty('authorization');
    expect(turn.headers['user-agent']).toContain('opencode/1.18.33');
  });

  it('main turn: <env> system string and 10 tools whose schemas pass through untouched', () => {
    const body = fixture('opencode-main-turn');
    const turn = convert('opencode-main-turn', openCodeHeaders);
    expect(turn.system).toHaveLength(1);
    expect(turn.system[0]?.text).toContain('<env>\n  Working directory: /tmp/oc-work\n');
    expect(turn.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'say hi' }] }]);
    expect(turn.tools.map((tool) => tool.name)).toEqual(openCodeToolNames);
    expect(turn.tools.every((tool) => tool.kind === 'function')).toBe(true);
    const rawTools = body['tools'] as Array<{ function: { parameters: unknown; description: string } }>;
    expect(turn.tools.map((tool) => tool.inputSchema)).toEqual(
      rawTools.map((tool) => tool.function.parameters),
    );
    expect(turn.tools[0]?.description).toBe(rawTools[0]?.function.description);
    const read = turn.tools.find((tool) => tool.name === 'read');
    expect(read?.inputSchema).toMatchObject({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      properties: { offset: { type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991 } },
    });
    expect(turn.toolChoice).toEqual({ type: 'auto' });
    expect(turn.warnings).toEqual([]);
  });

  it('tool round trip: assistant content "" with tool_calls, then the tool message', () => {
    const turn = convert('opencode-tool-result', openCodeHeaders);
    expect(turn.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'run echo hello-from-tool' }] },
      {
        role: 'assistant',
        content: [
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
    expect(turn.tools).toHaveLength(10);
  });
});

describe('other request fixtures', () => {
  it('image_url with a data URL and an http URL', () => {
    const turn = convert('image-data-url');
    expect(turn.maxOutputTokens).toBe(300);
    expect(turn.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in these two images?' },
          {
            type: 'image',
            source: { kind: 'base64', mediaType: 'image/png', data: expect.stringMatching(/^iVBORw0KGgo/) },
          },
          { type: 'image', source: { kind: 'url', url: 'https://example.com/cat.jpg' } },
        ],
      },
    ]);
  });

  it('generic OpenAI SDK request: developer system, reasoning_effort, forced tool, custom tool dropped', () => {
    const turn = convert('openai-sdk-reasoning', { 'X-Stainless-Lang': 'js', Authorization: 'Bearer sk' });
    expect(turn).toMatchObject({
      model: 'gpt-5.4',
      system: [{ type: 'text', text: 'You are a weather assistant. Answer briefly.' }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is the weather in Paris?' }] }],
      reasoning: { requested: true, effort: 'high' },
      maxOutputTokens: 4096,
      stream: true,
      includeStreamUsage: true,
      toolChoice: { type: 'tool', name: 'get_weather' },
      identity: { promptCacheKey: 'pck-7f3a' },
      headers: { 'x-stainless-lang': 'js' },
    });
    expect(turn.identity.nativeSessionId).toBeUndefined();
    expect(turn.tools).toEqual([
      {
        kind: 'function',
        name: 'get_weather',
        description: 'Get the current weather for a city',
        inputSchema: {
          type: 'object',
          properties: { city: { type: 'string' } },
          required: ['city'],
          additionalProperties: false,
        },
      },
      { kind: 'function', name: 'get_time', inputSchema: { type: 'object', properties: {} } },
    ]);
    expect(turn.warnings).toEqual([
      { code: 'unsupported-tool', message: expect.stringContaining('"custom"') },
      { code: 'unsupported-field', message: expect.stringMatching(/^temperature:/) },
    ]);
  });

  it('mixed history: mid-conversation system/developer, reasoning, parallel calls, image tool result', () => {
    const turn = convert('history-mixed');
    expect(turn.system).toEqual([
      { type: 'text', text: 'You are a coding agent.' },
      { type: 'text', text: 'Be terse.' },
      { type: 'text', text: 'Prefer small diffs.' },
    ]);
    expect(turn.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'List the files and show me the logo.' }] },
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'I should list the directory and read the logo.' },
          { type: 'tool-call', toolCallId: 'call_1', toolName: 'bash', input: { command: 'ls' } },
          { type: 'tool-call', toolCallId: 'call_2', toolName: 'read', input: '{"filePath":"/w/logo.png"' },
        ],
      },
      {
        role: 'tool',
        toolCallId: 'call_1',
        toolName: 'bash',
        content: [{ type: 'text', text: 'README.md\nlogo.png\n' }],
        isError: false,
      },
      {
        role: 'tool',
        toolCallId: 'call_2',
        toolName: 'read',
        content: [
          { type: 'text', text: 'Image read:' },
          { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: expect.any(String) } },
        ],
        isError: false,
      },
      { role: 'system', content: [{ type: 'text', text: 'The user switched to plan mode.' }] },
      { role: 'system', content: [{ type: 'text', text: 'Do not edit files.' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'There is a README and a logo.' }] },
      { role: 'user', content: [{ type: 'text', text: 'thanks' }] },
    ]);
    expect(turn).toMatchObject({
      model: 'cursor,composer-2',
      reasoning: { requested: true, effort: 'low' },
      maxOutputTokens: 1000,
      stream: false,
      identity: { nativeSessionId: { value: 'conv_abc', source: 'conversation' } },
      tools: [{ kind: 'function', name: 'bash' }],
    });
    expect(turn.warnings.map((warning) => warning.code).sort()).toEqual([
      'unsupported-content',
      'unsupported-field',
      'unsupported-tool',
    ]);
  });
});
