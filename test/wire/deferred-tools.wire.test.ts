/**
 * Claude Code's deferred tools through `serve`: the model calls `ToolSearch`, Claude Code answers with a
 * `tool_reference`, and the next request's tools carry the loaded tool. The run that called ToolSearch is
 * parked with the old tool set, and the SDK froze that set (the definitions sent to Cursor in
 * `AgentRunRequest.mcpTools`, and the `customTools` record `execute` is looked up in) at `send`. So the
 * bridge retires the parked run and continues on the same agent with a slim follow-up that carries the
 * cut turn and the new tool set — only because the retired run left no checkpoint: the agent then holds
 * exactly what it held before that run. When the backend checkpointed part of the cut turn, a slim prompt
 * would repeat it, so the transcript is replayed to a new agent. Either way the agent sees each user turn
 * once (a slim prompt only when the transcript lines up exactly).
 */

import Anthropic from '@anthropic-ai/sdk';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { FakeToolResult, Scenario } from '../fakes/cursor-backend/run-context.js';
import { closeWireBackend, startWireBridge, type WireBridge } from '../helpers/wire-bridge.js';

let wire: WireBridge | undefined;
afterEach(async () => {
  await wire?.close();
  wire = undefined;
  held = [];
});
afterAll(closeWireBackend);

const shout = 'mcp__custom-user-tools__shout';
const schema = { type: 'object' as const, properties: { text: { type: 'string' } }, required: ['text'] };
const toolSearch = { name: 'ToolSearch', description: 'Load deferred tools', input_schema: schema };
const shoutTool = { name: shout, description: 'Shout a text on the host', input_schema: schema };

const resultText = (result: FakeToolResult | undefined): string =>
  result === undefined
    ? 'nothing'
    : result.status === 'success'
      ? result.content.map((item) => (item.type === 'text' ? item.text : '')).join('')
      : `${result.status}: ${result.status === 'error' ? result.error : ''}`;

/** Claude Code's answer to `ToolSearch`: a `tool_reference` (not in the SDK's types yet). */
const searchResult = (toolUseId: string): Anthropic.MessageParam => ({
  role: 'user',
  content: [
    {
      type: 'tool_result',
      tool_use_id: toolUseId,
      content: [{ type: 'tool_reference', tool_name: shout }],
    } as unknown as Anthropic.ToolResultBlockParam,
  ],
});

/** What each run's agent held (its checkpointed history), in run order. */
let held: string[] = [];

/** Times `text` occurs in `within`. */
const occurrences = (within: string, text: string): number => within.split(text).length - 1;

/**
 * A model that loads `shout` through ToolSearch when it is not offered, then calls it; with
 * `checkpointMidTurn`, the backend checkpoints the turn before it parks ToolSearch.
 */
const modelLoadingShout =
  (checkpointMidTurn = false): Scenario =>
  async (run) => {
    held.push(JSON.stringify(await run.history()));
    if (!run.prompt.includes('shout hi')) {
      run.text('hello');
      return;
    }
    if (!run.toolNames.includes(shout)) {
      if (checkpointMidTurn) await run.checkpoint();
      await run.toolCall({ toolName: 'ToolSearch', args: { text: `select:${shout}` } });
    }
    // Whether or not this run offered it, the model now believes `shout` is loaded and calls it.
    const result = await run.toolCall({ toolName: shout, args: { text: 'hi' } });
    run.text(`Host said: ${resultText(result)}`);
  };
const scenario = modelLoadingShout();

/** Sends one streaming Messages request to the bridge and reads the whole answer. */
const askerOf = (bridge: WireBridge) => {
  const client = new Anthropic({ baseURL: bridge.url, apiKey: 'sk-test', maxRetries: 0 });
  return (messages: Anthropic.MessageParam[], tools: Anthropic.Tool[]) =>
    client.messages.stream({ model: 'composer-2', max_tokens: 100, tools, messages }).finalMessage();
};

/**
 * Turn 1 says hello; turn 2 asks to shout, and the model calls ToolSearch (parked). Resolves the
 * transcript with ToolSearch's result, the request Claude Code sends next.
 */
const parkToolSearchAfterHello = async (ask: ReturnType<typeof askerOf>) => {
  const history: Anthropic.MessageParam[] = [{ role: 'user', content: 'say hello' }];
  const hello = await ask(history, [toolSearch]);
  history.push({ role: 'assistant', content: hello.content }, { role: 'user', content: 'shout hi' });
  const searching = await ask(history, [toolSearch]);
  const search = searching.content.find((block) => block.type === 'tool_use');
  expect(search).toMatchObject({ name: 'ToolSearch' });
  history.push({ role: 'assistant', content: searching.content }, searchResult(search!.id));
  return history;
};

describe('deferred tools loaded by ToolSearch while a run is parked', () => {
  it('continues on the same agent with the new tool set; the loaded tool runs once on the host', async () => {
    wire = await startWireBridge({ scenario });
    const ask = askerOf(wire);
    const history = await parkToolSearchAfterHello(ask);

    // The tool set grew while ToolSearch was parked: the loaded tool is offered and called at once.
    const calling = await ask(history, [toolSearch, shoutTool]);
    const call = calling.content.find((block) => block.type === 'tool_use');
    expect(calling.stop_reason).toBe('tool_use');
    expect(call).toMatchObject({ name: shout, input: { text: 'hi' } });

    const runs = wire.runs();
    expect(runs.map((run) => run.mcpTools.map((tool) => tool.toolName))).toEqual([
      ['ToolSearch'],
      ['ToolSearch'],
      ['ToolSearch', shout],
    ]);
    // Same agent, slim: the new run carries the cut turn (the request, the search and its result), not
    // the first turn, which the agent already holds.
    expect(runs[2]?.conversationId).toBe(runs[0]?.conversationId);
    expect(runs[2]?.text).toContain('shout hi');
    expect(runs[2]?.text).toContain(`Loaded tool: ${shout}`);
    expect(runs[2]?.text).not.toContain('say hello');
    // The retired run checkpointed nothing: the agent holds the first turn only, and hears the cut one once.
    expect(held[2]).toContain('say hello');
    expect(occurrences(`${held[2]}${runs[2]?.text}`, 'shout hi')).toBe(1);

    history.push(
      { role: 'assistant', content: calling.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: call!.id, content: 'HI!' }] },
    );
    const done = await ask(history, [toolSearch, shoutTool]);
    expect(done.content).toEqual([expect.objectContaining({ type: 'text', text: 'Host said: HI!' })]);
    // The result resumed the same run: no fourth run, and the shout ran once.
    expect(wire.runs()).toHaveLength(3);
  });

  it("replays to a fresh agent when the parked run was the conversation's first", async () => {
    wire = await startWireBridge({ scenario });
    const client = new Anthropic({ baseURL: wire.url, apiKey: 'sk-test', maxRetries: 0 });
    const opening: Anthropic.MessageParam = { role: 'user', content: 'shout hi' };
    const searching = await client.messages
      .stream({ model: 'composer-2', max_tokens: 100, tools: [toolSearch], messages: [opening] })
      .finalMessage();
    const search = searching.content.find((block) => block.type === 'tool_use');
    const calling = await client.messages
      .stream({
        model: 'composer-2',
        max_tokens: 100,
        tools: [toolSearch, shoutTool],
        messages: [opening, { role: 'assistant', content: searching.content }, searchResult(search!.id)],
      })
      .finalMessage();
    expect(calling.content.find((block) => block.type === 'tool_use')).toMatchObject({ name: shout });
    const runs = wire.runs();
    expect(runs).toHaveLength(2);
    // What the first agent held before its only run is unknown: the whole transcript goes to a new one.
    expect(runs[1]?.conversationId).not.toBe(runs[0]?.conversationId);
    expect(runs[1]?.mcpTools.map((tool) => tool.toolName)).toEqual(['ToolSearch', shout]);
    expect(runs[1]?.text).toContain('shout hi');
    expect(runs[1]?.text).toContain(`Loaded tool: ${shout}`);
  });

  it('replays to a new agent when the backend checkpointed part of the retired run: no user turn twice', async () => {
    wire = await startWireBridge({ scenario: modelLoadingShout(true) });
    const ask = askerOf(wire);
    const history = await parkToolSearchAfterHello(ask);

    const calling = await ask(history, [toolSearch, shoutTool]);
    expect(calling.content.find((block) => block.type === 'tool_use')).toMatchObject({ name: shout });
    const runs = wire.runs();
    expect(runs).toHaveLength(3);
    // The first agent held "shout hi" already: the whole transcript went to a new agent instead.
    expect(held[2]).toBe('[]');
    expect(runs[2]?.conversationId).not.toBe(runs[0]?.conversationId);
    expect(runs[2]?.text).toContain('say hello');
    expect(occurrences(`${held[2]}${runs[2]?.text}`, 'shout hi')).toBe(1);
    expect(runs[2]?.mcpTools.map((tool) => tool.toolName)).toEqual(['ToolSearch', shout]);
  });
});
