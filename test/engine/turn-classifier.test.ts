import { describe, expect, it } from 'vitest';
import { anthropicAdapter } from '../../src/protocols/anthropic/anthropic-adapter.js';
import { openaiChatAdapter } from '../../src/protocols/openai-chat/openai-chat-adapter.js';
import { classifyTrailingTurn, type TrailingTurn } from '../../src/engine/turn-classifier.js';
import type { TurnMessage } from '../../src/turn/turn-request.js';
import {
  assistant,
  codexEnvironment,
  dateReminder,
  forkMessage,
  rejection,
  request,
  system,
  tool,
  user,
} from '../helpers/identity-fixtures.js';

const history: TurnMessage[] = [user(dateReminder('d'), 'fix the bug'), system('agent types')];
const calls = (...ids: string[]) => assistant('Running.', ids);
const classify = (messages: TurnMessage[]) => classifyTrailingTurn(request(messages, { native: 's' }));

describe('trailing-turn classification from exact protocol markers', () => {
  const cases: Array<{ name: string; messages: TurnMessage[]; expected: TrailingTurn }> = [
    {
      name: 'an opening',
      messages: history,
      expected: { kind: 'opening' },
    },
    {
      name: 'a worker fork opening (its context starts at the fork marker)',
      messages: [
        ...history,
        calls('toolu_agent'),
        tool('toolu_agent', 'Fork started'),
        user(forkMessage('test it')),
      ],
      expected: { kind: 'opening' },
    },
    {
      name: 'a new user message',
      messages: [...history, assistant('Done.'), user(dateReminder('d'), 'now add tests')],
      expected: { kind: 'user-message' },
    },
    {
      name: 'tool results only',
      messages: [...history, calls('t1', 't2'), tool('t1', 'a'), tool('t2', 'b')],
      expected: { kind: 'tool-results' },
    },
    {
      name: 'tool results with a system reminder only (not steering)',
      messages: [
        ...history,
        calls('t1'),
        tool('t1', 'a'),
        user('<system-reminder>todo list changed</system-reminder>'),
      ],
      expected: { kind: 'tool-results' },
    },
    {
      name: 'tool results with steering text',
      messages: [...history, calls('t1'), tool('t1', 'a'), user('also check the README')],
      expected: { kind: 'tool-results-with-steering' },
    },
    {
      name: 'a rejected tool result plus replacement text',
      messages: [...history, calls('t1'), tool('t1', rejection, true), user('use pnpm instead')],
      expected: { kind: 'rejected-tool-results-with-replacement' },
    },
    {
      name: 'a rejection carrying the replacement itself',
      messages: [
        ...history,
        calls('t1', 't2'),
        tool('t1', 'ok'),
        tool(
          't2',
          `${rejection.replace(/ STOP.*$/, '')} To tell you how to proceed, the user said:\nuse pnpm`,
          true,
        ),
      ],
      expected: { kind: 'rejected-tool-results-with-replacement' },
    },
    {
      name: 'a rejection without a replacement is plain tool results',
      messages: [...history, calls('t1'), tool('t1', rejection, true)],
      expected: { kind: 'tool-results' },
    },
    {
      name: 'an interrupt marker alone',
      messages: [...history, assistant('Partial ans'), user('[Request interrupted by user]')],
      expected: { kind: 'interrupt' },
    },
    {
      name: 'an interrupted tool use',
      messages: [
        ...history,
        calls('t1'),
        tool('t1', '[Request interrupted by user for tool use]', true),
        user('[Request interrupted by user for tool use]'),
      ],
      expected: { kind: 'interrupt' },
    },
    {
      name: 'an interrupt followed by a new message',
      messages: [
        ...history,
        assistant('Partial ans'),
        user('[Request interrupted by user]', 'do this instead'),
      ],
      expected: { kind: 'user-message' },
    },
    {
      name: 'interrupt-like text that is not exactly the marker is user text',
      messages: [...history, assistant('ok'), user('[Request interrupted by user] but please go on')],
      expected: { kind: 'user-message' },
    },
    {
      name: 'rejection-like text in a user message is not a rejection',
      messages: [...history, calls('t1'), tool('t1', 'ok'), user(rejection)],
      expected: { kind: 'tool-results-with-steering' },
    },
    {
      name: 'nothing new after the assistant turn',
      messages: [...history, assistant('Prefill')],
      expected: { kind: 'empty' },
    },
    {
      name: 'only a Codex environment block after the assistant turn',
      messages: [user('hi'), assistant('hello'), user(codexEnvironment('/w'))],
      expected: { kind: 'empty' },
    },
  ];

  it.each(cases)('$name', ({ messages, expected }) => {
    expect(classify(messages)).toMatchObject(expected);
  });

  it('classifies Claude Code wire requests at the Anthropic boundary', () => {
    const parsed = anthropicAdapter.parseRequest(
      {
        model: 'claude-opus-4-8',
        max_tokens: 1024,
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'edit the file' }] },
          {
            role: 'assistant',
            content: [{ type: 'tool_use', id: 'toolu_1', name: 'Edit', input: { file_path: '/a' } }],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_1', content: rejection, is_error: true },
              { type: 'text', text: 'rename it first', cache_control: { type: 'ephemeral' } },
            ],
          },
        ],
      },
      {},
    );
    if (!parsed.ok) throw new Error(parsed.error.message);
    expect(classifyTrailingTurn(parsed.value)).toEqual({ kind: 'rejected-tool-results-with-replacement' });
  });

  it('works over Chat Completions (a router converting Claude Code requests)', () => {
    const parsed = openaiChatAdapter.parseRequest(
      {
        model: 'gpt',
        messages: [
          { role: 'user', content: 'run it' },
          {
            role: 'assistant',
            content: '',
            tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'bash', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 'call_1', content: 'hello\n' },
        ],
      },
      {},
    );
    if (!parsed.ok) throw new Error(parsed.error.message);
    expect(classifyTrailingTurn(parsed.value)).toMatchObject({ kind: 'tool-results' });
  });

  it('is request-local: classifying does not change the request', () => {
    const original = request([...history, calls('t1'), tool('t1', rejection, true), user('x')], {
      native: 's',
    });
    const snapshot = structuredClone(original);
    classifyTrailingTurn(original);
    expect(original).toEqual(snapshot);
  });
});
