import { describe, expect, it } from 'vitest';
import {
  createOpenaiResponsesJsonResponse,
  OpenaiResponsesStreamEncoder,
} from '../../../src/protocols/openai-responses/turn-to-openai-responses-events.js';
import { serializeSseFrames } from '../../../src/protocols/sse-serialize.js';
import { createTurnError } from '../../../src/turn/turn-error.js';
import type { TurnEvent } from '../../../src/turn/turn-event.js';
import type { TurnRequest, TurnTool, TurnWarning } from '../../../src/turn/turn-request.js';
import { createTestTurnRequest } from '../../helpers/protocols/create-test-turn-request.js';
import { readFixture } from '../../helpers/protocols/read-fixture.js';
import { textEvents, toolCallEvents } from '../../helpers/protocols/turn-event-builders.js';
import {
  encodeTurnEvents,
  frameData,
  sseFixtureScripts,
  testMeta,
  testUsage,
} from '../../helpers/protocols/encode-turn-events.js';

const types = (events: readonly TurnEvent[]) =>
  frameData(encodeTurnEvents(events)).map((data) => data['type']);

const lastData = (events: readonly TurnEvent[]) => frameData(encodeTurnEvents(events)).at(-1) ?? {};

const turnEnd = (stopReason: 'end' | 'tool-use' | 'max-tokens' | 'refusal' = 'end'): TurnEvent => ({
  type: 'turn-end',
  stopReason,
  usage: testUsage,
});

describe('OpenaiResponsesStreamEncoder — byte-level fixtures', () => {
  it.each(Object.keys(sseFixtureScripts))('encodes %s exactly as the .sse fixture', (name) => {
    const expected = readFixture('openai-responses', `${name}.sse`);
    expect(serializeSseFrames(encodeTurnEvents(sseFixtureScripts[name] ?? []))).toBe(expected);
  });
});

describe('OpenaiResponsesStreamEncoder', () => {
  it('opens with response.created and response.in_progress, once', () => {
    const encoder = new OpenaiResponsesStreamEncoder(
      createTestTurnRequest({ maxOutputTokens: 512 }),
      testMeta,
    );
    const frames = encoder.start();
    expect(frames.map((frame) => ('comment' in frame ? frame.comment : frame.event))).toEqual([
      'response.created',
      'response.in_progress',
    ]);
    const [created] = frameData(frames);
    expect(created).toMatchObject({
      type: 'response.created',
      sequence_number: 0,
      response: {
        id: 'resp_test1',
        object: 'response',
        created_at: 1_790_000_000,
        status: 'in_progress',
        model: 'gpt-5.5',
        output: [],
        max_output_tokens: 512,
        usage: null,
      },
    });
    expect(encoder.start()).toEqual([]);
    expect(encoder.ended).toBe(false);
  });

  it('names every event after its type and numbers them 0, 1, 2, … without gaps', () => {
    const frames = encodeTurnEvents(sseFixtureScripts['reasoning-tool-call'] ?? []);
    const data = frameData(frames);
    expect(frames.map((frame) => ('event' in frame ? frame.event : undefined))).toEqual(
      data.map((d) => d['type']),
    );
    expect(data.map((d) => d['sequence_number'])).toEqual(data.map((_, index) => index));
  });

  it('emits the full text item lifecycle', () => {
    expect(types([...textEvents('t1', 'a', 'b'), turnEnd()])).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
  });

  it.each([
    ['end', 'response.completed', 'completed', null],
    ['tool-use', 'response.completed', 'completed', null],
    ['max-tokens', 'response.incomplete', 'incomplete', { reason: 'max_output_tokens' }],
    ['refusal', 'response.incomplete', 'incomplete', { reason: 'content_filter' }],
  ] as const)('ends a %s turn with %s', (stopReason, type, status, incompleteDetails) => {
    const data = lastData([...textEvents('t1', 'x'), turnEnd(stopReason)]);
    expect(data).toMatchObject({
      type,
      response: {
        status,
        incomplete_details: incompleteDetails,
        usage: {
          input_tokens: 125,
          input_tokens_details: { cached_tokens: 20 },
          output_tokens: 40,
          output_tokens_details: { reasoning_tokens: 12 },
          total_tokens: 165,
        },
      },
    });
  });

  it('reports zero reasoning tokens when the usage does not know them', () => {
    const usage = { inputTokens: 3, outputTokens: 4, cacheReadTokens: 0, cacheWriteTokens: 2 };
    const data = lastData([{ type: 'turn-end', stopReason: 'end', usage }]);
    expect(data).toMatchObject({
      response: {
        usage: {
          input_tokens: 5,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: 4,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: 9,
        },
      },
    });
  });

  it('lists every finished item in order in the terminal response', () => {
    const data = lastData(sseFixtureScripts['reasoning-tool-call'] ?? []);
    expect(data['response']).toMatchObject({
      output: [
        { id: 'rs_test1_0', type: 'reasoning', encrypted_content: 'sig-abc' },
        { id: 'msg_test1_1', type: 'message', status: 'completed' },
        { id: 'fc_test1_2', type: 'function_call', status: 'completed', call_id: 'call_fake_0001' },
      ],
    });
  });

  describe('robustness', () => {
    it('starts a message for a text delta that was never started', () => {
      const data = frameData(encodeTurnEvents([{ type: 'text-delta', id: 't9', delta: 'Hi' }, turnEnd()]));
      expect(data.slice(2, 5)).toMatchObject([
        { type: 'response.output_item.added', output_index: 0, item: { type: 'message' } },
        { type: 'response.content_part.added', content_index: 0 },
        { type: 'response.output_text.delta', delta: 'Hi' },
      ]);
      expect(data.at(-2)).toMatchObject({
        type: 'response.output_item.done',
        item: { content: [{ type: 'output_text', text: 'Hi' }] },
      });
    });

    it('starts a reasoning item for an unstarted reasoning delta and closes it before text', () => {
      expect(
        types([
          { type: 'reasoning-delta', id: 'r1', delta: 'hmm' },
          { type: 'text-start', id: 't1' },
          { type: 'text-end', id: 't1' },
          turnEnd(),
        ]).slice(2),
      ).toEqual([
        'response.output_item.added',
        'response.reasoning_summary_part.added',
        'response.reasoning_summary_text.delta',
        'response.reasoning_summary_text.done',
        'response.reasoning_summary_part.done',
        'response.output_item.done',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ]);
    });

    it('closes open text when a tool call starts, and closes everything at turn-end', () => {
      const data = frameData(
        encodeTurnEvents([
          { type: 'text-start', id: 't1' },
          { type: 'text-delta', id: 't1', delta: 'Running' },
          { type: 'tool-input-start', id: 'c1', toolName: 'bash', kind: 'function' },
          { type: 'tool-input-delta', id: 'c1', delta: '{"command":"ls"}' },
          turnEnd('tool-use'),
        ]),
      );
      expect(data.slice(5).map((d) => d['type'])).toEqual([
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.output_item.added',
        'response.function_call_arguments.delta',
        'response.function_call_arguments.done',
        'response.output_item.done',
        'response.completed',
      ]);
      expect(data.at(-2)).toMatchObject({ item: { arguments: '{"command":"ls"}', status: 'completed' } });
    });

    it('announces a tool-call that arrives without tool-input events as a whole item', () => {
      const data = frameData(
        encodeTurnEvents([
          {
            type: 'tool-call',
            toolCallId: 'c1',
            toolName: 'bash',
            kind: 'function',
            input: '{"command":"pwd"}',
          },
          turnEnd('tool-use'),
        ]),
      );
      expect(data.slice(2)).toMatchObject([
        {
          type: 'response.output_item.added',
          item: { type: 'function_call', call_id: 'c1', name: 'bash', arguments: '' },
        },
        { type: 'response.function_call_arguments.done', arguments: '{"command":"pwd"}' },
        { type: 'response.output_item.done', item: { arguments: '{"command":"pwd"}' } },
        { type: 'response.completed' },
      ]);
    });

    it('holds argument deltas of an unannounced call until its tool-call names it', () => {
      const data = frameData(
        encodeTurnEvents([
          { type: 'tool-input-delta', id: 'c1', delta: '{"a":' },
          { type: 'tool-input-delta', id: 'c1', delta: '1}' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'calc', kind: 'function', input: '{"a":1}' },
          turnEnd('tool-use'),
        ]),
      );
      expect(data.slice(2).map((d) => d['type'])).toEqual([
        'response.output_item.added',
        'response.function_call_arguments.done',
        'response.output_item.done',
        'response.completed',
      ]);
      expect(data[2]).toMatchObject({ item: { name: 'calc', call_id: 'c1' } });
    });

    it('uses the complete tool-call input over the streamed fragments', () => {
      const data = frameData(
        encodeTurnEvents([
          ...toolCallEvents('c1', 'bash', '{"command":"ls"}', { deltas: ['{"command":"l'] }),
          turnEnd('tool-use'),
        ]),
      );
      expect(data.at(-3)).toMatchObject({
        type: 'response.function_call_arguments.done',
        arguments: '{"command":"ls"}',
      });
      expect(data.at(-2)).toMatchObject({ item: { arguments: '{"command":"ls"}' } });
    });

    it('never announces a finished call twice, even when its events are replayed', () => {
      const call = toolCallEvents('c1', 'bash', '{"command":"ls"}');
      const data = frameData(encodeTurnEvents([...call, ...call, turnEnd('tool-use')]));
      expect(data.filter((d) => d['type'] === 'response.output_item.added')).toHaveLength(1);
      expect(data.filter((d) => d['type'] === 'response.output_item.done')).toHaveLength(1);
      expect(data.filter((d) => d['type'] === 'response.function_call_arguments.delta')).toHaveLength(2);
    });

    it('unwraps custom tool input and never streams it as function arguments', () => {
      const data = frameData(
        encodeTurnEvents([
          ...toolCallEvents('c1', 'apply_patch', '{"input":"*** Begin Patch\\n"}', {
            kind: 'custom',
            chunkSize: 4,
          }),
          turnEnd('tool-use'),
        ]),
      );
      expect(data.some((d) => d['type'] === 'response.function_call_arguments.delta')).toBe(false);
      expect(data.filter((d) => d['type'] === 'response.custom_tool_call_input.delta')).toEqual([
        expect.objectContaining({ delta: '*** Begin Patch\n', item_id: 'ctc_test1_0' }),
      ]);
      expect(data.at(-2)).toMatchObject({
        type: 'response.output_item.done',
        item: { type: 'custom_tool_call', input: '*** Begin Patch\n', call_id: 'c1' },
      });
    });
  });

  describe('errors and missing ends', () => {
    it('emits error then response.failed, leaving the open item incomplete', () => {
      const data = frameData(
        encodeTurnEvents([
          { type: 'text-delta', id: 't1', delta: 'Part' },
          { type: 'error', error: createTurnError('authentication', 'Cursor rejected the API key.') },
        ]),
      );
      expect(data.slice(-2)).toEqual([
        {
          type: 'error',
          sequence_number: 5,
          code: 'invalid_api_key',
          message: 'Cursor rejected the API key.',
          param: null,
          error: {
            type: 'authentication_error',
            code: 'invalid_api_key',
            message: 'Cursor rejected the API key.',
            param: null,
          },
        },
        expect.objectContaining({
          type: 'response.failed',
          sequence_number: 6,
          response: expect.objectContaining({
            status: 'failed',
            error: { code: 'invalid_api_key', message: 'Cursor rejected the API key.' },
            output: [expect.objectContaining({ id: 'msg_test1_0', status: 'incomplete' })],
          }),
        }),
      ]);
      expect(data.some((d) => d['type'] === 'response.output_item.done')).toBe(false);
    });

    it('treats end() without a terminal event as an api error, and is idempotent', () => {
      const encoder = new OpenaiResponsesStreamEncoder(createTestTurnRequest(), testMeta);
      encoder.start();
      encoder.push({ type: 'reasoning-start', id: 'r1' });
      const frames = frameData(encoder.end());
      expect(frames.map((d) => d['type'])).toEqual(['error', 'response.failed']);
      expect(frames[0]).toMatchObject({
        code: 'server_error',
        message: expect.stringMatching(/upstream run ended/),
      });
      expect(encoder.ended).toBe(true);
      expect(encoder.end()).toEqual([]);
      expect(encoder.push({ type: 'text-delta', id: 't1', delta: 'late' })).toEqual([]);
    });

    it('still opens the stream when end() comes before start()', () => {
      const encoder = new OpenaiResponsesStreamEncoder(createTestTurnRequest(), testMeta);
      expect(frameData(encoder.end()).map((d) => d['type'])).toEqual([
        'response.created',
        'response.in_progress',
        'error',
        'response.failed',
      ]);
    });

    it('emits nothing after turn-end', () => {
      const encoder = new OpenaiResponsesStreamEncoder(createTestTurnRequest(), testMeta);
      encoder.start();
      encoder.push(turnEnd());
      expect(encoder.ended).toBe(true);
      expect(encoder.push({ type: 'error', error: createTurnError('api', 'late') })).toEqual([]);
      expect(encoder.end()).toEqual([]);
    });
  });

  describe('keepalive', () => {
    it('repeats response.in_progress with the current snapshot and the next sequence number', () => {
      const encoder = new OpenaiResponsesStreamEncoder(createTestTurnRequest(), testMeta);
      encoder.start();
      encoder.push({ type: 'text-delta', id: 't1', delta: 'so far' });
      const keepalive = encoder.keepalive();
      expect('event' in keepalive && keepalive.event).toBe('response.in_progress');
      expect(frameData([keepalive])[0]).toMatchObject({
        type: 'response.in_progress',
        sequence_number: 5,
        response: {
          status: 'in_progress',
          output: [
            { type: 'message', status: 'in_progress', content: [{ type: 'output_text', text: 'so far' }] },
          ],
        },
      });
      expect(frameData(encoder.push({ type: 'text-delta', id: 't1', delta: '!' }))[0]).toMatchObject({
        sequence_number: 6,
      });
    });

    it('falls back to a comment once the stream has ended', () => {
      const encoder = new OpenaiResponsesStreamEncoder(createTestTurnRequest(), testMeta);
      encoder.start();
      encoder.push(turnEnd());
      expect(encoder.keepalive()).toEqual({ comment: 'keepalive' });
    });
  });

  it('echoes the request settings in the response object', () => {
    const request = createTestTurnRequest({
      reasoning: { requested: true, effort: 'high' },
      toolChoice: { type: 'tool', name: 'apply_patch' },
      tools: [{ kind: 'custom', name: 'apply_patch', inputSchema: {} }],
    });
    const encoder = new OpenaiResponsesStreamEncoder(request, testMeta);
    expect(frameData(encoder.start())[0]).toMatchObject({
      response: { reasoning: { effort: 'high' }, tool_choice: { type: 'custom', name: 'apply_patch' } },
    });
  });
});

describe('OpenaiResponsesStreamEncoder — calls the way Codex addresses its tools', () => {
  const inputSchema = { type: 'object', properties: {} };
  const codexTools: TurnTool[] = [
    { kind: 'function', name: 'exec_command', inputSchema },
    {
      kind: 'function',
      name: 'collaboration__list_agents',
      inputSchema,
      clientAddress: { name: 'list_agents', namespace: 'collaboration' },
    },
    {
      kind: 'custom',
      name: 'functions__exec',
      inputSchema,
      clientAddress: { name: 'exec', namespace: 'functions' },
    },
    {
      kind: 'function',
      name: 'tool_search',
      inputSchema,
      clientAddress: { name: 'tool_search', call: 'tool_search_call' },
    },
  ];
  const codexRequest = createTestTurnRequest({ tools: codexTools });
  const itemsOf = (data: Record<string, unknown>[], type: string) =>
    data.filter((d) => d['type'] === type).map((d) => d['item']);

  it('sends a namespace function tool call with its namespace and bare name', () => {
    const data = frameData(
      encodeTurnEvents(
        [...toolCallEvents('call_1', 'collaboration__list_agents', '{}'), turnEnd('tool-use')],
        codexRequest,
      ),
    );
    const expected = {
      type: 'function_call',
      call_id: 'call_1',
      namespace: 'collaboration',
      name: 'list_agents',
    };
    expect(itemsOf(data, 'response.output_item.added')).toEqual([expect.objectContaining(expected)]);
    expect(itemsOf(data, 'response.output_item.done')).toEqual([
      expect.objectContaining({ ...expected, arguments: '{}', status: 'completed' }),
    ]);
  });

  it('sends a namespace custom tool call with its namespace, bare name and raw input', () => {
    const data = frameData(
      encodeTurnEvents(
        [
          ...toolCallEvents('call_2', 'functions__exec', '{"input":"text(1)"}', { kind: 'custom' }),
          turnEnd('tool-use'),
        ],
        codexRequest,
      ),
    );
    expect(itemsOf(data, 'response.output_item.done')).toEqual([
      {
        id: 'ctc_test1_0',
        type: 'custom_tool_call',
        call_id: 'call_2',
        namespace: 'functions',
        name: 'exec',
        input: 'text(1)',
      },
    ]);
  });

  it('leaves a tool outside any namespace as it was', () => {
    const data = frameData(
      encodeTurnEvents(
        [...toolCallEvents('call_3', 'exec_command', '{}'), turnEnd('tool-use')],
        codexRequest,
      ),
    );
    const [item] = itemsOf(data, 'response.output_item.done');
    expect(item).toMatchObject({ type: 'function_call', name: 'exec_command' });
    expect(item).not.toHaveProperty('namespace');
  });

  it('sends a tool_search call as a tool_search_call item with its arguments as an object', () => {
    const data = frameData(
      encodeTurnEvents(
        [
          ...toolCallEvents('call_ts', 'tool_search', '{"query":"spawn agent","limit":3}', { chunkSize: 5 }),
          turnEnd('tool-use'),
        ],
        codexRequest,
      ),
    );
    expect(data.map((d) => d['type'])).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(itemsOf(data, 'response.output_item.done')).toEqual([
      {
        id: 'tsc_test1_0',
        type: 'tool_search_call',
        status: 'completed',
        execution: 'client',
        call_id: 'call_ts',
        arguments: { query: 'spawn agent', limit: 3 },
      },
    ]);
  });
});

describe('OpenaiResponsesStreamEncoder — the note about tools the bridge could not offer', () => {
  const warnings: TurnWarning[] = [
    { code: 'unsupported-tool', message: 'tools.9: web_search tool (…) cannot be offered; dropped.' },
    { code: 'unsupported-field', message: 'parallel_tool_calls: false is not enforced' },
  ];
  const messagesOf = (request: TurnRequest) =>
    frameData(encodeTurnEvents([...textEvents('t1', 'Hi.'), turnEnd()], request))
      .filter((d) => d['type'] === 'response.output_item.done')
      .map((d) => (d['item'] as { content: Array<{ text: string }> }).content[0]?.text);

  it("opens a conversation's first response with a message naming each dropped tool", () => {
    expect(messagesOf(createTestTurnRequest({ warnings }))).toEqual([
      '[cursor-bridge] Some tools your client offered are not available through this bridge (the model was told):\n' +
        '- tools.9: web_search tool (…) cannot be offered; dropped.',
      'Hi.',
    ]);
  });

  it('says nothing once the conversation has an answer, or when no tool was dropped', () => {
    const answered = createTestTurnRequest({
      warnings,
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'say hi' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'hi' }] },
        { role: 'user', content: [{ type: 'text', text: 'again' }] },
      ],
    });
    expect(messagesOf(answered)).toEqual(['Hi.']);
    expect(messagesOf(createTestTurnRequest({ warnings: warnings.slice(1) }))).toEqual(['Hi.']);
  });
});

describe('createOpenaiResponsesJsonResponse', () => {
  it('builds the completed response object from the full event list', () => {
    const response = createOpenaiResponsesJsonResponse(createTestTurnRequest({ stream: false }), testMeta, [
      ...textEvents('t1', 'Hello'),
      ...toolCallEvents('c1', 'bash', '{"command":"ls"}'),
      turnEnd('tool-use'),
    ]);
    expect(response).toMatchObject({
      id: 'resp_test1',
      object: 'response',
      created_at: 1_790_000_000,
      status: 'completed',
      model: 'gpt-5.5',
      error: null,
      output: [
        {
          id: 'msg_test1_0',
          type: 'message',
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'Hello', annotations: [] }],
        },
        {
          id: 'fc_test1_1',
          type: 'function_call',
          status: 'completed',
          call_id: 'c1',
          name: 'bash',
          arguments: '{"command":"ls"}',
        },
      ],
      usage: { input_tokens: 125, output_tokens: 40, total_tokens: 165 },
    });
  });

  it('marks a list without a terminal event as failed', () => {
    const response = createOpenaiResponsesJsonResponse(
      createTestTurnRequest(),
      testMeta,
      textEvents('t1', 'x'),
    );
    expect(response).toMatchObject({ status: 'failed', error: { code: 'server_error' } });
  });
});
