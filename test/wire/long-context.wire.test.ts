/**
 * `Router.longContext` through the whole bridge and the real `@cursor/sdk`: a request whose token count
 * (`count_tokens`' own count of the same body) is above `Router.longContextThreshold` runs on the
 * long-context model — the fake backend sees its id — and the access line names the route; one counted at
 * the threshold, or one that names its model, does not.
 */

import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { closeWireBackend, startWireBridge, type WireBridge } from '../helpers/wire-bridge.js';

let wire: WireBridge | undefined;
afterEach(async () => {
  await wire?.close();
  wire = undefined;
});
afterAll(closeWireBackend);

const router = (threshold?: number): Record<string, unknown> => ({
  Providers: [{ name: 'cursor', models: ['composer-2'] }],
  Router: {
    default: 'cursor,composer-2',
    longContext: 'cursor,gpt-5.4',
    ...(threshold === undefined ? {} : { longContextThreshold: threshold }),
  },
});

/** A long pasted document of `lines` log lines (about a dozen tokens each), as a user would send it. */
const longText = (lines: number): string =>
  Array.from(
    { length: lines },
    (_, index) => `line ${index}: the build log says step ${index * 7} passed`,
  ).join('\n');

const body = (model: string, text: string): Record<string, unknown> => ({
  model,
  max_tokens: 64,
  system: 'You are a coding agent.',
  messages: [{ role: 'user', content: text }],
});

const post = async (path: string, payload: unknown): Promise<Response> => {
  if (wire === undefined) throw new Error('no bridge');
  return fetch(`${wire.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'sk-test' },
    body: JSON.stringify(payload),
  });
};

const countTokens = async (payload: Record<string, unknown>): Promise<number> => {
  const { max_tokens: _omitted, ...counted } = payload;
  const response = await post('/v1/messages/count_tokens', counted);
  expect(response.status).toBe(200);
  return ((await response.json()) as { input_tokens: number }).input_tokens;
};

type AccessLine = { msg: string; path: string; route?: string; cursorModel?: string; model?: string };

/** The access lines of `/v1/messages` turns (pino writes each when its response closed). */
const turnAccessLines = (): AccessLine[] =>
  (wire?.logs ?? [])
    .map((line) => JSON.parse(line) as AccessLine)
    .filter((line) => line.msg === 'request' && line.path === '/v1/messages');

/** Runs one turn; resolves with the model the fake backend was asked to run and the turn's access line. */
const runTurn = async (payload: Record<string, unknown>): Promise<{ ran?: string; access?: AccessLine }> => {
  if (wire === undefined) throw new Error('no bridge');
  const before = wire.runs().length;
  const linesBefore = turnAccessLines().length;
  const response = await post('/v1/messages', payload);
  expect(response.status).toBe(200);
  await response.json();
  const sent = wire.runs().slice(before);
  expect(sent).toHaveLength(1);
  // The access line is written on the response's close, which may come a tick after the body.
  for (let tries = 0; turnAccessLines().length === linesBefore && tries < 100; tries += 1)
    await new Promise((resolve) => setTimeout(resolve, 10));
  return {
    ...(sent[0]?.requestedModel === undefined ? {} : { ran: sent[0].requestedModel.modelId }),
    ...(turnAccessLines()[linesBefore] === undefined ? {} : { access: turnAccessLines()[linesBefore] }),
  };
};

const answering = (run: { text(text: string): void; turnEnded(): void }): void => {
  run.text('ok');
  run.turnEnded();
};

describe('Router.longContext', () => {
  it('a Claude Code request counted above the default threshold (60000) runs on the long-context model, and the access log says so', async () => {
    wire = await startWireBridge({ config: router(), scenario: answering });
    const large = body('claude-opus-4-8', longText(6_000));
    const counted = await countTokens(large);
    expect(counted).toBeGreaterThan(60_000);

    const { ran, access } = await runTurn(large);

    expect(ran).toBe('gpt-5.4');
    expect(access).toMatchObject({ model: 'claude-opus-4-8', cursorModel: 'gpt-5.4', route: 'long-context' });
    // A short request of the same client stays on the default.
    const short = await runTurn(body('claude-opus-4-8', 'A short question.'));
    expect(short).toMatchObject({ ran: 'composer-2', access: { route: 'default' } });
  });

  it('compares the count_tokens count with the threshold as Claude Code Router does: strictly above', async () => {
    const text = longText(400);
    wire = await startWireBridge({ config: router(), scenario: answering });
    const counted = await countTokens(body('sonnet', text));
    await wire.close();

    wire = await startWireBridge({ config: router(counted - 1), scenario: answering });
    expect(await runTurn(body('sonnet', text))).toMatchObject({
      ran: 'gpt-5.4',
      access: { route: 'long-context' },
    });
    await wire.close();

    wire = await startWireBridge({ config: router(counted), scenario: answering });
    expect(await runTurn(body('sonnet', text))).toMatchObject({
      ran: 'composer-2',
      access: { route: 'default' },
    });
  });

  it('a request that names its Cursor model runs that model, whatever its size', async () => {
    wire = await startWireBridge({ config: router(1_000), scenario: answering });
    expect(await runTurn(body('cursor,composer-2', longText(400)))).toMatchObject({
      ran: 'composer-2',
      access: { route: 'explicit' },
    });
  });
});
