/**
 * The console over real HTTP, wired as `serve` wires it (`createBridge` over a scripted upstream): the page
 * and its libraries, the API key and the login cookie, the state and template routes, and the live feed —
 * including a save through the console that the template watcher reloads and announces on the feed.
 */

import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { templateNames } from '../../../src/workspace/template-store.js';
import {
  openConsoleFeed,
  rawRequest,
  startConsoleBridge,
  type ConsoleBridge,
  type ConsoleFeed,
} from '../../helpers/console-bridge.js';
import { repoRoot } from '../../helpers/repo-root.js';
import { until } from '../../helpers/until.js';

const apiKey = 'sk-console-test-6f1d2e';
const consoleHeader = { 'x-cursor-bridge-console': '1' };
const json = { 'content-type': 'application/json' };
const claudeCodeAgent = 'claude-cli/2.1.197 (external, sdk-cli)';
const hostRoot = '/home/dev/console-project';
const environment =
  '# Environment\nYou have been invoked in the following environment: \n' +
  ` - Primary working directory: ${hostRoot}\n - Platform: linux\n`;

const markers = {
  user: 'user-marker-a91f3c',
  answer: 'answer-marker-07be52',
};

const answer = (text: string) => [
  { type: 'text-delta' as const, text },
  {
    type: 'usage' as const,
    usage: { inputTokens: 12, outputTokens: 3, cacheReadTokens: 0, cacheWriteTokens: 0 },
  },
  { type: 'end' as const, status: 'finished' as const },
];

let started: ConsoleBridge[] = [];
let feeds: ConsoleFeed[] = [];
afterEach(async () => {
  for (const feed of feeds) feed.abort();
  feeds = [];
  for (const bridge of started.reverse()) await bridge.close();
  started = [];
});

const start = async (
  options: {
    apiKey?: string;
    watchTemplates?: boolean;
    text?: string;
    config?: Record<string, unknown>;
  } = {},
) => {
  const bridge = await startConsoleBridge({
    source: answer(options.text ?? 'ok'),
    config: { ...options.config, ...(options.apiKey === undefined ? {} : { APIKEY: options.apiKey }) },
    ...(options.watchTemplates === undefined ? {} : { watchTemplates: options.watchTemplates }),
  });
  started.push(bridge);
  return bridge;
};

const feed = (url: string, headers: Record<string, string> = {}): ConsoleFeed => {
  const opened = openConsoleFeed(url, headers);
  feeds.push(opened);
  return opened;
};

/** One Claude Code turn through `/v1/messages` (not streamed), with the environment block. */
const claudeTurn = async (url: string, text: string, headers: Record<string, string> = {}) => {
  const response = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { ...json, 'user-agent': claudeCodeAgent, 'x-claude-code-session-id': 'console-s1', ...headers },
    body: JSON.stringify({
      model: 'composer-2',
      max_tokens: 100,
      system: environment,
      tools: [{ name: 'Bash', input_schema: { type: 'object' } }],
      messages: [{ role: 'user', content: text }],
    }),
  });
  return { status: response.status, body: await response.text() };
};

type Issue = { message: string; line?: number; column?: number };

/** What the console's JSON routes answer, loosely: each test reads the fields of the route it called. */
type ConsoleBody = {
  error: { type: string; message: string; issues: Issue[] };
  process: Record<string, unknown> & {
    pid: number;
    sessions: number;
    uptimeSeconds: number;
    rssBytes: number;
    heapUsedBytes: number;
    cpuPercent: number;
    startedAt: string;
  };
  conversations: Array<Record<string, unknown> & { session: string }>;
  sideCalls: Record<string, unknown>;
  bucketMs: number;
  buckets: Array<{ turns: { finished: number } }>;
  models: Array<{ id: string }>;
  router: Record<string, unknown>;
  templates: Array<{
    name: string;
    source: { origin: string };
    text: string;
    overrideText: string | null;
    overridePath: string | null;
  }>;
  sessions: Array<{ session: string; root: string | null; platform: string | null }> | null;
  placeholders: Array<{ name: string }>;
  against: string;
  ok: boolean;
  text: string;
  issues: Issue[];
};

const getJson = async (url: string, headers: Record<string, string> = {}) => {
  const response = await fetch(url, { headers });
  return { status: response.status, headers: response.headers, body: (await response.json()) as ConsoleBody };
};

const send = async (url: string, method: string, body: unknown, headers: Record<string, string> = {}) => {
  const response = await fetch(url, {
    method,
    headers: { ...json, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as ConsoleBody };
};

const exists = (path: string): Promise<boolean> =>
  stat(path).then(
    () => true,
    () => false,
  );

describe('the console page and its libraries', () => {
  it('serves the page with a content security policy, and each library as JavaScript', async () => {
    const { url } = await start();
    for (const path of ['/console', '/console/']) {
      const page = await fetch(`${url}${path}`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const policy = page.headers.get('content-security-policy') ?? '';
      expect(policy).toContain("default-src 'self'");
      expect(policy).toContain("script-src 'self'");
      expect(policy).toContain("frame-ancestors 'none'");
      expect(page.headers.get('x-content-type-options')).toBe('nosniff');
      expect(await page.text()).toBe(await readFile(join(repoRoot, 'console', 'index.html'), 'utf8'));
    }
    for (const path of [
      'console.js',
      'console-api.js',
      'console-format.js',
      'template-editor.js',
      'vendor/preact.mjs',
      'vendor/preact-hooks.mjs',
      'vendor/htm.mjs',
      'vendor/uPlot.esm.js',
    ]) {
      const file = await fetch(`${url}/console/${path}`);
      expect(file.status, path).toBe(200);
      expect(file.headers.get('content-type'), path).toBe('text/javascript; charset=utf-8');
      expect(file.headers.get('content-security-policy'), path).toContain("default-src 'self'");
      expect((await file.text()).length, path).toBeGreaterThan(100);
    }
    const css = await fetch(`${url}/console/console.css`);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect((await fetch(`${url}/console/vendor/uPlot.min.css`)).headers.get('content-type')).toBe(
      'text/css; charset=utf-8',
    );
  });

  it('links Preact’s hooks to the served Preact (no bare "preact" import a browser cannot resolve)', async () => {
    const { url } = await start();
    const hooks = await (await fetch(`${url}/console/vendor/preact-hooks.mjs`)).text();
    expect(hooks).toContain('from"./preact.mjs"');
    expect(hooks).not.toMatch(/from\s*["']preact["']/);
    const preact = await (await fetch(`${url}/console/vendor/preact.mjs`)).text();
    expect(preact).toContain('export');
  });

  it('answers 404 for any other file, and serves nothing outside its own files', async () => {
    const { url } = await start();
    for (const path of [
      '/console/x',
      '/console/index.htm',
      '/console/vendor/preact',
      '/console/%2e%2e/package.json',
      '/console/vendor/%2e%2e/%2e%2e/package.json',
      '/console/..%2fpackage.json',
    ]) {
      const response = await fetch(`${url}${path}`);
      const body = await response.text();
      expect(body, path).not.toContain('"devDependencies"');
      expect(response.status, path).not.toBe(200);
    }
    const missing = await getJson(`${url}/console/x`);
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ error: { type: 'not_found_error' } });
  });

  it('answers HEAD without a body and refuses other methods on the page', async () => {
    const { port, url } = await start();
    const head = await rawRequest(port, { method: 'HEAD', path: '/console' });
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    expect(head.headers['content-type']).toBe('text/html; charset=utf-8');
    const post = await fetch(`${url}/console`, { method: 'POST' });
    expect(post.status).toBe(405);
  });

  it('without an API key, answers only requests addressed to an address or localhost', async () => {
    const { port } = await start();
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, 'LOCALHOST']) {
      expect((await rawRequest(port, { path: '/console', headers: { host } })).status, host).toBe(200);
    }
    for (const host of ['evil.example', `rebound.example:${port}`, '127.0.0.1.nip.io']) {
      const answer = await rawRequest(port, { path: '/console/api/state', headers: { host } });
      expect(answer.status, host).toBe(403);
      expect(answer.body).not.toContain('"conversations"');
      expect((await rawRequest(port, { path: '/console', headers: { host } })).status, host).toBe(403);
    }
  });

  it('with an API key, the key is the guard whatever the Host says', async () => {
    const { port } = await start({ apiKey });
    expect((await rawRequest(port, { path: '/console', headers: { host: 'bridge.example' } })).status).toBe(
      200,
    );
    const state = await rawRequest(port, {
      path: '/console/api/state',
      headers: { host: 'bridge.example', 'x-api-key': apiKey },
    });
    expect(state.status).toBe(200);
  });
});

describe('console authentication', () => {
  it('serves the page shell without the key, and its data only with it', async () => {
    const { url } = await start({ apiKey });
    expect((await fetch(`${url}/console`)).status).toBe(200);
    expect((await fetch(`${url}/console/console.js`)).status).toBe(200);
    for (const route of ['state', 'history', 'models', 'templates', 'events']) {
      const denied = await fetch(`${url}/console/api/${route}`);
      expect(denied.status, route).toBe(401);
      expect(await denied.json(), route).toMatchObject({ error: { type: 'authentication_error' } });
      const wrong = await fetch(`${url}/console/api/${route}`, { headers: { 'x-api-key': 'sk-wrong' } });
      expect(wrong.status, route).toBe(401);
      await wrong.body?.cancel();
    }
    expect((await getJson(`${url}/console/api/state`, { 'x-api-key': apiKey })).status).toBe(200);
    expect((await getJson(`${url}/console/api/state`, { authorization: `Bearer ${apiKey}` })).status).toBe(
      200,
    );
  });

  it('logs in with the key: an HttpOnly, SameSite=Strict cookie scoped to /console that never holds the key', async () => {
    const { url } = await start({ apiKey });
    const wrong = await send(`${url}/console/api/login`, 'POST', { key: 'sk-wrong' }, consoleHeader);
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    const empty = await send(`${url}/console/api/login`, 'POST', {}, consoleHeader);
    expect(empty.status).toBe(401);

    const login = await send(`${url}/console/api/login`, 'POST', { key: apiKey }, consoleHeader);
    expect(login.status).toBe(200);
    expect(login.body).toEqual({ ok: true });
    const cookie = login.headers.get('set-cookie') ?? '';
    expect(cookie).not.toContain(apiKey);
    const attributes = cookie.split(';').map((part) => part.trim());
    expect(attributes).toContain('HttpOnly');
    expect(attributes).toContain('SameSite=Strict');
    expect(attributes).toContain('Path=/console');
    expect(attributes.some((part) => /^Max-Age=\d+$/.test(part) && part !== 'Max-Age=0')).toBe(true);
    const [pair] = attributes;
    expect(pair).toMatch(/^[a-z_]+=[0-9a-f]{32,}$/);

    const withCookie = { cookie: pair ?? '' };
    const state = await getJson(`${url}/console/api/state`, withCookie);
    expect(state.status).toBe(200);
    expect(state.body.process.pid).toBe(process.pid);
    expect((await getJson(`${url}/console/api/templates`, withCookie)).status).toBe(200);
    // Other cookies beside it are fine; a forged token is not.
    expect((await getJson(`${url}/console/api/state`, { cookie: `theme=dark; ${pair ?? ''}` })).status).toBe(
      200,
    );
    const forged = (pair ?? '').replace(/=.*/, `=${'0'.repeat(64)}`);
    expect((await getJson(`${url}/console/api/state`, { cookie: forged })).status).toBe(401);

    const logout = await send(`${url}/console/api/logout`, 'POST', {}, consoleHeader);
    expect(logout.status).toBe(200);
    expect(logout.headers.get('set-cookie')).toMatch(/Max-Age=0/);
  });

  it('refuses a login without the console header', async () => {
    const { url } = await start({ apiKey });
    const login = await send(`${url}/console/api/login`, 'POST', { key: apiKey });
    expect(login.status).toBe(403);
    expect(login.headers.get('set-cookie')).toBeNull();
    expect(login.body).toMatchObject({ error: { type: 'permission_error' } });
  });

  it('refuses changing template requests without the console header, even with the key', async () => {
    const bridge = await start({ apiKey });
    const { url, templatesDir } = bridge;
    const key = { 'x-api-key': apiKey };
    const attempts = [
      send(`${url}/console/api/templates/prompt-head.md`, 'PUT', { text: 'forged {{root}}' }, key),
      send(`${url}/console/api/templates/prompt-head.md`, 'DELETE', {}, key),
      send(`${url}/console/api/templates/preview`, 'POST', { name: 'prompt-head.md', text: 'x' }, key),
    ];
    for (const attempt of await Promise.all(attempts)) {
      expect(attempt.status).toBe(403);
      expect(attempt.body).toMatchObject({ error: { type: 'permission_error' } });
    }
    expect(await exists(join(templatesDir, 'prompt-head.md'))).toBe(false);
    // With the header (and the key) the same save goes through.
    const saved = await send(
      `${url}/console/api/templates/prompt-head.md`,
      'PUT',
      { text: 'allowed {{root}}' },
      { ...key, ...consoleHeader },
    );
    expect(saved.status).toBe(200);
  });

  it('does not let the console cookie authorize anything outside the console', async () => {
    const { url, upstream } = await start({ apiKey });
    const login = await send(`${url}/console/api/login`, 'POST', { key: apiKey }, consoleHeader);
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    expect(cookie).not.toBe('');
    const turn = await claudeTurn(url, 'hello', { cookie });
    expect(turn.status).toBe(401);
    expect(upstream.calls).toHaveLength(0);
    for (const path of ['/v1/models', '/metrics', '/debug/conversations']) {
      const response = await fetch(`${url}${path}`, { headers: { cookie } });
      expect(response.status, path).toBe(401);
      await response.body?.cancel();
    }
    expect((await claudeTurn(url, 'hello', { 'x-api-key': apiKey })).status).toBe(200);
  });
});

describe('GET /console/api/state', () => {
  it('shows the process, then the conversation a turn started, with no text of it', async () => {
    const { url } = await start({ text: `Here: ${markers.answer}` });
    const before = await getJson(`${url}/console/api/state`);
    expect(before.status).toBe(200);
    expect(before.headers.get('cache-control')).toBe('no-store');
    const packageVersion = (
      JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as { version: string }
    ).version;
    expect(before.body.process).toMatchObject({
      version: packageVersion,
      pid: process.pid,
      mode: 'bridge',
      maxSessions: 32,
      draining: false,
      warmPool: null,
      sessions: 0,
      inFlight: 0,
      parkedCalls: 0,
    });
    const { process: shown } = before.body;
    expect(Number.isInteger(shown.uptimeSeconds) && shown.uptimeSeconds >= 0).toBe(true);
    expect(shown.rssBytes).toBeGreaterThan(0);
    expect(shown.heapUsedBytes).toBeGreaterThan(0);
    expect(typeof shown.cpuPercent).toBe('number');
    expect(shown.cpuPercent).toBeGreaterThanOrEqual(0);
    expect(new Date(shown.startedAt).toISOString()).toBe(shown.startedAt);
    expect(before.body.conversations).toEqual([]);
    expect(before.body.sideCalls).toMatchObject({ runs: 0 });

    const turn = await claudeTurn(url, `Please ${markers.user}`);
    expect(turn.status).toBe(200);
    expect(turn.body).toContain(markers.answer);

    const after = await getJson(`${url}/console/api/state`);
    expect(after.body.process.sessions).toBe(1);
    expect(after.body.conversations).toHaveLength(1);
    expect(after.body.conversations[0]).toMatchObject({
      client: 'Claude Code',
      protocol: 'anthropic',
      model: 'composer-2',
      turns: 1,
      state: 'idle',
      parked: [],
    });
    expect(typeof after.body.conversations[0]?.['route']).toBe('string');

    // Nothing the console serves carries the conversation's text.
    const served = [
      JSON.stringify(after.body),
      await (await fetch(`${url}/console/api/history`)).text(),
      await (await fetch(`${url}/console/api/models`)).text(),
      await (await fetch(`${url}/console/api/templates`)).text(),
    ];
    for (const text of served) {
      expect(text).not.toContain(markers.user);
      expect(text).not.toContain(markers.answer);
    }
  });

  it('serves the hour of activity and the models with the Router', async () => {
    const { url } = await start();
    await claudeTurn(url, 'count me');
    const history = await getJson(`${url}/console/api/history`);
    expect(history.status).toBe(200);
    expect(history.body.bucketMs).toBe(60_000);
    expect(history.body.buckets).toHaveLength(60);
    const turns = history.body.buckets.reduce((sum, bucket) => sum + bucket.turns.finished, 0);
    expect(turns).toBe(1);
    const models = await getJson(`${url}/console/api/models`);
    expect(models.status).toBe(200);
    expect(models.body.models).toEqual(
      expect.arrayContaining([expect.objectContaining({ id: 'composer-2' })]),
    );
    expect(models.body.router).toMatchObject({ default: 'cursor,composer-2' });
  });

  it('answers 404 for an unknown API route', async () => {
    const { url } = await start();
    const unknown = await getJson(`${url}/console/api/nothing`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: { type: 'not_found_error' } });
    expect((await getJson(`${url}/console/api/templates/prompt-head.md`)).status).toBe(404);
  });
});

describe('the template routes', () => {
  it('lists the templates, placeholders and example; live sessions only to a local request', async () => {
    const { url, templatesDir } = await start();
    const empty = await getJson(`${url}/console/api/templates`);
    expect(empty.status).toBe(200);
    expect(empty.body).toMatchObject({
      mode: 'bridge',
      overrideDir: templatesDir,
      problems: [],
      sessions: [],
      example: { root: '/home/ada/project', platform: 'linux' },
    });
    expect(empty.body.templates.map((template) => template.name).sort()).toEqual([...templateNames].sort());
    expect(empty.body.templates[0]).toMatchObject({ source: { origin: 'default' }, overrideText: null });
    expect(empty.body.placeholders.map((placeholder: { name: string }) => placeholder.name)).toContain(
      'root',
    );

    await claudeTurn(url, 'where am I');
    const local = await getJson(`${url}/console/api/templates`);
    expect(local.body.sessions).toHaveLength(1);
    const [live] = local.body.sessions ?? [];
    expect(live).toMatchObject({ root: hostRoot, platform: 'linux' });
    expect(live?.session).toMatch(/^[0-9a-f]{32}$/);
    const state = await getJson(`${url}/console/api/state`);
    expect(live?.session).toBe(state.body.conversations[0]?.session);

    for (const relay of [
      { 'x-forwarded-for': '203.0.113.9' },
      { 'x-real-ip': '203.0.113.9' },
      { forwarded: 'for=203.0.113.9' },
    ]) {
      const relayed = await getJson(`${url}/console/api/templates`, relay);
      expect(relayed.status).toBe(200);
      expect(relayed.body.sessions).toBeNull();
      expect(JSON.stringify(relayed.body)).not.toContain(hostRoot);
    }
  });

  it('previews a draft against the example, or a live conversation for a local request only', async () => {
    const { url } = await start();
    await claudeTurn(url, 'where am I');
    const preview = `${url}/console/api/templates/preview`;
    const example = await send(
      preview,
      'POST',
      { name: 'prompt-head.md', text: 'Root: {{root}}' },
      consoleHeader,
    );
    expect(example.status).toBe(200);
    expect(example.body).toEqual({ against: 'example', ok: true, text: 'Root: /home/ada/project' });

    const session = (await getJson(`${url}/console/api/templates`)).body.sessions?.[0]?.session;
    expect(session).toMatch(/^[0-9a-f]{32}$/);
    const live = await send(
      preview,
      'POST',
      { name: 'prompt-head.md', text: 'Root: {{root}}', session },
      consoleHeader,
    );
    expect(live.body).toEqual({ against: 'session', ok: true, text: `Root: ${hostRoot}` });

    const relayed = await send(
      preview,
      'POST',
      { name: 'prompt-head.md', text: 'Root: {{root}}', session },
      { ...consoleHeader, 'x-forwarded-for': '203.0.113.9' },
    );
    expect(relayed.status).toBe(403);
    expect(JSON.stringify(relayed.body)).not.toContain(hostRoot);

    const gone = await send(
      preview,
      'POST',
      { name: 'prompt-head.md', text: 'x', session: 'f'.repeat(32) },
      consoleHeader,
    );
    expect(gone.status).toBe(404);

    const broken = await send(
      preview,
      'POST',
      { name: 'prompt-head.md', text: 'Root: {{rooot}}' },
      consoleHeader,
    );
    expect(broken.status).toBe(200);
    expect(broken.body.ok).toBe(false);
    expect(broken.body.issues).toHaveLength(1);
    expect(broken.body.issues[0]).toMatchObject({ line: 1, column: 7 });
    expect(broken.body.issues[0]?.message).toContain('did you mean "root"');
  });

  it("previews in the bridge's own mode, agent mode with its cursorCwd", async () => {
    const agentCwd = '/srv/agent-cwd-41c7';
    const { url } = await start({
      config: {
        Providers: [
          {
            name: 'cursor',
            api_base_url: 'https://cursor.com',
            api_key: '$CURSOR_API_KEY',
            models: ['composer-2'],
            transformer: { use: [['cursor-sdk', { cursorMode: 'agent', cursorCwd: agentCwd }]] },
          },
        ],
      },
    });
    expect((await getJson(`${url}/console/api/state`)).body.process['mode']).toBe('agent');
    const listed = await getJson(`${url}/console/api/templates`);
    expect(listed.body).toMatchObject({ mode: 'agent' });
    expect(
      listed.body.templates
        .slice(0, 2)
        .map((template) => template.name)
        .sort(),
    ).toEqual(['prompt-head.agent.md', 'prompt-tail.agent.md']);
    const head = listed.body.templates.find((template) => template.name === 'prompt-head.agent.md');
    const preview = await send(
      `${url}/console/api/templates/preview`,
      'POST',
      { name: 'prompt-head.agent.md', text: head?.text },
      consoleHeader,
    );
    expect(preview.body.ok).toBe(true);
    expect(preview.body.text).toContain(agentCwd);
  });

  it('refuses a body over the console’s limit', async () => {
    const { url, templatesDir } = await start();
    const text = 'x'.repeat(1024 * 1024 + 1);
    const answer = await send(`${url}/console/api/templates/prompt-head.md`, 'PUT', { text }, consoleHeader);
    expect(answer.status).toBe(413);
    expect(answer.body).toMatchObject({ error: { type: 'request_too_large' } });
    expect(await exists(join(templatesDir, 'prompt-head.md'))).toBe(false);
  });

  it('answers a malformed preview request with 400', async () => {
    const { url } = await start();
    const preview = `${url}/console/api/templates/preview`;
    for (const body of [
      { name: 'nope.md', text: 'x' },
      { text: 'x' },
      { name: 'prompt-head.md' },
      { name: 'prompt-head.md', text: 42 },
      '{not json',
      '[1, 2]',
      'null',
    ]) {
      const answer = await send(preview, 'POST', body, consoleHeader);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body).toMatchObject({ error: { type: 'invalid_request_error' } });
    }
  });

  it('saves a valid draft to the override directory, refuses a broken one, and reverts', async () => {
    const { url, templatesDir } = await start();
    const route = `${url}/console/api/templates/prompt-head.md`;
    const path = join(templatesDir, 'prompt-head.md');

    const broken = await send(route, 'PUT', { text: 'Head {{rooot}}' }, consoleHeader);
    expect(broken.status).toBe(422);
    expect(broken.body.error.type).toBe('invalid_template');
    expect(broken.body.error.issues[0]?.message).toContain('did you mean "root"');
    expect(await exists(path)).toBe(false);

    const text = 'Saved head 2c4e for {{root}}\n';
    const saved = await send(route, 'PUT', { text }, consoleHeader);
    expect(saved.status).toBe(200);
    expect(saved.body).toEqual({ saved: path });
    expect(await readFile(path, 'utf8')).toBe(text);

    expect((await send(route, 'PUT', { text: '{{#if root}}open' }, consoleHeader)).status).toBe(422);
    expect(await readFile(path, 'utf8')).toBe(text);

    const listed = await getJson(`${url}/console/api/templates`);
    const head = listed.body.templates.find((template) => template.name === 'prompt-head.md');
    expect(head?.overrideText).toBe(text);
    expect(head?.overridePath).toBe(path);

    const reverted = await send(route, 'DELETE', {}, consoleHeader);
    expect(reverted).toMatchObject({ status: 200, body: { reverted: true } });
    expect(await exists(path)).toBe(false);
    expect((await send(route, 'DELETE', {}, consoleHeader)).body).toEqual({ reverted: false });
  });

  it('resolves an encoded slash to the nested template, and 404s an unknown one', async () => {
    const { url, templatesDir } = await start();
    const hooks = '{ "version": 1, "hooks": { "stop": [{ "command": "{{json hookCommand}}" }] } }\n';
    const saved = await send(
      `${url}/console/api/templates/.cursor%2Fhooks.json`,
      'PUT',
      { text: hooks },
      consoleHeader,
    );
    expect(saved.status).toBe(200);
    expect(saved.body).toEqual({ saved: join(templatesDir, '.cursor', 'hooks.json') });
    expect(await readFile(join(templatesDir, '.cursor', 'hooks.json'), 'utf8')).toBe(hooks);
    const invalid = await send(
      `${url}/console/api/templates/.cursor%2Fhooks.json`,
      'PUT',
      { text: '{ "version": 1 }' },
      consoleHeader,
    );
    expect(invalid.status).toBe(422);
    expect(
      (await send(`${url}/console/api/templates/.cursor%2Fhooks.json`, 'DELETE', {}, consoleHeader)).body,
    ).toEqual({
      reverted: true,
    });

    for (const name of ['nope.md', 'hooks.json', '..%2F..%2Fetc%2Fpasswd', '%2E%2E%2Fprompt-head.md']) {
      const put = await send(`${url}/console/api/templates/${name}`, 'PUT', { text: 'x' }, consoleHeader);
      expect(put.status, name).toBe(404);
      expect(put.body).toMatchObject({ error: { type: 'not_found_error' } });
      expect(
        (await send(`${url}/console/api/templates/${name}`, 'DELETE', {}, consoleHeader)).status,
        name,
      ).toBe(404);
    }
    expect(await exists(join(templatesDir, 'nope.md'))).toBe(false);
    const missingText = await send(`${url}/console/api/templates/prompt-head.md`, 'PUT', {}, consoleHeader);
    expect(missingText.status).toBe(400);
  });

  it('answers a name that is not valid percent-encoding as an unknown template (404), for PUT and DELETE', async () => {
    const { url } = await start();
    const put = await send(`${url}/console/api/templates/%E0%A4%A`, 'PUT', { text: 'x' }, consoleHeader);
    expect(put.status).toBe(404);
    const removed = await send(`${url}/console/api/templates/%E0%A4%A`, 'DELETE', undefined, consoleHeader);
    expect(removed.status).toBe(404);
  });
});

describe('GET /console/api/events', () => {
  it('sends the state and the history at once, and stops when the page leaves', async () => {
    const bridge = await start();
    const live = feed(bridge.url);
    const response = await live.response;
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    await until(() => live.frames().length >= 2, 'the first frames');
    expect(live.text().startsWith('retry: 3000\n\n')).toBe(true);
    const [state, history] = live.frames();
    expect(state?.event).toBe('state');
    expect(state?.data).toMatchObject({ process: { pid: process.pid }, conversations: [] });
    expect(history?.event).toBe('history');
    expect((history?.data as { buckets: unknown[] }).buckets).toHaveLength(60);
    live.abort();
    await live.done;
    await bridge.close();
  });

  it('ends an open feed when the bridge closes', async () => {
    const bridge = await start();
    const live = feed(bridge.url);
    await until(() => live.frames().length >= 1, 'the first frame');
    await bridge.close();
    await live.done;
    expect(live.frames()[0]?.event).toBe('state');
  });

  it('opens with the login cookie when the bridge has a key', async () => {
    const { url } = await start({ apiKey });
    const login = await send(`${url}/console/api/login`, 'POST', { key: apiKey }, consoleHeader);
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const live = feed(url, { cookie });
    expect((await live.response).status).toBe(200);
    await until(() => live.frames().some((frame) => frame.event === 'state'), 'the state frame');
  });

  it("announces a template saved through the console once the watcher reloaded it, and the next turn's prompt carries it", async () => {
    const bridge = await start({ watchTemplates: true });
    const { url, upstream, templatesDir } = bridge;
    const live = feed(url);
    await until(() => live.frames().length >= 1, 'the first frame');
    const text = 'Console head 8d3b: the project is {{root}}.\n';
    const saved = await send(`${url}/console/api/templates/prompt-head.md`, 'PUT', { text }, consoleHeader);
    expect(saved.body).toEqual({ saved: join(templatesDir, 'prompt-head.md') });
    await until(
      () => live.frames().some((frame) => frame.event === 'templates'),
      'a templates frame on the feed',
      30_000,
    );
    const announced = live.frames().find((frame) => frame.event === 'templates')?.data as {
      changed: string[];
      problems: unknown[];
    };
    expect(announced.changed).toEqual(['prompt-head.md']);
    expect(announced.problems).toEqual([]);
    const listed = await getJson(`${url}/console/api/templates`);
    const head = listed.body.templates.find((template) => template.name === 'prompt-head.md');
    expect(head?.source.origin).toBe('override');
    expect(head?.text).toBe(text);

    await claudeTurn(url, 'where am I');
    expect(upstream.calls[0]?.input.prompt.text).toContain(`Console head 8d3b: the project is ${hostRoot}.`);

    // An override broken by another editor is announced with its problem; the last good version stays.
    await writeFile(join(templatesDir, 'prompt-tail.md'), 'Tail {{rooot}}\n');
    const problemFrame = () =>
      live
        .frames()
        .filter((frame) => frame.event === 'templates')
        .map(
          (frame) => frame.data as { changed: string[]; problems: Array<{ name: string; message: string }> },
        )
        .find((data) => data.problems.length > 0);
    await until(() => problemFrame() !== undefined, 'a templates frame with the problem', 30_000);
    expect(problemFrame()?.changed).toEqual([]);
    expect(problemFrame()?.problems).toEqual([
      expect.objectContaining({ name: 'prompt-tail.md', path: join(templatesDir, 'prompt-tail.md') }),
    ]);
    expect(problemFrame()?.problems[0]?.message).toContain('did you mean "root"');
    const after = await getJson(`${url}/console/api/templates`);
    expect(after.body).toMatchObject({ problems: [expect.objectContaining({ name: 'prompt-tail.md' })] });
  });
});
