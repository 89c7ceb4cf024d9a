/**
 * `cursor-bridge ccr install` under Claude Code Router 3, against a fake CCR 3 service: its admin RPC
 * (token-checked, storing the config the way 3.1.1 does: provider ids, model-prefix rules turned into
 * conditions) and, on the same ephemeral port, the plugin backend's `/health`.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCcr3Install } from '../../src/cli/ccr3-install-command.js';
import { planCcr3Install, routesClaude } from '../../src/hosts/ccr/install/ccr3-install-plan.js';
import { detectCcr3 } from '../../src/hosts/ccr/install/ccr3-service.js';
import { main } from '../../src/cli/main.js';
import { createCapturedIo } from '../helpers/cli/captured-io.js';

type Json = Record<string, unknown>;

let home: string;
let configDir: string;
const servers: Server[] = [];

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'cursor-bridge-ccr3-install-'));
  configDir = join(home, '.claude-code-router');
  await mkdir(configDir, { recursive: true });
});
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
  );
  await rm(home, { recursive: true, force: true });
});

/** What CCR 3.1.1 does to a saved config: ids for providers, conditions for model-prefix rules. */
const normalise = (config: Json): Json => {
  const providers = (config['Providers'] as Json[]).map((provider) => ({
    id: `provider-${String(provider['name'])}-0001`,
    ...provider,
  }));
  const router = config['Router'] as Json;
  const rules = (router['rules'] as Json[]).map((rule) =>
    rule['type'] === 'model-prefix'
      ? {
          condition: { left: 'request.body.model', operator: 'starts-with', right: rule['pattern'] },
          enabled: true,
          id: 'rule-1',
          pattern: rule['pattern'],
          rewrites: [{ key: 'request.body.model', operation: 'set', value: rule['target'] }],
          target: rule['target'],
          type: 'condition',
        }
      : rule,
  );
  return { ...config, Providers: providers, Router: { ...router, rules } };
};

const startFakeCcr3 = async (initial: Json = {}) => {
  const token = 'web-token-1';
  let config: Json = {
    APIKEY: 'sk-ccr-test',
    Providers: [],
    Router: { builtInRules: {}, rules: [] },
    plugins: [],
    ...initial,
  };
  const calls: string[] = [];
  let state = 'error';
  const server = createServer((request, response) => {
    if (request.method === 'GET' && request.url === '/health') {
      response.writeHead(state === 'running' ? 200 : 503).end('{}');
      return;
    }
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const send = (status: number, value: unknown) =>
        response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      if (request.headers['x-ccr-web-auth'] !== token)
        return send(401, { ok: false, error: { message: 'Unauthorized' } });
      const { method, args } = JSON.parse(body) as { method: string; args: unknown[] };
      calls.push(method);
      switch (method) {
        case 'getAppInfo':
          return send(200, { ok: true, value: { version: '3.1.1', configDir } });
        case 'getConfig':
          return send(200, { ok: true, value: config });
        case 'saveConfig':
          config = normalise(args[0] as Json);
          state = 'running';
          return send(200, { ok: true, value: config });
        case 'getGatewayStatus':
          return send(200, { ok: true, value: { state } });
        case 'restartGateway':
          state = 'running';
          return send(200, { ok: true, value: { state } });
        default:
          return send(400, { ok: false, error: { message: `unknown method ${method}` } });
      }
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await writeFile(
    join(configDir, 'service.json'),
    JSON.stringify({ pid: process.pid, url: `http://127.0.0.1:${port}/?ccr_web_token=${token}` }),
    { mode: 0o600 },
  );
  return { port, calls, config: () => config };
};

const install = async (port: number, listModels?: () => Promise<string[]>) => {
  const captured = createCapturedIo({ homedir: home });
  const setup = await detectCcr3(configDir);
  if (setup.kind === 'none') throw new Error('no CCR 3 detected');
  const code = await runCcr3Install(captured.io, {
    configDir,
    setup,
    modulePath: '/opt/cursor-bridge/ccr/ccr3-plugin.mjs',
    port,
    backendWaitMs: 5_000,
    ...(listModels === undefined ? {} : { listModels }),
  });
  return { code, stdout: captured.stdout(), stderr: captured.stderr() };
};

describe('cursor-bridge ccr install under CCR 3', () => {
  it('adds the provider, the plugin entry with a shared secret and the claude rule; a re-run has nothing to do', async () => {
    const ccr = await startFakeCcr3();
    const first = await install(ccr.port, async () => ['composer-2', 'gpt-5']);
    expect(first).toMatchObject({ code: 0 });
    expect(first.stdout).toMatch(/provider "cursor": added/);
    expect(first.stdout).toMatch(/plugin "cursor-bridge": added/);
    expect(first.stdout).toMatch(/"claude" → cursor\/composer-2/);

    const saved = ccr.config();
    const provider = (saved['Providers'] as Json[])[0]!;
    const plugin = (saved['plugins'] as Json[])[0]!;
    expect(provider).toMatchObject({
      name: 'cursor',
      type: 'anthropic_messages',
      api_base_url: `http://127.0.0.1:${ccr.port}`,
      models: ['composer-2', 'gpt-5'],
    });
    expect(plugin).toEqual({
      id: 'cursor-bridge',
      enabled: true,
      module: '/opt/cursor-bridge/ccr/ccr3-plugin.mjs',
      surfaces: { gateway: true, apps: false, provider: false },
      permissions: ['trusted-code', 'http-backends'],
      config: { port: ccr.port, apiKey: provider['api_key'], models: ['composer-2', 'gpt-5'] },
    });
    expect(provider['api_key']).toMatch(/^cb-[\w-]{32}$/);

    const again = await install(ccr.port, async () => ['composer-2', 'gpt-5']);
    expect(again).toMatchObject({ code: 0 });
    expect(again.stdout).toMatch(/already installed; nothing to do/);
    expect(ccr.calls.filter((call) => call === 'saveConfig')).toHaveLength(1);
    // Never a config.json in CCR 3's directory.
    expect(existsSync(join(configDir, 'config.json'))).toBe(false);
  });

  it('keeps a rule that already routes claude models, the provider id and an existing secret', async () => {
    const ccr = await startFakeCcr3({
      Providers: [
        {
          id: 'provider-cursor-9',
          name: 'cursor',
          api_base_url: 'http://x',
          api_key: 'old',
          models: ['composer-2'],
          transformer: { use: ['cursor-sdk'] },
        },
      ],
      Router: {
        rules: [
          {
            type: 'condition',
            enabled: true,
            condition: { left: 'request.body.model', operator: 'starts-with', right: 'claude-' },
            target: 'other/model',
          },
        ],
      },
      plugins: [
        {
          id: 'cursor-bridge',
          enabled: false,
          module: '/old.mjs',
          config: { apiKey: 'cb-kept', cursorMode: 'plan' },
        },
      ],
    });
    const result = await install(ccr.port);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).not.toMatch(/rule:/);
    const saved = ccr.config();
    expect((saved['Providers'] as Json[])[0]).toEqual({
      id: 'provider-cursor-9',
      name: 'cursor',
      type: 'anthropic_messages',
      api_base_url: `http://127.0.0.1:${ccr.port}`,
      api_key: 'cb-kept',
      models: ['composer-2'],
    });
    expect((saved['plugins'] as Json[])[0]).toMatchObject({
      enabled: true,
      module: '/opt/cursor-bridge/ccr/ccr3-plugin.mjs',
      config: { apiKey: 'cb-kept', cursorMode: 'plan' },
    });
    expect((saved['Router'] as Json)['rules']).toHaveLength(1);
  });

  it('gives the plugin every model the provider offers, also ones added in CCR', async () => {
    const ccr = await startFakeCcr3({
      Providers: [{ name: 'cursor', models: ['my-extra-model'] }],
    });
    expect((await install(ccr.port, async () => ['composer-2'])).code).toBe(0);
    const plugin = (ccr.config()['plugins'] as Json[])[0]!;
    expect(plugin['config']).toMatchObject({ models: ['my-extra-model', 'composer-2'] });
    expect(((ccr.config()['Providers'] as Json[])[0] as Json)['models']).toEqual([
      'my-extra-model',
      'composer-2',
    ]);
  });

  it('offers composer-2 when the catalog cannot be listed, and says why', async () => {
    const ccr = await startFakeCcr3();
    const result = await install(ccr.port, () => Promise.reject(new Error('Cursor API key not found')));
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(
      /could not list Cursor's models \(Cursor API key not found\); offering composer-2/,
    );
    expect(((ccr.config()['Providers'] as Json[])[0] as Json)['models']).toEqual(['composer-2']);
  });

  it('installed but not running: exit 2 with exactly what to run, and writes nothing', async () => {
    await writeFile(join(configDir, 'config.sqlite'), '');
    const captured = createCapturedIo({ homedir: home });
    const code = await main(['ccr', 'install'], captured.io);
    expect(code).toBe(2);
    expect(captured.stderr()).toContain(
      `Claude Code Router 3 is installed here (${join(configDir, 'config.sqlite')})`,
    );
    expect(captured.stderr()).toContain('Run:\n  ccr start\n  cursor-bridge ccr install\n');
    expect(existsSync(join(configDir, 'config.json'))).toBe(false);
  });

  it('a service.json whose process is gone counts as not running', async () => {
    await writeFile(
      join(configDir, 'service.json'),
      JSON.stringify({ pid: 2 ** 22 + 12345, url: 'http://127.0.0.1:1/?ccr_web_token=t' }),
    );
    expect(await detectCcr3(configDir)).toMatchObject({ kind: 'stopped' });
  });

  it('a wrong token is a clear failure (exit 1), not a retry', async () => {
    const ccr = await startFakeCcr3();
    await writeFile(
      join(configDir, 'service.json'),
      JSON.stringify({ pid: process.pid, url: `http://127.0.0.1:${ccr.port}/?ccr_web_token=wrong` }),
    );
    const captured = createCapturedIo({ homedir: home });
    expect(await main(['ccr', 'install'], captured.io)).toBe(1);
    expect(captured.stderr()).toMatch(/CCR admin RPC getAppInfo: HTTP 401: Unauthorized/);
  });
});

describe('routesClaude', () => {
  it('sees model-prefix and condition rules for claude models, not disabled or other ones', () => {
    expect(routesClaude({ type: 'model-prefix', pattern: 'claude' })).toBe(true);
    expect(routesClaude({ type: 'model-prefix', pattern: 'cl' })).toBe(true);
    expect(
      routesClaude({
        type: 'condition',
        condition: { left: 'request.body.model', operator: 'starts-with', right: 'claude-opus' },
      }),
    ).toBe(true);
    expect(routesClaude({ type: 'model-prefix', pattern: 'claude', enabled: false })).toBe(false);
    expect(routesClaude({ type: 'model-prefix', pattern: 'gpt' })).toBe(false);
    expect(
      routesClaude({
        type: 'condition',
        condition: { left: 'request.headers.x', operator: '==', right: 'claude' },
      }),
    ).toBe(false);
  });

  it('plans the rule at the front, so it wins over existing catch-alls', () => {
    const plan = planCcr3Install(
      {
        Providers: [],
        Router: { rules: [{ type: 'model-prefix', pattern: 'gpt', target: 'x/y' }] },
        plugins: [],
      },
      { modulePath: '/m.mjs', port: 3460, secret: 's', models: ['gpt-5'] },
    );
    expect((plan.config['Router'] as Json)['rules']).toEqual([
      { type: 'model-prefix', pattern: 'claude', target: 'cursor/gpt-5' },
      { type: 'model-prefix', pattern: 'gpt', target: 'x/y' },
    ]);
  });
});
