/**
 * Assertions shared by the three clients' scenarios. Each checks the backend's side (what the Cursor
 * backend received) so a scenario fails when the client merely printed the expected words.
 */

import { expect } from 'vitest';
import { serializeSseFrames } from '../../../src/protocols/sse-serialize.js';
import type { E2eBridge, RecordedExchange } from './e2e-bridge.js';

/** What the bridge sent back on one exchange, as text (SSE frames or JSON). */
export const frameText = (exchange: RecordedExchange | undefined): string =>
  exchange === undefined
    ? ''
    : `${serializeSseFrames(exchange.frames)}${exchange.json === undefined ? '' : JSON.stringify(exchange.json)}`;

/**
 * The tool results the backend received over all runs, in the order the model made the calls, match
 * `expected` (each result's text contains the expected text: Codex wraps output in a header block).
 * Clients may send results in completion order (Claude Code does), so they are put in call order first.
 */
export const expectToolResults = (
  bridge: E2eBridge,
  expected: ReadonlyArray<{ text: string; isError: boolean }>,
): void => {
  const results = bridge
    .runs()
    .flatMap((run) => run.toolResults)
    // The e2e model numbers its calls `call_e2e_<turn>_<step>_<index>`.
    .sort((left, right) => left.toolCallId.localeCompare(right.toolCallId, 'en', { numeric: true }));
  expect(results).toHaveLength(expected.length);
  for (const [index, want] of expected.entries()) {
    const result = results[index];
    expect(result?.text).toContain(want.text);
    expect(result?.isError).toBe(want.isError);
  }
};

/**
 * The second user turn reused the first turn's agent and sent it only what is new: the second prompt
 * has the second request and none of the first turn, nor the client's system prompt; the agent still
 * has the first turn (the SDK sent it back as conversation state).
 */
export const expectSlimSecondTurn = async (
  bridge: E2eBridge,
  markers: { firstMarker: string; secondMarker: string },
): Promise<void> => {
  const runs = bridge.mainRuns();
  expect(runs).toHaveLength(2);
  const [first, second] = runs;
  expect(second?.agentId).toBe(first?.agentId);
  expect(first?.historyTurns).toBe(0);
  expect(second?.historyTurns).toBe(1);
  expect(first?.prompt).toContain(markers.firstMarker);
  expect(first?.prompt).toContain('<client_system_prompt>');
  const slim = second?.prompt ?? '';
  expect(slim).toContain(markers.secondMarker);
  expect(slim).not.toContain(markers.firstMarker);
  expect(slim).not.toContain('<client_system_prompt>');
  expect(slim).not.toContain('<conversation_so_far>');
  // The client really continued: its second request carried the first turn.
  const secondRequest = bridge.mainExchanges().at(-1);
  expect(JSON.stringify(secondRequest?.body)).toContain(markers.firstMarker);
  expect(await bridge.metrics()).toMatchObject({ slim: 1 });
};

const bridgeEnvironment = (prompt: string): string =>
  /<bridge_environment>[\s\S]*?<\/bridge_environment>/.exec(prompt)?.[0] ?? '';

/**
 * The agent was told the client's real working directory: in the prompt's grounding head (not only
 * inside the client's own system prompt) and in the scratch workspace's AGENTS.md.
 */
export const expectGrounded = async (bridge: E2eBridge, project: string): Promise<void> => {
  const [run] = bridge.mainRuns();
  if (run === undefined) throw new Error('e2e: no main run');
  expect(bridgeEnvironment(run.prompt)).toContain(`Use host paths under ${project}`);
  const agentsMd = await bridge.readWorkspaceFile(run, 'AGENTS.md');
  expect(agentsMd).toContain(`The user's project root on that machine is \`${project}\``);
};

/**
 * A tool call naming the scratch workspace never reached the client: the backend got the bridge's
 * correction (naming the real project root) as an error result, and the client saw one turn request
 * whose response holds no tool call.
 */
export const expectCorrectedScratchCall = (bridge: E2eBridge, project: string): void => {
  const runs = bridge.mainRuns();
  expect(runs).toHaveLength(1);
  const results = runs[0]?.toolResults ?? [];
  expect(results).toHaveLength(1);
  expect(results[0]?.isError).toBe(true);
  const correction = results[0]?.text ?? '';
  expect(correction).toContain('was not run');
  expect(correction).toContain(`the project root is ${project}`);
  const exchanges = bridge.mainExchanges();
  expect(exchanges).toHaveLength(1);
  expect(hasToolCall(exchanges[0])).toBe(false);
};

type WireEvent = {
  type?: string;
  content_block?: { type?: string; id?: string };
  item?: { type?: string; call_id?: string };
  choices?: Array<{ delta?: { tool_calls?: Array<{ id?: string }> } }>;
};

const wireEvents = (exchange: RecordedExchange | undefined): WireEvent[] =>
  (exchange?.frames ?? []).flatMap((frame) => {
    if ('comment' in frame) return [];
    try {
      return [JSON.parse(frame.data) as WireEvent];
    } catch {
      return [];
    }
  });

/**
 * The number of distinct tool calls a streamed response carried, in any of the three protocols:
 * Anthropic `tool_use` blocks, Chat `tool_calls` deltas, Responses `function_call` / `custom_tool_call`
 * items.
 */
export const toolCallCount = (exchange: RecordedExchange | undefined): number => {
  const ids = new Set<string>();
  for (const event of wireEvents(exchange)) {
    if (event.type === 'content_block_start' && event.content_block?.type === 'tool_use') {
      ids.add(event.content_block.id ?? '');
    }
    const item = event.item;
    if (
      event.type === 'response.output_item.done' &&
      (item?.type === 'function_call' || item?.type === 'custom_tool_call')
    ) {
      ids.add(item.call_id ?? '');
    }
    for (const choice of event.choices ?? []) {
      for (const call of choice.delta?.tool_calls ?? []) if (call.id !== undefined) ids.add(call.id);
    }
  }
  return ids.size;
};

/** Whether a streamed response carried a tool call. */
export const hasToolCall = (exchange: RecordedExchange | undefined): boolean => toolCallCount(exchange) > 0;

/** The bridge sent keepalive frames while the model was silent, and the client still finished. */
export const expectKeepalives = (bridge: E2eBridge): void => {
  const keepalives = bridge.mainExchanges().map((exchange) => exchange.keepalives);
  expect(keepalives.every((count) => count > 0)).toBe(true);
};
