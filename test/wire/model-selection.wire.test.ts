import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeRunRequest, FakeToolResult, Scenario } from '../fakes/cursor-backend/run-context.js';
import {
  closeWireBackend,
  startWireBridge,
  type WireBridge,
  anthropicBashTool,
} from '../helpers/wire-bridge.js';

/**
 * The SDK model selection a request's reasoning leads to, seen in the run requests the real `@cursor/sdk`
 * sends the fake backend. The fake catalog's gpt-5.4 lists reasoning none < low < medium < high <
 * extra-high, its default variant at medium.
 */
let wire: WireBridge;
beforeAll(async () => {
  wire = await startWireBridge();
});
afterAll(async () => {
  await wire?.close();
  await closeWireBackend();
});

/** The `gpt-5.4` variant at `reasoning`: never fast, the smallest context. */
const gpt54 = (reasoning: string): Record<string, string> => ({ reasoning, fast: 'false', context: '272k' });

const paramsOf = (request: FakeRunRequest | undefined): Record<string, string> | undefined =>
  request?.requestedModel === undefined
    ? undefined
    : Object.fromEntries(request.requestedModel.parameters.map(({ id, value }) => [id, value]));

const bodyFor = {
  anthropic: (text: string) => ({
    path: '/v1/messages',
    body: { model: 'gpt-5.4', max_tokens: 50, messages: [{ role: 'user', content: text }] },
  }),
  'openai-chat': (text: string) => ({
    path: '/v1/chat/completions',
    body: { model: 'gpt-5.4', messages: [{ role: 'user', content: text }] },
  }),
  'openai-responses': (text: string) => ({
    path: '/v1/responses',
    body: { model: 'gpt-5.4', input: text },
  }),
};

/**
 * The reasoning value of each case: `none` is "No reasoning requested (…): each parameter's first allowed
 * value"; `medium` is "Reasoning without an effort …: the catalog default variant's effort"; `high` is
 * "Reasoning with an effort: … the nearest allowed effort level".
 */
const rows: Array<[keyof typeof bodyFor, string, 'none' | 'medium' | 'high', Record<string, unknown>]> = [
  ['anthropic', 'no thinking or effort', 'none', {}],
  ['anthropic', 'thinking disabled', 'none', { thinking: { type: 'disabled' } }],
  ['anthropic', 'adaptive thinking', 'medium', { thinking: { type: 'adaptive' } }],
  ['anthropic', 'effort high', 'high', { output_config: { effort: 'high' } }],
  ['openai-chat', 'no reasoning fields', 'none', {}],
  ['openai-chat', 'reasoning {enabled: false}', 'none', { reasoning: { enabled: false } }],
  ['openai-chat', 'reasoning {}', 'medium', { reasoning: {} }],
  ['openai-chat', 'reasoning_effort high', 'high', { reasoning_effort: 'high' }],
  ['openai-responses', 'no reasoning', 'none', {}],
  ['openai-responses', 'effort none', 'none', { reasoning: { effort: 'none', summary: 'auto' } }],
  ['openai-responses', "Codex's {summary: auto}", 'medium', { reasoning: { summary: 'auto' } }],
  ['openai-responses', 'reasoning {}', 'medium', { reasoning: {} }],
  ['openai-responses', 'effort high', 'high', { reasoning: { effort: 'high', summary: 'auto' } }],
];

describe('model selection: one reasoning rule on every protocol, through the bridge and the real SDK', () => {
  it.each(rows)('%s, %s: a new agent runs reasoning=%s', async (protocol, label, reasoning, fields) => {
    wire.backend.setScenario((run) => {
      run.text('ok');
      run.turnEnded();
    });
    const before = wire.runs().length;
    // A text of its own per row: every row is a new conversation, so a new agent.
    const { path, body } = bodyFor[protocol](`model selection: ${protocol} ${label}`);
    const response = await fetch(`${wire.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
      body: JSON.stringify({ ...body, ...fields }),
    });
    expect(response.status).toBe(200);
    await response.text();
    const sent = wire.runs().slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]?.requestedModel?.modelId).toBe('gpt-5.4');
    expect(paramsOf(sent[0])).toEqual(gpt54(reasoning));
  });
});

const bash = anthropicBashTool;

const resultText = (result: FakeToolResult | undefined): string =>
  result?.status === 'success'
    ? result.content.map((item) => (item.type === 'text' ? item.text : '')).join('')
    : String(result?.status);

describe('model selection of a live agent', () => {
  it(
    'keeps its bound selection while a run is parked and after it; ' +
      'a new reasoning choice applies to the next agent',
    async () => {
      let runs = 0;
      const scenario: Scenario = async (run) => {
        runs += 1;
        if (runs === 1) {
          const [result] = await run.toolCalls([{ toolName: 'Bash', args: { command: 'echo pinned' } }]);
          run.text(`tool said ${resultText(result)}`);
        } else {
          run.text(`answer ${runs}`);
        }
        run.turnEnded();
      };
      wire.backend.setScenario(scenario);
      const before = wire.runs().length;
      const sent = () => wire.runs().slice(before);
      const client = new Anthropic({ baseURL: wire.url, apiKey: 'sk-test', maxRetries: 0 });
      const ask = (messages: Anthropic.MessageParam[], reasoning: Partial<Anthropic.MessageCreateParams>) =>
        client.messages.create({
          model: 'gpt-5.4',
          max_tokens: 100,
          tools: [bash],
          messages,
          ...reasoning,
        } as Anthropic.MessageCreateParamsNonStreaming);

      // Turn 1 asks for no reasoning: the agent is created at reasoning=none, and its run parks on Bash.
      const opening: Anthropic.MessageParam[] = [{ role: 'user', content: 'pinned-selection: run the tool' }];
      const first = await ask(opening, {});
      expect(first.stop_reason).toBe('tool_use');
      const toolUse = first.content.find(
        (block): block is Anthropic.ToolUseBlock => block.type === 'tool_use',
      );
      expect(sent()).toHaveLength(1);
      expect(paramsOf(sent()[0])).toEqual(gpt54('none'));

      // The tool result comes with effort high: the parked run goes on, nothing is reminted.
      const withResult: Anthropic.MessageParam[] = [
        ...opening,
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse!.id, content: 'pinned' }] },
      ];
      const second = await ask(withResult, { output_config: { effort: 'high' } });
      expect(second.content).toEqual([expect.objectContaining({ type: 'text', text: 'tool said pinned' })]);
      expect(sent()).toHaveLength(1);

      // The next user turn, still at effort high, reuses the live agent: it keeps reasoning=none.
      const followUp: Anthropic.MessageParam[] = [
        ...withResult,
        { role: 'assistant', content: second.content },
        { role: 'user', content: 'pinned-selection: and now?' },
      ];
      const third = await ask(followUp, { output_config: { effort: 'high' } });
      expect(third.content).toEqual([expect.objectContaining({ text: 'answer 2' })]);
      expect(sent()).toHaveLength(2);
      expect(sent()[1]?.conversationId).toBe(sent()[0]?.conversationId);
      expect(paramsOf(sent()[1])).toEqual(gpt54('none'));

      // A transcript the live agent cannot continue is replayed to the next agent, which takes effort high.
      const diverged: Anthropic.MessageParam[] = [
        ...opening,
        { role: 'assistant', content: 'an answer the agent never gave' },
        { role: 'user', content: 'pinned-selection: replay this' },
      ];
      const fourth = await ask(diverged, { output_config: { effort: 'high' } });
      expect(fourth.content).toEqual([expect.objectContaining({ text: 'answer 3' })]);
      expect(sent()).toHaveLength(3);
      expect(sent()[2]?.conversationId).not.toBe(sent()[0]?.conversationId);
      expect(paramsOf(sent()[2])).toEqual(gpt54('high'));
    },
  );
});
