/**
 * The facade as CCR calls it: `transformRequestIn(request, provider, context)` with the Anthropic body in
 * `context.req`, answered through `__providerResponse` (for a CCR build that takes the ready answer) and
 * through the one-time loopback URL (upstream CCR fetches `config.url`), on the real engine over the scripted
 * upstream. The reference styles are resolved by the real llms 1.0.53 provider service.
 */
import { EventEmitter } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CcrFacade,
  createTransformerOverrides,
  type CcrTransformResult,
} from '../../../src/hosts/ccr/ccr-facade.js';
import { LoopbackListener } from '../../../src/hosts/ccr/loopback-listener.js';
import { parseConfigText } from '../../../src/config/load-config.js';
import { createTurnError } from '../../../src/turn/turn-error.js';
import { ScriptedUpstream, type ScriptSource } from '../../../src/upstream/scripted/scripted-upstream.js';
import { never } from '../../helpers/gate.js';
import {
  llmsInstallTimeoutMs,
  loadAnthropicTransformer,
  type LlmsTransformer,
} from '../../helpers/ccr/real-llms.js';

/** A safety net for what happens after a disconnect or a TTL, never a speed claim. */
const eventually = { timeout: 30_000, interval: 10 };

const usage = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 2, cacheWriteTokens: 0 };
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let anthropic: LlmsTransformer;
beforeAll(async () => {
  anthropic = await loadAnthropicTransformer();
}, llmsInstallTimeoutMs);

const startFacade = async (
  script: ScriptSource,
): Promise<{ facade: CcrFacade; upstream: ScriptedUpstream }> => {
  const home = await mkdtemp(join(tmpdir(), 'cb-ccr-facade-'));
  const upstream = new ScriptedUpstream(script);
  const facade = new CcrFacade({
    env: { CURSOR_API_KEY: 'crsr_test', LOG_LEVEL: 'silent' },
    homedir: home,
    upstream,
  });
  cleanups.push(async () => {
    await facade.close();
    await rm(home, { recursive: true, force: true });
  });
  return { facade, upstream };
};

/** What CCR hands the transformer for a Claude Code request: the unified body and `{ req }`. */
const ccrCall = (body: Record<string, unknown>, headers: Record<string, string> = {}) => ({
  request: {
    model: 'composer-2',
    messages: [{ role: 'user', content: 'unified text' }],
    stream: body['stream'],
  },
  provider: {
    name: 'cursor',
    baseUrl: 'https://cursor.invalid',
    apiKey: 'crsr_test',
    models: ['composer-2'],
  },
  context: {
    req: { id: 'req-1', url: '/v1/messages?beta=true', headers, body: { model: 'composer-2', ...body } },
  },
});

const anthropicBody = (text: string, extra: Record<string, unknown> = {}) => ({
  max_tokens: 1024,
  stream: true,
  system: [{ type: 'text', text: 'You are Claude Code.' }],
  messages: [{ role: 'user', content: [{ type: 'text', text }] }],
  metadata: { user_id: JSON.stringify({ device_id: 'd', account_uuid: '', session_id: 'sess-1' }) },
  ...extra,
});

const transform = (facade: CcrFacade, call: ReturnType<typeof ccrCall>): Promise<CcrTransformResult> =>
  facade.transformRequestIn({ cursorMode: 'bridge' }, call.request, call.provider, call.context);

const decodedText = async (response: Response): Promise<string> =>
  (await anthropic.transformResponseIn!(response, { req: { id: 'x' } })).text();

describe('the CCR facade', () => {
  it('answers through __providerResponse and leaves the unused ticket to expire harmlessly', async () => {
    const { facade, upstream } = await startFacade([
      { type: 'reasoning-delta', text: 'Pondering.' },
      { type: 'reasoning-end' },
      { type: 'text-delta', text: 'Fork answer.' },
      { type: 'usage', usage },
      { type: 'end', status: 'finished' },
    ]);
    const call = ccrCall(anthropicBody('Hello fork', { thinking: { type: 'enabled', budget_tokens: 4000 } }));

    const result = await transform(facade, call);
    const text = await decodedText(result.config.__providerResponse);

    expect(text).toContain('"thinking":"Pondering."');
    expect(text).toContain('signature_delta');
    expect(text).toContain('Fork answer.');
    // The original Anthropic body was parsed: its text and its thinking request reached the engine.
    const input = upstream.calls[0]?.input;
    expect(JSON.stringify(input?.prompt)).toContain('Hello fork');
    expect(JSON.stringify(input?.prompt)).not.toContain('unified text');
    expect(input?.reasoning).toMatchObject({ requested: true, budgetTokens: 4000 });
    expect(input?.model).toBe('composer-2');
    expect(text).toContain('"model":"composer-2"');
    expect(result.body).toBe(call.request);
    expect(result.config.httpsProxy).toBeUndefined();
    expect(Object.hasOwn(result.config, 'httpsProxy')).toBe(true);
    // Read directly: the loopback ticket has nothing left to serve.
    expect((await fetch(result.config.url, { method: 'POST', body: '{}' })).status).toBe(404);
  });

  it('keys sessions and reasoning on the original Anthropic body, exactly as serve does', async () => {
    const answer = [
      { type: 'text-delta' as const, text: 'ok' },
      { type: 'usage' as const, usage },
      { type: 'end' as const, status: 'finished' as const },
    ];
    const { facade, upstream } = await startFacade([answer, answer, answer]);
    const opening = { role: 'user', content: [{ type: 'text', text: 'Same opening' }] };
    const ask = async (userId: string, extra: Record<string, unknown>): Promise<void> => {
      const body = anthropicBody('unused', { metadata: { user_id: userId }, ...extra });
      const result = await transform(facade, ccrCall(body));
      await decodedText(result.config.__providerResponse);
    };
    const legacy = (session: string): string => `user_0123abcd_account__session_${session}`;
    const json = (session: string): string =>
      JSON.stringify({ device_id: 'd', account_uuid: '', session_id: session });

    await ask(json('conversation-a'), { messages: [opening], output_config: { effort: 'low' } });
    await ask(legacy('conversation-b'), { messages: [opening] });
    // Conversation b's second turn, its id now in the JSON spelling of newer Claude Code.
    await ask(json('conversation-b'), {
      messages: [
        opening,
        { role: 'assistant', content: [{ type: 'text', text: 'ok' }] },
        { role: 'user', content: [{ type: 'text', text: 'next' }] },
      ],
    });

    const sessions = upstream.calls.map((call) => call.sessionId);
    expect(sessions).toHaveLength(3);
    // The same opening under two conversation ids: two agents. Both spellings of b's id: one agent.
    expect(sessions[0]).not.toBe(sessions[1]);
    expect(sessions[2]).toBe(sessions[1]);
    expect(JSON.stringify(upstream.calls[2]?.input.prompt)).not.toContain('Same opening');
    expect(upstream.calls[0]?.input.reasoning).toMatchObject({ requested: true, effort: 'low' });
    expect(upstream.calls[1]?.input.reasoning).toMatchObject({ requested: false });
  });

  it('replays a finished answer to an identical opening within the replay window: one send, one agent', async () => {
    // An opening that repeats a known one reuses its agent within the replay window after it finished — in
    // every host, the transformer too.
    const { facade, upstream } = await startFacade([
      { type: 'text-delta', text: 'Only once.' },
      { type: 'usage', usage },
      { type: 'end', status: 'finished' },
    ]);
    const first = await decodedText(
      (await transform(facade, ccrCall(anthropicBody('Same opening')))).config.__providerResponse,
    );
    const second = await decodedText(
      (await transform(facade, ccrCall(anthropicBody('Same opening')))).config.__providerResponse,
    );
    expect(first).toContain('Only once.');
    expect(second).toContain('Only once.');
    expect(upstream.calls).toHaveLength(1);
    expect(upstream.sessions).toHaveLength(1);
  });

  it("gives Claude Code's non-streaming retry of a turn that failed in-stream a fresh run, not the replayed failure", async () => {
    const { facade, upstream } = await startFacade([
      [
        { type: 'text-delta', text: 'Half' },
        { type: 'error', error: createTurnError('overloaded', 'Cursor is overloaded.') },
      ],
      [
        { type: 'text-delta', text: 'Recovered.' },
        { type: 'usage', usage },
        { type: 'end', status: 'finished' },
      ],
    ]);
    const failed = await decodedText(
      (await transform(facade, ccrCall(anthropicBody('Flaky turn')))).config.__providerResponse,
    );
    expect(failed).toContain('overloaded');
    const retry = await transform(facade, ccrCall(anthropicBody('Flaky turn', { stream: false })));
    expect(await retry.config.__providerResponse.text()).toContain('Recovered.');
    expect(upstream.calls).toHaveLength(2);
  });

  it('serves the model CCR routed to, even one the config does not list', async () => {
    const { facade, upstream } = await startFacade([
      { type: 'text-delta', text: 'Routed.' },
      { type: 'end', status: 'finished' },
    ]);
    const call = ccrCall(anthropicBody('Which model?'));
    const result = await facade.transformRequestIn(
      {},
      { ...call.request, model: 'gpt-5.4' },
      call.provider,
      call.context,
    );
    await result.config.__providerResponse.text();
    // Without the explicit route the engine's Router would have sent the default, composer-2.
    expect(upstream.calls[0]?.input.model).toBe('gpt-5.4');
  });

  it('runs a catalog alias CCR routed to as its Cursor id, and the answer names that id', async () => {
    const { facade, upstream } = await startFacade([
      { type: 'text-delta', text: 'Routed.' },
      { type: 'end', status: 'finished' },
    ]);
    upstream.listModels = async () => [{ id: 'claude-opus-4-8', aliases: ['opus-4.8'] }];
    const call = ccrCall(anthropicBody('Which model?'));
    const result = await facade.transformRequestIn(
      {},
      { ...call.request, model: 'opus-4.8' },
      call.provider,
      call.context,
    );
    const text = await result.config.__providerResponse.text();

    expect(upstream.calls[0]?.input.model).toBe('claude-opus-4-8');
    expect(text).toContain('"model":"claude-opus-4-8"');
    expect(text).not.toContain('"model":"opus-4.8"');
  });

  it('answers through the loopback URL once, on 127.0.0.1, with the secret', async () => {
    const { facade } = await startFacade([
      { type: 'text-delta', text: 'Loopback answer.' },
      { type: 'end', status: 'finished' },
    ]);
    const result = await transform(facade, ccrCall(anthropicBody('Hello upstream')));
    const url = result.config.url;
    expect(url.hostname).toBe('127.0.0.1');
    const [, secret, ticket] = url.pathname.split('/');
    expect(secret?.length).toBeGreaterThanOrEqual(32);

    const wrongSecret = new URL(url);
    wrongSecret.pathname = `/${'x'.repeat(secret?.length ?? 0)}/${ticket}`;
    expect((await fetch(wrongSecret, { method: 'POST', body: '{}' })).status).toBe(404);

    const response = await fetch(url, { method: 'POST', body: '{}' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    expect(await decodedText(response)).toContain('Loopback answer.');
    expect((await fetch(url, { method: 'POST', body: '{}' })).status).toBe(404);
  });

  it('aborts the engine turn when CCR aborts its fetch', async () => {
    const { facade, upstream } = await startFacade([
      { type: 'text-delta', text: 'Starting. ' },
      // Only the cancel ends this wait.
      { type: 'wait', until: never },
      { type: 'text-delta', text: 'too late' },
      { type: 'end', status: 'finished' },
    ]);
    const result = await transform(facade, ccrCall(anthropicBody('Abort me')));
    const abort = new AbortController();
    const response = await fetch(result.config.url, { method: 'POST', body: '{}', signal: abort.signal });
    const reader = response.body!.getReader();
    let seen = '';
    while (!seen.includes('Starting.')) seen += new TextDecoder().decode((await reader.read()).value);
    abort.abort();

    await expect.poll(() => upstream.calls[0]?.cancelled, eventually).toBe(true);
  });

  it("aborts a non-streaming turn when Claude Code's connection closes", async () => {
    const { facade, upstream } = await startFacade([
      { type: 'wait', until: never },
      { type: 'text-delta', text: 'too late' },
      { type: 'end', status: 'finished' },
    ]);
    const socket = Object.assign(new EventEmitter(), { destroyed: false });
    const call = ccrCall(anthropicBody('Abort the JSON turn', { stream: false }));
    const pending = facade.transformRequestIn({}, call.request, call.provider, {
      req: { ...call.context.req, raw: { socket } },
    });
    await expect.poll(() => upstream.calls.length, eventually).toBe(1);
    socket.emit('close');

    const result = await pending;
    expect(upstream.calls[0]?.cancelled).toBe(true);
    expect(result.config.__providerResponse.ok).toBe(false);
    expect(socket.listenerCount('close')).toBe(0);
  });

  it('answers a refused turn with its status and an OpenAI error body', async () => {
    const { facade, upstream } = await startFacade([]);
    upstream.preflightError = createTurnError('authentication', 'Cursor rejected the API key.', {
      retryable: false,
    });
    const result = await transform(facade, ccrCall(anthropicBody('Key?')));

    expect(result.config.__providerResponse.status).toBe(403);
    const response = await fetch(result.config.url, { method: 'POST', body: '{}' });
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({ error: { message: 'Cursor rejected the API key.' } });
  });

  it('answers an invalid Anthropic body 400, naming the field', async () => {
    const { facade } = await startFacade([]);
    const result = await transform(facade, ccrCall({ max_tokens: 5, stream: true, messages: 'nope' }));
    expect(result.config.__providerResponse.status).toBe(400);
    expect(JSON.stringify(await result.config.__providerResponse.json())).toContain('messages');
  });

  it('falls back to the unified request when the client did not speak Anthropic Messages', async () => {
    const { facade, upstream } = await startFacade([
      { type: 'text-delta', text: 'Chat answer.' },
      { type: 'end', status: 'finished' },
    ]);
    const call = ccrCall({});
    const result = await facade.transformRequestIn(
      {},
      { model: 'composer-2', stream: false, messages: [{ role: 'user', content: 'From chat completions' }] },
      call.provider,
      { req: { url: '/v1/chat/completions', headers: {}, body: {} } },
    );
    const json = (await result.config.__providerResponse.json()) as {
      choices: Array<{ message: { content: string } }>;
    };
    expect(json.choices[0]?.message.content).toBe('Chat answer.');
    expect(JSON.stringify(upstream.calls[0]?.input.prompt)).toContain('From chat completions');
  });
});

describe('the loopback listener', () => {
  it('cancels a Response whose ticket was never fetched', async () => {
    const listener = await LoopbackListener.start({ logger: pino({ level: 'silent' }), ticketTtlMs: 50 });
    cleanups.push(() => listener.close());
    let cancelled = false;
    const body = new ReadableStream({ cancel: () => void (cancelled = true) });
    listener.park(new Response(body));
    expect(listener.pendingTickets).toBe(1);

    await expect.poll(() => cancelled, eventually).toBe(true);
    expect(listener.pendingTickets).toBe(0);
  });
});

describe('the transformer options as config overrides', () => {
  const file = JSON.stringify({
    transformers: [{ path: '/x/cursor-sdk.cjs', options: { cursorMode: 'agent', cursorCwd: '/from/file' } }],
    Providers: [
      {
        name: 'cursor',
        api_key: '$CURSOR_API_KEY',
        models: ['composer-2'],
        transformer: { use: ['cursor-sdk'] },
      },
    ],
  });
  const resolveWith = (options: unknown, apiKey: string | undefined, env: Record<string, string> = {}) =>
    parseConfigText(file, {
      path: '/etc/ccr/config.json',
      env,
      homedir: '/home/u',
      overrides: createTransformerOverrides(options, apiKey),
    });

  it('puts the options CCR passed this instance over the config file, and takes the key CCR passes', () => {
    expect(resolveWith({ cursorMode: 'bridge', cursorCwd: 'work' }, 'crsr_from_ccr').cursor).toMatchObject({
      mode: 'bridge',
      cwd: '/etc/ccr/work',
      apiKeyConfigured: 'crsr_from_ccr',
    });
    expect(resolveWith({ cursorCwd: '~/p' }, undefined).cursor).toMatchObject({
      mode: 'agent',
      cwd: '/home/u/p',
      apiKeyConfigured: '$CURSOR_API_KEY',
    });
  });

  it('lets the environment win over the run silence bounds CCR passes, as over the file', () => {
    const bounded = resolveWith({ firstEventTimeoutMs: 5_000, idleTimeoutMs: 7_000 }, undefined, {
      CURSOR_BRIDGE_IDLE_TIMEOUT_MS: '9000',
    });
    expect(bounded.cursor.timeouts).toEqual({ firstEventTimeoutMs: 5_000, idleTimeoutMs: 9_000 });
  });

  it('lets an option turn the sandbox on but not off', () => {
    const sandboxFile = file.replace('"cursorMode":"agent"', '"cursorMode":"agent","sandboxEnabled":true');
    const resolveSandbox = (options: unknown) =>
      parseConfigText(sandboxFile, {
        path: '/etc/ccr/config.json',
        env: {},
        homedir: '/home/u',
        overrides: createTransformerOverrides(options, undefined),
      }).cursor.sandboxEnabled;
    expect(resolveSandbox({ sandboxEnabled: false })).toBe(true);
    expect(resolveWith({ sandboxEnabled: true }, undefined).cursor.sandboxEnabled).toBe(true);
    expect(resolveWith({ sandboxEnabled: false }, undefined).cursor.sandboxEnabled).toBe(false);
  });

  it('takes the options as CCR interpolated them, without a second pass', () => {
    const config = resolveWith({ cursorCwd: '/srv/$PROJECT' }, undefined, { PROJECT: 'other' });
    expect(config.cursor.cwd).toBe('/srv/$PROJECT');
  });

  it('rejects an invalid option, naming it', () => {
    expect(() => resolveWith({ cursorMode: 'turbo' }, undefined)).toThrow(
      '/etc/ccr/config.json: transformer options.cursorMode: ',
    );
  });
});
