/**
 * `Engine.conversations()` as the console and `GET /debug/conversations` read it: per conversation the
 * protocol, client, Cursor model and route of its latest turn, the turns it ran, the tool calls its run is
 * parked on (tool name and since when), and its scratch-path counts — names and figures only, never any
 * text of the conversation.
 */

import { describe, expect, it } from 'vitest';
import { ScratchPathGuards } from '../../src/workspace/scratch-path-guards.js';
import type { ConversationSummary } from '../../src/engine/engine.js';
import {
  assistant,
  collect,
  createTestEngine,
  never,
  request,
  silentLogger,
  textOf,
  toolResult,
  user,
  withId,
} from '../helpers/engine-helpers.js';

const claudeCode = { 'user-agent': 'claude-cli/2.1.197 (external, sdk-cli)' };
const parkedAt = Date.UTC(2026, 4, 6, 7, 8, 9, 100);

const only = (engine: { conversations(): { conversations: ConversationSummary[] } }): ConversationSummary => {
  const { conversations } = engine.conversations();
  expect(conversations).toHaveLength(1);
  const [conversation] = conversations;
  if (conversation === undefined) throw new Error('no conversation');
  return conversation;
};

describe('Engine.conversations(): what an operator sees of each live conversation', () => {
  it('lists nothing before the first turn', async () => {
    const { engine } = createTestEngine([{ type: 'end', status: 'finished' }]);
    expect(engine.conversations()).toMatchObject({ conversations: [] });
    await engine.close();
  });

  it('shows a run parked on a tool call by the tool’s name and park time, then idle after the result', async () => {
    const { engine } = createTestEngine(
      [
        { type: 'text-delta', text: 'Checking.' },
        { type: 'tool-call', toolCallId: 'call-1', toolName: 'Bash', input: { command: 'ls' }, parkedAt },
        { type: 'tool-batch-end' },
        { type: 'await-tool-results' },
        { type: 'text-delta', text: 'Done.' },
        { type: 'end', status: 'finished' },
      ],
      { resolveModel: () => ({ model: 'gpt-5.4', route: 'think' }) },
    );
    const opening = request([user('list files')], { headers: claudeCode, model: 'claude-opus-4' });
    const first = await collect(await engine.handleTurn(opening, never));
    expect(first.at(-1)).toMatchObject({ type: 'turn-end', stopReason: 'tool-use' });

    const parked = only(engine);
    expect(parked).toMatchObject({
      state: 'parked',
      parkedCalls: 1,
      parked: [{ tool: 'Bash', since: new Date(parkedAt).toISOString() }],
      protocol: 'anthropic',
      client: 'Claude Code',
      model: 'gpt-5.4',
      route: 'think',
      turns: 1,
      scratchPathViolations: 0,
      scratchPathCorrections: 0,
    });
    expect(parked.session).toMatch(/^[0-9a-f]{32}$/);
    expect(new Date(parked.lastUsedAt).toISOString()).toBe(parked.lastUsedAt);

    const resumed = await engine.handleTurn(
      request(
        [
          user('list files'),
          assistant('Checking.', [{ id: 'call-1', name: 'Bash', input: { command: 'ls' } }]),
          toolResult('call-1', 'a.txt'),
        ],
        { headers: claudeCode, model: 'claude-opus-4' },
      ),
      never,
    );
    expect(textOf(await collect(resumed))).toBe('Done.');
    await resumed.account;
    expect(only(engine)).toMatchObject({
      session: parked.session,
      state: 'idle',
      parkedCalls: 0,
      parked: [],
      turns: 2,
      client: 'Claude Code',
      model: 'gpt-5.4',
      route: 'think',
      runs: 1,
    });
    await engine.close();
  });

  it('lists every call of a parked batch, in order', async () => {
    const { engine } = createTestEngine([
      { type: 'tool-call', toolCallId: 'a', toolName: 'Read', input: { file_path: '/p/a' }, parkedAt },
      {
        type: 'tool-call',
        toolCallId: 'b',
        toolName: 'Grep',
        input: { pattern: 'x' },
        parkedAt: parkedAt + 5,
      },
      { type: 'tool-batch-end' },
      { type: 'await-tool-results' },
      { type: 'end', status: 'finished' },
    ]);
    await collect(await engine.handleTurn(request([user('look')]), never));
    expect(only(engine)).toMatchObject({
      state: 'parked',
      parkedCalls: 2,
      parked: [
        { tool: 'Read', since: new Date(parkedAt).toISOString() },
        { tool: 'Grep', since: new Date(parkedAt + 5).toISOString() },
      ],
    });
    await engine.close();
  });

  it('takes client, model and route from the latest turn, and counts the turns', async () => {
    const models = ['composer-2', 'gpt-5.4'];
    let calls = 0;
    const { engine } = createTestEngine(
      [
        { type: 'text-delta', text: 'ok' },
        { type: 'end', status: 'finished' },
      ],
      {
        resolveModel: () => {
          const model = models[Math.min(calls, models.length - 1)] ?? 'composer-2';
          calls += 1;
          return { model, route: calls === 1 ? 'default' : 'explicit' };
        },
      },
    );
    await collect(await engine.handleTurn(request([user('one')], { ...withId('c-1'), headers: {} }), never));
    expect(only(engine)).toMatchObject({
      protocol: 'anthropic',
      client: 'unknown',
      model: 'composer-2',
      route: 'default',
      turns: 1,
    });
    await collect(
      await engine.handleTurn(
        request([user('one'), assistant('ok'), user('two')], {
          ...withId('c-1'),
          headers: { 'user-agent': 'opencode/1.18.33 ai-sdk/provider-utils/3.0.10' },
        }),
        never,
      ),
    );
    expect(only(engine)).toMatchObject({
      protocol: 'anthropic',
      client: 'OpenCode',
      model: 'gpt-5.4',
      route: 'explicit',
      turns: 2,
      state: 'idle',
    });
    await engine.close();
  });

  it('keeps each conversation’s own protocol and client', async () => {
    const { engine } = createTestEngine([
      { type: 'text-delta', text: 'ok' },
      { type: 'end', status: 'finished' },
    ]);
    await collect(
      await engine.handleTurn(request([user('one')], { ...withId('c-a'), headers: claudeCode }), never),
    );
    await collect(
      await engine.handleTurn(
        request([user('one')], {
          ...withId('c-b'),
          protocol: 'openai-responses',
          headers: { 'user-agent': 'codex_exec/0.171.0 (Ubuntu 24.4.0; x86_64)', originator: 'codex_exec' },
        }),
        never,
      ),
    );
    const listed = engine
      .conversations()
      .conversations.map(({ protocol, client, turns }) => ({ protocol, client, turns }));
    expect(listed).toHaveLength(2);
    expect(listed).toEqual(
      expect.arrayContaining([
        { protocol: 'anthropic', client: 'Claude Code', turns: 1 },
        { protocol: 'openai-responses', client: 'Codex', turns: 1 },
      ]),
    );
    await engine.close();
  });

  it('does not count a retry answered from the finished turn as a turn', async () => {
    const { engine, upstream } = createTestEngine([
      { type: 'text-delta', text: 'hi there' },
      { type: 'end', status: 'finished' },
    ]);
    const opening = request([user('say hi')], { ...withId('s-retry'), headers: claudeCode });
    await collect(await engine.handleTurn(opening, never));
    await collect(await engine.handleTurn(opening, never));
    expect(upstream.calls).toHaveLength(1);
    expect(await engine.metrics()).toMatchObject({ retriesReplayed: 1 });
    expect(only(engine).turns).toBe(1);
    await engine.close();
  });

  it("counts the conversation's scratch-path violations and corrections", async () => {
    const homeDir = '/home/bridge';
    const scratchRoot = `${homeDir}/.claude-code-router/cursor-sdk-workspaces`;
    const scratchCall = (id: string) => ({
      type: 'tool-call' as const,
      toolCallId: id,
      toolName: 'Bash',
      input: { command: `ls ${scratchRoot}/0123456789abcdef0123456789abcdef` },
    });
    const { engine } = createTestEngine(
      [
        // Corrected (answered to the model, never parked), then forwarded: only one correction is allowed.
        scratchCall('bad-1'),
        scratchCall('bad-2'),
        { type: 'tool-batch-end' },
        { type: 'await-tool-results' },
        { type: 'end', status: 'finished' },
      ],
      { guard: new ScratchPathGuards({ logger: silentLogger, scratchRoot, homeDir, maxCorrections: 1 }) },
    );
    await collect(await engine.handleTurn(request([user('look around')]), never));
    expect(only(engine)).toMatchObject({
      state: 'parked',
      parked: [{ tool: 'Bash' }],
      scratchPathViolations: 2,
      scratchPathCorrections: 1,
    });
    await engine.close();
  });

  it('carries no text of the conversation', async () => {
    const marker = {
      system: 'system-marker-3f9a1c',
      user: 'user-marker-b7e204',
      answer: 'answer-marker-5cd6e1',
      reasoning: 'reasoning-marker-90ab4e',
      input: 'input-marker-1d2e3f',
      result: 'result-marker-77aa01',
      followUp: 'follow-up-marker-c0ffee',
      final: 'final-marker-deface',
    };
    const { engine } = createTestEngine([
      [
        { type: 'reasoning-delta', text: marker.reasoning },
        { type: 'reasoning-end' },
        { type: 'text-delta', text: `Sure: ${marker.answer}` },
        {
          type: 'tool-call',
          toolCallId: 'call-1',
          toolName: 'Bash',
          input: { command: `echo ${marker.input}` },
        },
        { type: 'tool-batch-end' },
        { type: 'await-tool-results' },
        { type: 'text-delta', text: marker.final },
        { type: 'end', status: 'finished' },
      ],
    ]);
    const system = [{ type: 'text' as const, text: `You are helpful. ${marker.system}` }];
    const opening = [user(`Please ${marker.user}`)];
    const summaries: string[] = [];
    await collect(await engine.handleTurn(request(opening, { system, headers: claudeCode }), never));
    summaries.push(JSON.stringify(engine.conversations()));
    const resumed = await engine.handleTurn(
      request(
        [
          ...opening,
          assistant(`Sure: ${marker.answer}`, [
            { id: 'call-1', name: 'Bash', input: { command: `echo ${marker.input}` } },
          ]),
          toolResult('call-1', marker.result),
        ],
        { system, headers: claudeCode },
      ),
      never,
    );
    expect(textOf(await collect(resumed))).toBe(marker.final);
    await resumed.account;
    summaries.push(JSON.stringify(engine.conversations()));
    for (const summary of summaries) {
      for (const text of Object.values(marker)) expect(summary).not.toContain(text);
    }
    // The summaries do describe the conversation (the check above is not vacuous).
    expect(summaries[0]).toContain('"tool":"Bash"');
    expect(summaries[1]).toContain('"turns":2');
    await engine.close();
  });
});
