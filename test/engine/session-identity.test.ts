import { describe, expect, it } from 'vitest';
import { anthropicAdapter } from '../../src/protocols/anthropic/anthropic-adapter.js';
import { openaiChatAdapter } from '../../src/protocols/openai-chat/openai-chat-adapter.js';
import { openaiResponsesAdapter } from '../../src/protocols/openai-responses/openai-responses-adapter.js';
import type { ProtocolAdapter } from '../../src/protocols/protocol-adapter.js';
import {
  computeIdentity,
  type ConversationIdentity,
} from '../../src/engine/identity/conversation-identity.js';
import type { TurnMessage, TurnProtocol, TurnRequest } from '../../src/turn/turn-request.js';
import {
  assistant,
  claudeCodeForkMessage,
  codexEnvironment,
  dateReminder,
  forkMessage,
  request,
  system,
  tool,
  user,
  type IdentityHint,
} from '../helpers/identity-fixtures.js';

const identityOf = (
  messages: TurnMessage[],
  hint: IdentityHint = { native: 'session-1' },
  systemText = 'sys',
) => computeIdentity(request(messages, hint, systemText));

const parse = (
  adapter: ProtocolAdapter,
  body: unknown,
  headers: Record<string, string> = {},
): TurnRequest => {
  const result = adapter.parseRequest(body, headers);
  if (!result.ok) throw new Error(result.error.message);
  return result.value;
};

/** The namespace a request with exactly this native id (or none) gets. */
const namespaceFor = (protocol: TurnProtocol, native: string | undefined): string =>
  computeIdentity(request([user('hi')], { protocol, ...(native === undefined ? {} : { native }) })).namespace;

describe('identity per protocol', () => {
  const anthropicBody = (metadata?: unknown) => ({
    model: 'claude-opus-4-8',
    max_tokens: 1024,
    messages: [{ role: 'user', content: 'hi' }],
    ...(metadata === undefined ? {} : { metadata }),
  });
  const chatBody = (extra: Record<string, unknown> = {}) => ({
    model: 'gpt',
    messages: [{ role: 'user', content: 'hi' }],
    ...extra,
  });
  const responsesBody = (extra: Record<string, unknown> = {}) => ({ model: 'gpt', input: 'hi', ...extra });
  const claudeCodeUserId = JSON.stringify({
    device_id: 'd'.repeat(64),
    account_uuid: '',
    session_id: 'cc-1',
  });

  const cases: Array<{
    name: string;
    adapter: ProtocolAdapter;
    body: unknown;
    headers?: Record<string, string>;
    native: string | undefined;
  }> = [
    {
      name: 'Anthropic metadata.user_id JSON session_id (Claude Code today)',
      adapter: anthropicAdapter,
      body: anthropicBody({ user_id: claudeCodeUserId }),
      native: 'cc-1',
    },
    {
      name: 'Anthropic metadata.user_id JSON session_id wins over the header',
      adapter: anthropicAdapter,
      body: anthropicBody({ user_id: claudeCodeUserId }),
      headers: { 'x-claude-code-session-id': 'other' },
      native: 'cc-1',
    },
    {
      name: 'Anthropic metadata.user_id with a _session_ suffix (older Claude Code)',
      adapter: anthropicAdapter,
      body: anthropicBody({ user_id: 'user_abc_account_def_session_legacy-7' }),
      native: 'legacy-7',
    },
    {
      name: 'Anthropic metadata.user_id raw string',
      adapter: anthropicAdapter,
      body: anthropicBody({ user_id: 'opaque-user' }),
      native: 'opaque-user',
    },
    {
      name: 'Anthropic metadata.user_id JSON without session_id is the raw string, before the header',
      adapter: anthropicAdapter,
      body: anthropicBody({ user_id: JSON.stringify({ device_id: 'd' }) }),
      headers: { 'x-claude-code-session-id': 'cc-header' },
      native: JSON.stringify({ device_id: 'd' }),
    },
    {
      name: 'Anthropic x-claude-code-session-id when metadata has no user_id',
      adapter: anthropicAdapter,
      body: anthropicBody({}),
      headers: { 'x-claude-code-session-id': 'cc-header' },
      native: 'cc-header',
    },
    {
      name: 'Anthropic without any id is anonymous',
      adapter: anthropicAdapter,
      body: anthropicBody(),
      native: undefined,
    },
    ...[
      'x-opencode-session',
      'x-kilocode-taskid',
      'x-kilo-session',
      'x-grok-session-id',
      'x-grok-conv-id',
      'x-conversation-id',
      'session-id',
      'x-session-id',
      'x-session-affinity',
    ].map((header) => ({
      name: `Chat Completions ${header} header`,
      adapter: openaiChatAdapter,
      body: chatBody({ prompt_cache_key: 'cache-key' }),
      headers: { [header]: 'chat-session' },
      native: 'chat-session',
    })),
    {
      name: 'Chat Completions conversation_id',
      adapter: openaiChatAdapter,
      body: chatBody({ conversation_id: 'conv-1', prompt_cache_key: 'cache-key' }),
      native: 'conv-1',
    },
    {
      name: 'Chat Completions prompt_cache_key last',
      adapter: openaiChatAdapter,
      body: chatBody({ prompt_cache_key: 'cache-key' }),
      native: 'cache-key',
    },
    {
      name: 'Chat Completions without any id is anonymous',
      adapter: openaiChatAdapter,
      body: chatBody(),
      native: undefined,
    },
    {
      name: 'Responses session-id header (Codex) wins over prompt_cache_key',
      adapter: openaiResponsesAdapter,
      body: responsesBody({ prompt_cache_key: 'cache-key' }),
      headers: { 'session-id': 'codex-1' },
      native: 'codex-1',
    },
    {
      name: 'Responses prompt_cache_key (OpenCode over Responses)',
      adapter: openaiResponsesAdapter,
      body: responsesBody({ prompt_cache_key: 'ses_1' }),
      native: 'ses_1',
    },
  ];

  it.each(cases)('$name', ({ adapter, body, headers, native }) => {
    const parsed = parse(adapter, body, headers);
    const identity = computeIdentity(parsed);
    expect(identity.namespace).toBe(namespaceFor(adapter.protocol, native));
    expect(identity.hasNativeId).toBe(native !== undefined);
  });

  it('separates protocols and anonymous requests from native ids', () => {
    const namespaces = new Set([
      namespaceFor('anthropic', 'x'),
      namespaceFor('openai-chat', 'x'),
      namespaceFor('openai-responses', 'x'),
      namespaceFor('anthropic', undefined),
      namespaceFor('anthropic', 'y'),
    ]);
    expect(namespaces.size).toBe(5);
  });
});

describe('a native id is combined with the first substantive user text', () => {
  const same: Array<{ name: string; a: TurnMessage[]; b: TurnMessage[] }> = [
    {
      name: 'Claude Code reminders differ, the prompt is the same',
      a: [user(dateReminder('2026-11-29'), 'say hi')],
      b: [user(dateReminder('2026-11-30'), 'say hi')],
    },
    {
      name: 'Codex environment blocks differ, the prompt is the same',
      a: [user(codexEnvironment('/a')), user('fix the bug')],
      b: [user(codexEnvironment('/b')), user('fix the bug')],
    },
    {
      name: 'a mid-conversation system message is not user text',
      a: [user('say hi'), system('Available agent types: …')],
      b: [user('say hi'), system('# Environment\n - Primary working directory: /x')],
    },
    {
      name: 'an interrupt marker is not user text',
      a: [user('[Request interrupted by user]'), user('say hi')],
      b: [user('say hi')],
    },
  ];
  it.each(same)('same opening key: $name', ({ a, b }) => {
    expect(identityOf(a).openingKey).toBe(identityOf(b).openingKey);
  });

  const different: Array<{ name: string; a: TurnMessage[]; b: TurnMessage[] }> = [
    {
      name: 'OpenCode title request vs the main turn',
      a: [user('Generate a title for this conversation:\n'), user('say hi')],
      b: [user('say hi')],
    },
    {
      name: 'a parallel Claude Code Task (subagent) vs the main conversation',
      a: [user(dateReminder('2026-11-29'), 'Search the repo for TODOs and report them')],
      b: [user(dateReminder('2026-11-29'), 'say hi')],
    },
  ];
  it.each(different)('own opening key: $name', ({ a, b }) => {
    expect(identityOf(a).openingKey).not.toBe(identityOf(b).openingKey);
  });

  it('ignores system text', () => {
    const messages = [user('say hi')];
    expect(identityOf(messages, { native: 's' }, 'You are a title generator.')).toEqual(
      identityOf(messages, { native: 's' }, 'You are Claude Code.'),
    );
  });

  it('keeps the same opening key on later turns', () => {
    const opening = identityOf([user(dateReminder('d'), 'say hi')]);
    const later = identityOf([
      user(dateReminder('d'), 'say hi'),
      system('agents'),
      assistant('Running it.', ['toolu_1']),
      tool('toolu_1', 'ok'),
    ]);
    expect(later.isOpening).toBe(false);
    expect(later.openingKey).toBe(opening.openingKey);
    expect(later.openingDigest).toBe(opening.openingDigest);
  });

  it('only the first text keys the opening; the digest covers every opening text', () => {
    const a = identityOf([user('say hi'), user('and more')]);
    const b = identityOf([user('say hi'), user('something else')]);
    expect(a.openingKey).toBe(b.openingKey);
    expect(a.openingDigest).not.toBe(b.openingDigest);
  });
});

describe('worker forks', () => {
  const parent = (middle: TurnMessage[] = []): TurnMessage[] => [
    user(dateReminder('d'), 'build the feature'),
    system('agent types'),
    assistant('Looking.', ['toolu_p1']),
    tool('toolu_p1', 'files'),
    ...middle,
    assistant('Forking workers.', ['toolu_agent']),
  ];
  const fork = (directive: string, middle: TurnMessage[] = []): TurnMessage[] => [
    ...parent(middle),
    tool('toolu_agent', 'Fork started — processing in background'),
    user(forkMessage(directive)),
  ];

  it('a fork opening is an opening in its own namespace', () => {
    const root = identityOf(parent());
    const worker = identityOf(fork('write the tests'));
    expect(worker.isOpening).toBe(true);
    expect(worker.forkDepth).toBe(1);
    expect(worker.namespace).not.toBe(root.namespace);
    expect(worker.openingKey).not.toBe(root.openingKey);
    expect(worker.firstAssistantKey).toBeUndefined();
  });

  it('siblings with the same boilerplate and different instructions separate', () => {
    const a = identityOf(fork('write the tests'));
    const b = identityOf(fork('update the docs'));
    expect(a.namespace).toBe(b.namespace);
    expect(a.openingKey).not.toBe(b.openingKey);
  });

  it('inherited parent turns do not identify the worker', () => {
    const short = identityOf(fork('write the tests'));
    const long = identityOf(
      fork('write the tests', [assistant('More.', ['toolu_p2']), tool('toolu_p2', 'x')]),
    );
    expect(long.openingKey).toBe(short.openingKey);
    expect(long.openingDigest).toBe(short.openingDigest);
  });

  it("the worker's first assistant reply keys its later turns, not the parent's", () => {
    const later = (parentMiddle: TurnMessage[], reply: string) =>
      identityOf([
        ...fork('write the tests', parentMiddle),
        assistant('On it.', [reply]),
        tool(reply, 'done'),
      ]);
    const a = later([], 'toolu_w1');
    expect(a.isOpening).toBe(false);
    expect(a.firstAssistantKey).toBe(
      later([assistant('Other.', ['toolu_p9']), tool('toolu_p9', 'y')], 'toolu_w1').firstAssistantKey,
    );
    expect(a.firstAssistantKey).not.toBe(later([], 'toolu_w2').firstAssistantKey);
    expect(a.firstAssistantKey).not.toBe(identityOf(parent()).firstAssistantKey);
  });

  it('nested contexts use a separate namespace from parent contexts', () => {
    const worker = fork('write the tests');
    const nested = identityOf([
      ...worker,
      assistant('Sub-forking.', ['toolu_w1']),
      tool('toolu_w1', 'started'),
      user(forkMessage('lint')),
    ]);
    const direct = identityOf(fork('lint'));
    expect(nested.forkDepth).toBe(2);
    expect(nested.isOpening).toBe(true);
    expect(nested.namespace).not.toBe(identityOf(worker).namespace);
    expect(nested.namespace).not.toBe(direct.namespace);
    expect(nested.openingKey).not.toBe(direct.openingKey);
  });

  it("recognises Claude Code 2.1.332's fork message, also after a leading reminder in its text part", () => {
    for (const text of [
      claudeCodeForkMessage('lint'),
      `${dateReminder('d')}${claudeCodeForkMessage('lint')}`,
    ]) {
      const identity = identityOf([...parent(), tool('toolu_agent', 'Fork started'), user(text)]);
      expect(identity.forkDepth).toBe(1);
      expect(identity.isOpening).toBe(true);
    }
  });

  it('accepts the "You are a worker fork" marker', () => {
    const identity = identityOf([...parent(), user('You are a worker fork. Your task: profile the build.')]);
    expect(identity.forkDepth).toBe(1);
    expect(identity.isOpening).toBe(true);
  });

  it.each([
    {
      name: 'inside a system reminder',
      message: user(`<system-reminder>${forkMessage('x')}</system-reminder>`, 'go on'),
    },
    { name: 'inside a tool result', message: tool('toolu_p1', forkMessage('x')) },
    {
      name: 'inside a mid-conversation system message',
      message: system('You are a worker fork when spawned.'),
    },
    { name: 'inside assistant text', message: assistant(forkMessage('x')) },
    { name: 'pasted into the middle of user text', message: user(`What is this?\n\n${forkMessage('x')}`) },
    {
      name: 'quoted in a sentence',
      message: user('Our orchestrator tells workers "You are a worker fork". Should we?'),
    },
  ])('ignores a marker $name', ({ message }) => {
    const identity = identityOf([user('build the feature'), message]);
    expect(identity.forkDepth).toBe(0);
  });

  it('identity only: the request is left untouched', () => {
    const original = request(fork('write the tests'), { native: 'n' });
    const snapshot = structuredClone(original);
    computeIdentity(original);
    expect(original).toEqual(snapshot);
  });
});

describe('no native id — substantive user texts as prefix hashes', () => {
  const anonymous = (messages: TurnMessage[], systemText = 'sys'): ConversationIdentity =>
    identityOf(messages, {}, systemText);

  it('hashes each substantive user text as a prefix', () => {
    const first = anonymous([user(dateReminder('d'), 'A')]);
    const second = anonymous([
      user(dateReminder('d'), 'A'),
      assistant('a', ['t1']),
      tool('t1', 'r'),
      user('B'),
    ]);
    expect(first.hasNativeId).toBe(false);
    expect(first.userTextPrefixHashes).toHaveLength(1);
    expect(second.userTextPrefixHashes).toHaveLength(2);
    expect(second.userTextPrefixHashes[0]).toBe(first.userTextPrefixHashes[0]);
  });

  it('a sibling shares only the earlier prefix', () => {
    const b = anonymous([user('A'), assistant('a'), user('B')]);
    const c = anonymous([user('A'), assistant('a'), user('C')]);
    expect(c.userTextPrefixHashes[0]).toBe(b.userTextPrefixHashes[0]);
    expect(c.userTextPrefixHashes[1]).not.toBe(b.userTextPrefixHashes[1]);
  });

  it('a prefix hash covers the whole prefix, not just its last text', () => {
    const ab = anonymous([user('A'), assistant('a'), user('B')]);
    const xb = anonymous([user('X'), assistant('a'), user('B')]);
    expect(ab.userTextPrefixHashes[1]).not.toBe(xb.userTextPrefixHashes[1]);
  });

  it('system text is never part of the id', () => {
    const messages = [user('A'), assistant('a'), user('B')];
    expect(anonymous(messages, 'one system prompt')).toEqual(anonymous(messages, 'another system prompt'));
  });

  it('large user texts (memoised across requests) still hash by content', () => {
    const big = (fill: string) => `${fill.repeat(40_000)} <b>tail</b>`;
    const conversation = (text: string) => [user('A'), assistant('a'), user(big(text))];
    const first = anonymous(conversation('x'));
    const again = anonymous(structuredClone(conversation('x')));
    const other = anonymous(conversation('y'));
    expect(again.userTextPrefixHashes).toEqual(first.userTextPrefixHashes);
    expect(other.userTextPrefixHashes[1]).not.toBe(first.userTextPrefixHashes[1]);
    expect(
      anonymous([...conversation('x'), assistant('b'), user('C')]).userTextPrefixHashes.slice(0, 2),
    ).toEqual(first.userTextPrefixHashes);
  });

  it('large user texts are exact: a same-length edit at any character changes the prefix hash', () => {
    const big = (at?: number) => {
      const text = 'log line ok\n'.repeat(3_500);
      return at === undefined ? text : `${text.slice(0, at)}#${text.slice(at + 1)}`;
    };
    const hashesOf = (text: string) =>
      anonymous([user('A'), assistant('a'), user(text)]).userTextPrefixHashes;
    const base = hashesOf(big());
    expect(hashesOf(structuredClone(big()))).toEqual(base);
    for (const at of [1, 600, 20_003, 41_998]) {
      const edited = hashesOf(big(at));
      expect(edited[0]).toBe(base[0]);
      expect(edited[1]).not.toBe(base[1]);
    }
  });

  it('is empty when the client sent a native id', () => {
    expect(identityOf([user('A')], { native: 'n' }).userTextPrefixHashes).toEqual([]);
    expect(
      identityOf([user('A')], { promptCacheKey: 'k', protocol: 'openai-chat' }).userTextPrefixHashes,
    ).toEqual([]);
  });
});

describe('first assistant key', () => {
  it('uses tool-call ids, else text', () => {
    const calls = identityOf([user('A'), assistant('same text', ['t1']), tool('t1', 'r')]);
    const otherCalls = identityOf([user('A'), assistant('same text', ['t2']), tool('t2', 'r')]);
    const text = identityOf([user('A'), assistant('hello'), user('B')]);
    const otherText = identityOf([user('A'), assistant('hello there'), user('B')]);
    expect(calls.firstAssistantKey).not.toBe(otherCalls.firstAssistantKey);
    expect(text.firstAssistantKey).not.toBe(otherText.firstAssistantKey);
    expect(identityOf([user('A'), assistant('hello'), user('C')]).firstAssistantKey).toBe(
      text.firstAssistantKey,
    );
  });

  it('falls back to the reasoning of a thinking-only first turn', () => {
    const thinking = (signature: string): TurnMessage => ({
      role: 'assistant',
      content: [{ type: 'reasoning', text: '', signature }],
    });
    const a = identityOf([user('A'), thinking('sig-1'), user('B')]);
    const b = identityOf([user('A'), thinking('sig-2'), user('B')]);
    expect(a.firstAssistantKey).not.toBe(b.firstAssistantKey);
  });
});
