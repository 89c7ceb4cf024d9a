import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createBridge, type Bridge } from '../../src/bridge/create-bridge.js';
import { resolveConfig } from '../../src/config/load-config.js';
import { ScriptedUpstream, type ScriptSource } from '../../src/upstream/scripted/scripted-upstream.js';
import { createGate, never } from '../helpers/gate.js';

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

const start = async (script: ScriptSource): Promise<{ bridge: Bridge; url: string }> => {
  const home = await mkdtemp(join(tmpdir(), 'cursor-bridge-drain-'));
  const env = { HOME: home, CURSOR_API_KEY: 'crsr_test' };
  const config = resolveConfig({}, { path: join(home, 'config.json'), env, homedir: home });
  const bridge = await createBridge({
    config,
    env,
    homedir: home,
    logger: pino({ level: 'silent' }),
    upstream: new ScriptedUpstream(script),
  });
  cleanup.push(async () => {
    await bridge.close();
    await rm(home, { recursive: true, force: true });
  });
  await new Promise<void>((resolve) => bridge.server.listen(0, '127.0.0.1', resolve));
  return { bridge, url: `http://127.0.0.1:${(bridge.server.address() as AddressInfo).port}` };
};

const streamTurn = (url: string): Promise<Response> =>
  fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-claude-code-session-id': 'drain-1' },
    body: JSON.stringify({
      model: 'composer-2',
      max_tokens: 100,
      stream: true,
      messages: [{ role: 'user', content: 'hello' }],
    }),
  });

/** Reads `response` until its body contains `needle`; returns the reader and what was read. */
const readUntil = async (response: Response, needle: string) => {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!text.includes(needle)) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`the body ended without ${needle}:\n${text}`);
    text += decoder.decode(value, { stream: true });
  }
  const rest = async (): Promise<string> => {
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      text += decoder.decode(chunk.value, { stream: true });
    }
    return text;
  };
  return { rest };
};

describe('bridge drain', () => {
  it('lets an in-flight turn finish within the bound, then closes', async () => {
    const answer = createGate();
    const { bridge, url } = await start([
      { type: 'text-delta', text: 'slow ' },
      { type: 'wait', until: answer.opened },
      { type: 'text-delta', text: 'answer' },
      { type: 'end', status: 'finished' },
    ]);
    const body = await readUntil(await streamTurn(url), '"text":"slow "');
    // A bound no run of this test reaches: the drain ends when the turn does.
    let drained = false;
    const draining = bridge.drain(10 * 60_000).finally(() => (drained = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(drained).toBe(false);
    answer.open();
    expect(await draining).toEqual({ finished: true, abandoned: 0 });
    const text = await body.rest();
    expect(text).toContain('"text":"answer"');
    expect(text).toContain('event: message_stop');
  });

  it('at the deadline ends a stream still running with an in-band error and no cut body', async () => {
    const { bridge, url } = await start([
      { type: 'text-delta', text: 'partial' },
      // A run that never ends by itself: a drain that waited for it would hang until the test times out.
      { type: 'wait', until: never },
      { type: 'end', status: 'finished' },
    ]);
    const body = await readUntil(await streamTurn(url), '"text":"partial"');
    const result = await bridge.drain(200);
    expect(result).toEqual({ finished: false, abandoned: 1 });
    // The whole body arrives (no ECONNRESET): the partial text, then the in-band error and the terminal message_stop.
    const text = await body.rest();
    expect(text).toContain('"text":"partial"');
    expect(
      text
        .trimEnd()
        .endsWith(
          'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"The bridge is shutting down."}}\n\n' +
            'event: message_stop\ndata: {"type":"message_stop"}',
        ),
    ).toBe(true);
  });
});
