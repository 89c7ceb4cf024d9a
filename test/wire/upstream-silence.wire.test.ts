/**
 * A silent backend (stalled, or dead) must not keep a client's stream open for minutes: the bridge bounds
 * the time to the first upstream event and between events (`firstEventTimeoutMs` / `idleTimeoutMs`, here
 * a few seconds), ends the turn with a retryable in-band error and the protocol's terminal events, and cancels
 * the run — but never while the run is parked on a host tool call waiting for the client.
 *
 * No test times the turn: that the bound fired shows in its message (the scenarios stall for minutes, so
 * a bound that never fired would hang the test), and when exactly it fires is pinned with fake timers in
 * test/upstream/cursor/run-watchdog.test.ts and cursor-run.test.ts. The bound a test does not exercise is
 * a minute, so that a loaded machine cannot trip it.
 */

import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { RunContext } from '../fakes/cursor-backend/run-context.js';
import { createGate } from '../helpers/gate.js';
import { closeWireBackend, startWireBridge, type WireBridge } from '../helpers/wire-bridge.js';

const boundMs = 1500;
/** A bound the test does not exercise. */
const unreachedMs = 60_000;
const configWith = (timeouts: { firstEventTimeoutMs: number; idleTimeoutMs: number }) => ({
  Providers: [
    {
      name: 'cursor',
      api_base_url: 'https://cursor.com',
      api_key: '$CURSOR_API_KEY',
      models: ['composer-2'],
      transformer: { use: [['cursor-sdk', timeouts]] },
    },
  ],
});
/** A safety net for the backend to see its stream closed, never a speed claim. */
const eventually = { timeout: 30_000, interval: 20 };

let wire: WireBridge | undefined;
afterEach(async () => {
  await wire?.close();
  wire = undefined;
});
afterAll(closeWireBackend);

const bash = {
  name: 'Bash',
  description: 'Run a shell command on the host',
  input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
};

/** POSTs a streaming request and reads the whole SSE body, telling `onText` what arrived so far. */
const stream = async (
  url: string,
  path: string,
  body: Record<string, unknown>,
  onText: (text: string) => void = () => undefined,
) => {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': 'sk-test',
      'anthropic-version': '2023-06-01',
    },
    body: JSON.stringify({ model: 'composer-2', stream: true, ...body }),
  });
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of response.body!) {
    text += decoder.decode(chunk, { stream: true });
    onText(text);
  }
  return { status: response.status, text };
};

/** The `event:` names of an SSE body, in order. */
const eventNames = (text: string): string[] =>
  [...text.matchAll(/^event: (.+)$/gm)].map((match) => match[1] ?? '');

/** A scenario that records the attempts it plays and whether each one's stream was closed. */
const recording = (play: (run: RunContext) => Promise<void>) => {
  const attempts: RunContext[] = [];
  return {
    attempts,
    scenario: async (run: RunContext) => {
      attempts.push(run);
      await play(run);
    },
  };
};

describe('bounded upstream silence', () => {
  it('ends a turn whose backend never sends a first event, in-band and retryable, and cancels the run', async () => {
    // The bound runs from the send, the SDK's own start included: the run the backend must see has to
    // get there first. So the SDK is warmed up by another conversation (a cold SDK on a loaded machine
    // took more than 1.5 s to reach the backend), and the bound is longer here.
    const { attempts, scenario } = recording((run) =>
      run.prompt.includes('warm up') ? Promise.resolve(void run.text('warm')) : run.stall(120_000),
    );
    wire = await startWireBridge({
      config: configWith({ firstEventTimeoutMs: 5_000, idleTimeoutMs: unreachedMs }),
      scenario,
    });
    // Until a turn made it (each try under the same bound; a loaded machine may need more than one).
    for (let tries = 0; tries < 10; tries += 1) {
      const warm = await stream(wire.url, '/v1/messages', {
        max_tokens: 100,
        messages: [{ role: 'user', content: `warm up ${tries}` }],
      });
      if (warm.text.includes('"text":"warm"')) break;
    }
    attempts.length = 0;
    const { status, text } = await stream(wire.url, '/v1/messages', {
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hello?' }],
    });
    expect(status).toBe(200);
    const names = eventNames(text);
    expect(names.at(-2)).toBe('error');
    expect(names.at(-1)).toBe('message_stop');
    expect(text).toMatch(/"type":"overloaded_error","message":"Cursor sent no event within 5 s[^"]*Retry/);
    // Cancelled for real: the backend saw its stream closed, and the SDK did not retry it.
    await expect.poll(() => attempts.every((run) => !run.open), eventually).toBe(true);
    expect(attempts).toHaveLength(1);
  }, 120_000);

  it('ends a turn that stalls mid-text with the text so far, an error and [DONE] (Chat)', async () => {
    const { attempts, scenario } = recording(async (run) => {
      run.text('partial answer ');
      await run.stall(120_000);
    });
    wire = await startWireBridge({
      config: configWith({ firstEventTimeoutMs: unreachedMs, idleTimeoutMs: boundMs }),
      scenario,
    });
    const { status, text } = await stream(wire.url, '/v1/chat/completions', {
      messages: [{ role: 'user', content: 'tell me' }],
    });
    expect(status).toBe(200);
    expect(text).toContain('partial answer ');
    expect(text).toMatch(/"error":\{"message":"Cursor sent nothing for 1.5 s in the middle of the answer/);
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    await expect.poll(() => attempts.every((run) => !run.open), eventually).toBe(true);
  }, 60_000);

  it('ends a turn whose backend dies mid-text with response.failed, and the next turn works (Responses)', async () => {
    let kill: Promise<void> | undefined;
    // The backend dies once the client has the text (not after a delay the text might not make).
    const clientHasText = createGate();
    wire = await startWireBridge({
      config: configWith({ firstEventTimeoutMs: unreachedMs, idleTimeoutMs: boundMs }),
      scenario: async (run) => {
        run.text('before the crash ');
        await clientHasText.opened;
        kill ??= wire?.backend.kill();
        await run.stall(120_000);
      },
    });
    const cut = await stream(wire.url, '/v1/responses', { input: 'first' }, (text) => {
      if (text.includes('before the crash ')) clientHasText.open();
    });
    expect(cut.status).toBe(200);
    expect(cut.text).toContain('before the crash ');
    const names = eventNames(cut.text);
    expect(names.at(-2)).toBe('error');
    expect(names.at(-1)).toBe('response.failed');
    expect(cut.text).toMatch(/"code":"server_is_overloaded"/);

    await kill;
    await wire.backend.restart();
    wire.backend.setScenario((run) => void run.text(`back again: ${run.prompt.includes('second')}`));
    const next = await stream(wire.url, '/v1/responses', { input: 'second' });
    expect(next.text).toContain('back again: true');
    expect(eventNames(next.text).at(-1)).toBe('response.completed');
  }, 60_000);

  it('does not cut a run parked on a tool call while the client takes longer than the bound', async () => {
    // Longer here: the run must also get from the tool result to its text within it, on a loaded machine.
    const idleTimeoutMs = 5_000;
    wire = await startWireBridge({
      config: configWith({ firstEventTimeoutMs: unreachedMs, idleTimeoutMs }),
      scenario: async (run) => {
        const result = await run.toolCall({ toolName: 'Bash', args: { command: 'sleep 3' } });
        run.text(`tool said ${result.status === 'success' ? JSON.stringify(result.content) : result.status}`);
      },
    });
    const messages: unknown[] = [{ role: 'user', content: 'run it' }];
    const first = await stream(wire.url, '/v1/messages', { max_tokens: 100, tools: [bash], messages });
    const toolUse = /"type":"tool_use","id":"([^"]+)"/.exec(first.text);
    expect(toolUse?.[1]).toBeDefined();
    expect(first.text).toContain('"stop_reason":"tool_use"');
    // The client runs the tool for twice the bound before posting the result: a bound that counted the
    // parked time would have fired (timers fire late, never early), however slow the machine.
    await new Promise((resolve) => setTimeout(resolve, 2 * idleTimeoutMs));
    const second = await stream(wire.url, '/v1/messages', {
      max_tokens: 100,
      tools: [bash],
      messages: [
        ...messages,
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: toolUse?.[1], name: 'Bash', input: { command: 'sleep 3' } }],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse?.[1], content: 'slept' }] },
      ],
    });
    expect(second.text).not.toContain('event: error');
    expect(second.text).toContain('tool said [{\\"type\\":\\"text\\",\\"text\\":\\"slept\\"}]');
    expect(wire.runRequests()).toHaveLength(1);
  }, 60_000);
});
