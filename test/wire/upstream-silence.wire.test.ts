/**
 * A silent backend (stalled, or dead) must not keep a client's stream open for minutes: the bridge bounds
 * the time to the first upstream event and between events (`firstEventTimeoutMs` / `idleTimeoutMs`, here
 * 1.5 s), ends the turn with a retryable in-band error and the protocol's terminal events, and cancels
 * the run — but never while the run is parked on a host tool call waiting for the client.
 */

import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { RunContext } from '../fakes/cursor-backend/run-context.js';
import { closeWireBackend, startWireBridge, type WireBridge } from './wire-fixture.js';

const boundMs = 1500;
const config = {
  Providers: [
    {
      name: 'cursor',
      api_base_url: 'https://cursor.com',
      api_key: '$CURSOR_API_KEY',
      models: ['composer-2'],
      transformer: {
        use: [['cursor-sdk', { firstEventTimeoutMs: boundMs, idleTimeoutMs: boundMs }]],
      },
    },
  ],
};

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

/** POSTs a streaming request and reads the whole SSE body, timing it. */
const stream = async (url: string, path: string, body: Record<string, unknown>) => {
  const started = Date.now();
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': 'sk-test',
      'anthropic-version': '2023-06-01',
    },
    body: JSON.stringify({ model: 'composer-2', stream: true, ...body }),
  });
  const text = await response.text();
  return { status: response.status, text, elapsedMs: Date.now() - started };
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
    const { attempts, scenario } = recording((run) => run.stall(120_000));
    wire = await startWireBridge({ config, scenario });
    const { status, text, elapsedMs } = await stream(wire.url, '/v1/messages', {
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hello?' }],
    });
    expect(status).toBe(200);
    expect(elapsedMs).toBeGreaterThanOrEqual(boundMs - 100);
    expect(elapsedMs).toBeLessThan(boundMs + 3000);
    const names = eventNames(text);
    expect(names.at(-2)).toBe('error');
    expect(names.at(-1)).toBe('message_stop');
    expect(text).toMatch(/"type":"overloaded_error","message":"Cursor sent no event within 1.5 s[^"]*Retry/);
    // Cancelled for real: the backend saw its stream closed, and the SDK did not retry it.
    await expect.poll(() => attempts.every((run) => !run.open), { timeout: 3000 }).toBe(true);
    expect(attempts).toHaveLength(1);
  }, 15_000);

  it('ends a turn that stalls mid-text with the text so far, an error and [DONE] (Chat)', async () => {
    const { attempts, scenario } = recording(async (run) => {
      run.text('partial answer ');
      await run.stall(120_000);
    });
    wire = await startWireBridge({ config, scenario });
    const { status, text, elapsedMs } = await stream(wire.url, '/v1/chat/completions', {
      messages: [{ role: 'user', content: 'tell me' }],
    });
    expect(status).toBe(200);
    expect(elapsedMs).toBeLessThan(boundMs + 3000);
    expect(text).toContain('partial answer ');
    expect(text).toMatch(/"error":\{"message":"Cursor sent nothing for 1.5 s in the middle of the answer/);
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    await expect.poll(() => attempts.every((run) => !run.open), { timeout: 3000 }).toBe(true);
  }, 15_000);

  it('ends a turn whose backend dies mid-text with response.failed, and the next turn works (Responses)', async () => {
    let kill: Promise<void> | undefined;
    wire = await startWireBridge({
      config,
      scenario: async (run) => {
        run.text('before the crash ');
        await new Promise((resolve) => setTimeout(resolve, 200));
        kill ??= wire?.backend.kill();
        await run.stall(120_000);
      },
    });
    const cut = await stream(wire.url, '/v1/responses', { input: 'first' });
    expect(cut.status).toBe(200);
    expect(cut.elapsedMs).toBeLessThan(boundMs + 4000);
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
  }, 20_000);

  it('does not cut a run parked on a tool call while the client takes longer than the bound', async () => {
    wire = await startWireBridge({
      config,
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
    // The client runs the tool for twice the bound before posting the result.
    await new Promise((resolve) => setTimeout(resolve, 2 * boundMs));
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
  }, 20_000);
});
