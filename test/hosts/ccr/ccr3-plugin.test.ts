/**
 * The CCR 3 plugin with a fake CCR plugin context (its `registerHttpBackend` is a plain loopback server on
 * an ephemeral port, as CCR's is on a fixed one) and the scripted upstream: what CCR's gateway restarts and
 * stops do to the engine, and the plugin's config rules.
 */
import { createServer, type Server } from 'node:http';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../../../src/config/config-error.js';
import { resolveCursorApiKey } from '../../../src/config/cursor-auth.js';
import { resolveCcr3PluginConfig, defaultCcr3PluginPort } from '../../../src/hosts/ccr/ccr3-plugin-config.js';
import {
  createCcr3Plugin,
  type Ccr3Plugin,
  type Ccr3PluginContext,
} from '../../../src/hosts/ccr/ccr3-plugin.js';
import { ScriptedUpstream, type ScriptSource } from '../../../src/upstream/scripted/scripted-upstream.js';
import { ensureBuilt } from '../../helpers/ensure-built.js';
import { never } from '../../helpers/gate.js';
import { repoRoot } from '../../helpers/repo-root.js';

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

const secret = 'cb-test-secret';

/** A CCR-like plugin context; `backends` are the servers its `registerHttpBackend` opened. */
/** The HOME of the latest {@link fakeContext} (tests in a file run one at a time). */
let currentHome = tmpdir();

const fakeContext = async (pluginConfig: Record<string, unknown>) => {
  const home = await mkdtemp(join(tmpdir(), 'cursor-bridge-ccr3-'));
  currentHome = home;
  const configDir = join(home, '.claude-code-router');
  const servers: Server[] = [];
  const messages: string[] = [];
  const closeServers = async () => {
    await Promise.all(
      servers.splice(0).map(
        (server) =>
          new Promise<void>((resolve) => {
            server.closeAllConnections();
            server.close(() => resolve());
          }),
      ),
    );
  };
  cleanup.push(async () => {
    await closeServers();
    await rm(home, { recursive: true, force: true });
  });
  const context: Ccr3PluginContext & { url?: string } = {
    pluginConfig: { cursorWorkspacesDir: join(home, 'workspaces'), ...pluginConfig },
    logger: { info: (message) => messages.push(message), warn: (message) => messages.push(message) },
    paths: { configDir, pluginDataDir: join(configDir, 'plugins', 'cursor-bridge') },
    registerHttpBackend: async ({ handler }) => {
      const server = createServer(handler);
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      context.url = url;
      return { url, port: (server.address() as AddressInfo).port };
    },
  };
  return { home, context, messages, workspaces: join(home, 'workspaces'), closeServers };
};

const bashTool = {
  name: 'Bash',
  description: 'Run a shell command',
  input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
};

const post = async (url: string, messages: unknown[], key: string | null = secret) => {
  const response = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-claude-code-session-id': 'ccr3-plugin-1',
      ...(key === null ? {} : { 'x-api-key': key }),
    },
    body: JSON.stringify({ model: 'composer-2', max_tokens: 100, tools: [bashTool], messages }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

const toolTurn: ScriptSource = [
  { type: 'text-delta', text: 'Running it.' },
  { type: 'tool-call', toolCallId: 'toolu_1', toolName: 'Bash', input: { command: 'echo hi' } },
  { type: 'tool-batch-end' },
  { type: 'await-tool-results' },
  {
    type: 'emit',
    events: ({ toolResults }) => [
      { type: 'text-delta', text: `Tool said: ${JSON.stringify(toolResults[0]?.content)}` },
      { type: 'end', status: 'finished' },
    ],
  },
];

const startPlugin = (upstream: ScriptedUpstream) => {
  const plugin = createCcr3Plugin({
    env: { CURSOR_API_KEY: 'crsr_test' },
    homedir: currentHome,
    upstream,
    registry: { drainTimeoutMs: 200 },
  });
  cleanup.push(() => plugin.stop({ reason: 'stop' }));
  return plugin;
};

const user = { role: 'user', content: 'Run it.' };

describe('the CCR 3 plugin', () => {
  it('serves the bridge on its HTTP backend behind the provider secret', async () => {
    const { context } = await fakeContext({ apiKey: secret });
    const plugin = startPlugin(
      new ScriptedUpstream([
        { type: 'text-delta', text: 'Hi from Cursor' },
        { type: 'end', status: 'finished' },
      ]),
    );
    await plugin.setup(context);

    expect((await post(context.url!, [user], null)).status).toBe(401);
    const answer = await post(context.url!, [user]);
    expect(answer.status).toBe(200);
    expect(answer.body['content']).toEqual([{ type: 'text', text: 'Hi from Cursor' }]);
  });

  it('keeps the engine through a reload with equal settings: the parked call resumes on the same run', async () => {
    const { context, messages } = await fakeContext({ apiKey: secret });
    const upstream = new ScriptedUpstream(toolTurn);
    const plugin = startPlugin(upstream);
    await plugin.setup(context);
    const first = await post(context.url!, [user]);
    expect(first.body['stop_reason']).toBe('tool_use');
    const toolUse = (first.body['content'] as Array<Record<string, unknown>>).find(
      (b) => b['type'] === 'tool_use',
    );
    const engine = plugin.registry.current;

    // What a gateway restart does: stop({ reason: "reload" }), the backend closes, setup on a new instance.
    await plugin.stop({ reason: 'reload' });
    await plugin.setup(context);
    expect(plugin.registry.current).toBe(engine);
    expect(messages.at(-1)).toMatch(/kept its engine/);

    const second = await post(context.url!, [
      user,
      { role: 'assistant', content: first.body['content'] },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: toolUse?.['id'], content: 'PARKED-777' }],
      },
    ]);
    expect(second.status).toBe(200);
    expect(JSON.stringify(second.body['content'])).toContain('PARKED-777');
    expect(upstream.calls).toHaveLength(1);
  });

  it('replaces the engine when the settings change, and closes the old one', async () => {
    const { context, workspaces } = await fakeContext({ apiKey: secret });
    const plugin = startPlugin(
      new ScriptedUpstream([
        { type: 'text-delta', text: 'ok' },
        { type: 'end', status: 'finished' },
      ]),
    );
    await plugin.setup(context);
    await post(context.url!, [user]);
    const old = plugin.registry.current;
    expect(await readdir(workspaces)).toHaveLength(1);

    await plugin.stop({ reason: 'reload' });
    await plugin.setup({
      ...context,
      pluginConfig: { ...(context.pluginConfig as object), cursorMode: 'plan' },
    });
    expect(plugin.registry.current).not.toBe(old);
    expect(old?.bridge.engine).toBeDefined();
    // The old engine drains in the background; its scratch workspace goes with it.
    await vi.waitFor(
      async () => expect(existsSync(workspaces) ? await readdir(workspaces) : []).toEqual([]),
      { timeout: 30_000, interval: 20 },
    );
  });

  it('on stop drains within its bound, ends a parked run and removes every scratch workspace', async () => {
    const { context, workspaces, home } = await fakeContext({ apiKey: secret });
    const plugin = startPlugin(
      new ScriptedUpstream([
        { type: 'tool-call', toolCallId: 'toolu_9', toolName: 'Bash', input: { command: 'sleep 1' } },
        { type: 'tool-batch-end' },
        { type: 'wait', until: never },
        { type: 'end', status: 'finished' },
      ]),
    );
    await plugin.setup(context);
    expect((await post(context.url!, [user])).body['stop_reason']).toBe('tool_use');
    expect(await readdir(workspaces)).toHaveLength(1);

    await plugin.stop({ reason: 'stop' });
    expect(plugin.registry.current).toBeUndefined();
    expect(existsSync(workspaces) ? await readdir(workspaces) : []).toEqual([]);
    const log = await readFile(
      join(home, '.claude-code-router', 'plugins', 'cursor-bridge', 'cursor-bridge.log'),
      'utf8',
    );
    expect(log).toContain('"abandoned":1');
    // No conversation text in the plugin's log.
    expect(log).not.toContain('Run it.');
  });

  it('a backend CCR cannot open (port taken) fails setup and leaves no engine behind', async () => {
    const { context } = await fakeContext({ apiKey: secret });
    const plugin = startPlugin(new ScriptedUpstream([{ type: 'end', status: 'finished' }]));
    const refused = Object.assign(new Error('listen EADDRINUSE: address already in use 127.0.0.1:3460'), {
      code: 'EADDRINUSE',
    });
    await expect(
      plugin.setup({ ...context, registerHttpBackend: () => Promise.reject(refused) }),
    ).rejects.toThrow('EADDRINUSE');
    expect(plugin.registry.current).toBeUndefined();
  });

  it('disabling closes the engine too', async () => {
    const { context } = await fakeContext({ apiKey: secret });
    const plugin = startPlugin(new ScriptedUpstream([{ type: 'end', status: 'finished' }]));
    await plugin.setup(context);
    await plugin.stop({ reason: 'disabled' });
    expect(plugin.registry.current).toBeUndefined();
  });
});

describe('the CCR 3 plugin config', () => {
  const host = { configDir: '/home/u/.claude-code-router', env: {}, homedir: '/home/u' };

  it('defaults to port 3460, composer-2, bridge mode and no client key (with a warning)', () => {
    const settings = resolveCcr3PluginConfig(undefined, host);
    expect(settings.port).toBe(defaultCcr3PluginPort);
    expect(settings.config.cursor).toMatchObject({ mode: 'bridge', models: ['composer-2'] });
    expect(settings.config.apiKey).toBeUndefined();
    expect(settings.config.warnings.join('\n')).toMatch(/no apiKey/);
  });

  it('takes a Router of its own: Router.webSearch picks the model of web search requests', () => {
    const settings = resolveCcr3PluginConfig(
      { Router: { default: 'cursor,composer-2', webSearch: 'cursor,gpt-5.4' } },
      host,
    );
    expect(settings.config.router).toMatchObject({
      default: 'cursor,composer-2',
      webSearch: 'cursor,gpt-5.4',
    });
    expect(settings.config.warnings.join('\n')).not.toContain('unknown keys');
  });

  it('maps its keys onto the bridge config, relative paths against CCR’s config dir', () => {
    const settings = resolveCcr3PluginConfig(
      {
        port: 3999,
        apiKey: 's',
        models: ['gpt-5'],
        cursorMode: 'agent',
        cursorCwd: 'proj',
        cursorTemplatesDir: 'tpl',
      },
      host,
    );
    expect(settings.port).toBe(3999);
    expect(settings.config.apiKey).toBe('s');
    expect(settings.config.cursor).toMatchObject({
      mode: 'agent',
      cwd: '/home/u/.claude-code-router/proj',
      models: ['gpt-5'],
    });
    expect(settings.config.templatesDir).toBe('/home/u/.claude-code-router/tpl');
    expect(settings.config.workspacesDir).toBe('/home/u/.claude-code-router/cursor-sdk-workspaces');
  });

  it('takes a crsr_ cursorApiKey over CCR’s CURSOR_API_KEY, and CURSOR_API_KEY otherwise', () => {
    const env = { CURSOR_API_KEY: 'crsr_from_env' };
    const own = resolveCcr3PluginConfig({ cursorApiKey: 'crsr_own' }, { ...host, env });
    expect(resolveCursorApiKey(own.config.cursor.apiKeyConfigured, env)).toMatchObject({
      ok: true,
      value: { apiKey: 'crsr_own' },
    });
    const none = resolveCcr3PluginConfig({}, { ...host, env });
    expect(resolveCursorApiKey(none.config.cursor.apiKeyConfigured, env)).toMatchObject({
      ok: true,
      value: { apiKey: 'crsr_from_env', source: 'env' },
    });
  });

  it('interpolates $VAR in its values as in config.json, its cursor options and key included', () => {
    const env = { PROJECT: 'app', OWN_KEY: 'crsr_own', LEVEL: 'debug' };
    const settings = resolveCcr3PluginConfig(
      { cursorMode: 'agent', cursorCwd: '~/$PROJECT', cursorApiKey: '${OWN_KEY}', LOG_LEVEL: '$LEVEL' },
      { ...host, env },
    );
    expect(settings.config.cursor).toMatchObject({ cwd: '/home/u/app', apiKeyConfigured: 'crsr_own' });
    expect(settings.config.logLevel).toBe('debug');
  });

  it('names the plugin config field at fault', () => {
    expect(() => resolveCcr3PluginConfig({ cursorMode: 'yolo' }, host)).toThrow(ConfigError);
    expect(() => resolveCcr3PluginConfig({ cursorMode: 'yolo' }, host)).toThrow(
      /plugins\[cursor-bridge\]\.config: cursorMode:/,
    );
    expect(() => resolveCcr3PluginConfig({ port: 'x' }, host)).toThrow(/: port:/);
  });

  it('gives equal settings equal engine keys, whatever the key order or port', () => {
    const a = resolveCcr3PluginConfig({ apiKey: 's', cursorMode: 'plan', port: 1 }, host);
    const b = resolveCcr3PluginConfig({ cursorMode: 'plan', apiKey: 's', port: 2 }, host);
    const c = resolveCcr3PluginConfig({ cursorMode: 'plan', apiKey: 't' }, host);
    expect(a.engineKey).toBe(b.engineKey);
    expect(c.engineKey).not.toBe(a.engineKey);
  });
});

describe('ccr/ccr3-plugin.mjs, the file CCR imports', () => {
  it('shares one engine between fresh imports (CCR adds ?v= on every reload)', async () => {
    await ensureBuilt();
    const { context, messages } = await fakeContext({ apiKey: secret, cursorWarmWorkspaces: 0 });
    const entry = pathToFileURL(join(repoRoot, 'ccr', 'ccr3-plugin.mjs')).href;
    const first = (await import(/* @vite-ignore */ `${entry}?v=1`)) as { default: Ccr3Plugin };
    const second = (await import(/* @vite-ignore */ `${entry}?v=2`)) as Ccr3Plugin;
    await first.default.setup(context);
    cleanup.push(() => second.stop({ reason: 'stop' }));
    await first.default.stop({ reason: 'reload' });
    await second.setup(context);
    expect(messages.filter((message) => /engine started/.test(message))).toHaveLength(1);
    expect(messages.at(-1)).toMatch(/kept its engine/);
    const health = await fetch(`${context.url}/health`);
    expect(health.status).toBe(200);
  });
});
