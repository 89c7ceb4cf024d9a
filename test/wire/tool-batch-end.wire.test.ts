/**
 * A tool turn ends on Cursor's own signal, not on a timer: the bridge, the REAL `@cursor/sdk` and the fake
 * backend sending a one-call batch as Cursor does (the call's start, its exec, then
 * `toolRequestsListed{callCount: 1}`). Claude Code runs the tool only after `message_stop`, so any wait
 * between the call and the end of the response is on every tool turn.
 *
 * The bridge runs with a quiet period (the fallback for a batch whose size is never listed) far longer
 * than the test's timeout: a turn that ended on it would time the test out. What the tests assert is the
 * order of what the client and the backend saw, never how long it took.
 */

import Anthropic from '@anthropic-ai/sdk';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { FakeToolResult, Scenario } from '../fakes/cursor-backend/run-context.js';
import { createGate } from '../helpers/gate.js';
import {
  closeWireBackend,
  startWireBridge,
  type WireBridge,
  anthropicBashTool,
} from '../helpers/wire-bridge.js';

let wire: WireBridge | undefined;
afterEach(async () => {
  await wire?.close();
  wire = undefined;
});
afterAll(closeWireBackend);

/** Beyond vitest's test timeout (60 s): a batch that waited for it would fail the test. */
const quietPeriodNobodyWaitsFor = 10 * 60_000;

const bash = anthropicBashTool;
const environment =
  '# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /home/dev/project\n';
const opening: Anthropic.MessageParam[] = [{ role: 'user', content: 'List the project' }];

const resultText = (result: FakeToolResult | undefined): string =>
  result?.status === 'success'
    ? result.content.map((item) => (item.type === 'text' ? item.text : '')).join('')
    : String(result?.status);

/** Streams one Messages request, handing each raw event to `onEvent` as it arrives. */
const streamTurn = async (
  client: Anthropic,
  messages: Anthropic.MessageParam[],
  onEvent: (event: Anthropic.RawMessageStreamEvent) => void = () => undefined,
): Promise<Anthropic.Message> => {
  const stream = client.messages.stream({
    model: 'composer-2',
    max_tokens: 100,
    system: environment,
    tools: [bash],
    messages,
  });
  for await (const event of stream) onEvent(event);
  return stream.finalMessage();
};

describe('a tool turn ends on the batch listing', () => {
  it('a one-call tool turn ends without the quiet period, and the run goes on with the result', async () => {
    const order: string[] = [];
    const scenario: Scenario = async (run) => {
      const result = await run.toolCall({ toolName: 'Bash', args: { command: 'ls' } });
      order.push(`backend got ${resultText(result)}`);
      run.text(`files: ${resultText(result)}`);
      run.turnEnded();
    };
    wire = await startWireBridge({ scenario, cursor: { batchQuietMs: quietPeriodNobodyWaitsFor } });
    const client = new Anthropic({ baseURL: wire.url, apiKey: 'sk-test', maxRetries: 0 });

    const first = await streamTurn(client, opening, (event) => {
      if (event.type === 'message_stop') order.push('message_stop');
    });
    expect(first.stop_reason).toBe('tool_use');
    const call = first.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use');
    expect(call).toMatchObject({ name: 'Bash', input: { command: 'ls' } });

    const second = await streamTurn(client, [
      ...opening,
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: call!.id, content: 'a.txt' }] },
    ]);
    expect(second.content).toEqual([expect.objectContaining({ type: 'text', text: 'files: a.txt' })]);
    expect(order).toEqual(['message_stop', 'backend got a.txt']);
    expect(wire.runs()).toHaveLength(1);
  });

  it('a listing that reaches the SDK after the call was announced ends the turn at once', async () => {
    // The backend lists the batch only once the client has seen the tool call: by then the call has
    // parked, and only the listing can end the turn.
    const toolUseSeen = createGate();
    const order: string[] = [];
    const scenario: Scenario = async (run) => {
      const listedAfter = toolUseSeen.opened.then(() => void order.push('backend lists 1 call'));
      await run.toolCall({ toolName: 'Bash', args: { command: 'ls' } }, { listedAfter });
      run.turnEnded();
    };
    wire = await startWireBridge({ scenario, cursor: { batchQuietMs: quietPeriodNobodyWaitsFor } });
    const client = new Anthropic({ baseURL: wire.url, apiKey: 'sk-test', maxRetries: 0 });

    const first = await streamTurn(client, opening, (event) => {
      if (event.type === 'content_block_start' && event.content_block.type === 'tool_use') {
        order.push('tool_use');
        toolUseSeen.open();
      } else if (event.type === 'message_stop') {
        order.push('message_stop');
      }
    });
    expect(first.stop_reason).toBe('tool_use');
    expect(order).toEqual(['tool_use', 'backend lists 1 call', 'message_stop']);
  });
});
