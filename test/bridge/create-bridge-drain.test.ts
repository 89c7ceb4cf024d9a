import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createBridge, type Bridge } from '../../src/bridge/create-bridge.js';
import { resolveConfig } from '../../src/config/load-config.js';
import { ScriptedUpstream, type ScriptSource } from '../../src/upstream/scripted/scripted-upstream.js';

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

describe('bridge drain', () => {
  it('lets an in-flight turn finish within the bound, then closes', async () => {
    const { bridge, url } = await start([
      { type: 'text-delta', text: 'slow ' },
      { type: 'delay', ms: 300 },
      { type: 'text-delta', text: 'answer' },
      { type: 'end', status: 'finished' },
    ]);
    const response = await streamTurn(url);
    const body = response.text();
    const result = await bridge.drain(5_000);
    expect(result).toEqual({ finished: true, abandoned: 0 });
    const text = await body;
    expect(text).toContain('"text":"answer"');
    expect(text).toContain('event: message_stop');
  });

  it('at the deadline ends a stream still running with an in-band error and no cut body', async () => {
    const { bridge, url } = await start([
      { type: 'text-delta', text: 'partial' },
      { type: 'delay', ms: 60_000 },
      { type: 'end', status: 'finished' },
    ]);
    const response = await streamTurn(url);
    const body = response.text();
    const startedAt = Date.now();
    const result = await bridge.drain(200);
    expect(result).toEqual({ finished: false, abandoned: 1 });
    // The whole body arrives (no ECONNRESET): the partial text, then the in-band error and the terminal message_stop.
    const text = await body;
    expect(text).toContain('"text":"partial"');
    expect(
      text
        .trimEnd()
        .endsWith(
          'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"The bridge is shutting down."}}\n\n' +
            'event: message_stop\ndata: {"type":"message_stop"}',
        ),
    ).toBe(true);
    expect(Date.now() - startedAt).toBeLessThan(8_000);
  });
});
