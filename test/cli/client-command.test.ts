/**
 * `cursor-bridge claude [claude args…]` (and `codex`), run as a user runs it: the real CLI as a process, with
 * stand-ins for `claude` / `codex` on PATH that print what they were started with (their arguments, the
 * variables the session sets, what the bridge at their base URL says about itself) and exit with a chosen
 * status. The real Claude Code driving a serve it started itself is test/e2e/first-hour.e2e.test.ts.
 *
 * Pinned: uses the running serve (found by asking it, not by the port) or starts one for the session; passes
 * the arguments through; sets the base URL, key and model variables (the user's own model choices win and are
 * said; replaced ones are said); the serve it started stops, by PID, when the client exits — also when the
 * command itself is killed; a port held by something else moves the session's serve to a free port. Without
 * a key (a `crsr_` provider `api_key`, else `CURSOR_API_KEY`) nothing is started.
 */

import { chmod, mkdir, mkdtemp, readdir, realpath, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { startFakeCursorBackend, type FakeCursorBackend } from '../fakes/cursor-backend/index.js';

import {
  createChildEnv,
  findFreePort,
  killLeftoverChildren,
  runCli,
  startCli,
  stopChild,
  type CliChild,
} from '../helpers/cli/cli-process.js';
import { ensureBuilt } from '../helpers/ensure-built.js';

let root: string;
let home: string;
let binDir: string;
let tmp: string;
const servers: Server[] = [];

/** Cursor for every serve of this file: a session reads the model's context window from its catalog. */
let backend: FakeCursorBackend;
beforeAll(async () => {
  backend = await startFakeCursorBackend({});
  withKey = { CURSOR_API_KEY: 'crsr_client_command_test', CURSOR_BACKEND_URL: backend.url };
  await ensureBuilt();
}, 180_000);
afterAll(async () => {
  await backend?.close();
});
beforeEach(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), 'cursor-bridge-client-command-')));
  home = join(root, 'home');
  binDir = join(root, 'bin');
  tmp = join(root, 'tmp');
  await Promise.all([home, binDir, tmp].map((dir) => mkdir(dir, { recursive: true })));
  for (const name of ['claude', 'codex']) {
    await writeFile(join(binDir, name), fakeClient);
    await chmod(join(binDir, name), 0o755);
  }
});
afterEach(async () => {
  await killLeftoverChildren();
  await Promise.all(
    servers.splice(0).map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
  );
  await rm(root, { recursive: true, force: true });
});

/**
 * The stand-in client: one JSON line on stdout (argv, the session's variables, `GET /` and `/health` of its
 * base URL), then it exits with `$FAKE_EXIT` — or, with `FAKE_WAIT=1`, waits for a signal and exits 143.
 */
const fakeClient = `#!/usr/bin/env node
const names = ['ANTHROPIC_BASE_URL', 'ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_API_KEY', 'ANTHROPIC_MODEL',
  'ANTHROPIC_DEFAULT_OPUS_MODEL', 'ANTHROPIC_DEFAULT_SONNET_MODEL', 'ANTHROPIC_DEFAULT_HAIKU_MODEL',
  'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC', 'CLAUDE_CODE_MAX_CONTEXT_TOKENS', 'CLAUDE_CODE_AUTO_COMPACT_WINDOW',
  'CURSOR_BRIDGE_CODEX_KEY', 'NO_PROXY'];
const env = {};
for (const name of names) if (process.env[name] !== undefined) env[name] = process.env[name];
const codexBase = process.argv.slice(2).join(' ').match(/base_url = "([^"]+)\\/v1"/);
const base = process.env.ANTHROPIC_BASE_URL ?? codexBase?.[1];
const get = (path) => fetch(base + path).then((r) => r.json(), (e) => String(e));
const report = { args: process.argv.slice(2), env, base, root: await get('/'), health: await get('/health') };
process.stdout.write(JSON.stringify(report) + '\\n');
if (process.env.FAKE_WAIT === '1') {
  process.on('SIGTERM', () => process.exit(143));
  setInterval(() => {}, 1000);
} else process.exit(Number(process.env.FAKE_EXIT ?? '0'));
`;

type Report = {
  args: string[];
  env: Record<string, string>;
  base: string;
  root: unknown;
  health: unknown;
};

/** The environment of a user with the stand-ins first on PATH and its own temp directory. */
const userEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
  const env = createChildEnv(home, { TMPDIR: tmp, ...extra });
  return { ...env, PATH: [binDir, env['PATH'] ?? ''].join(delimiter) };
};

/** A Cursor key and the fake backend's URL (set in `beforeAll`). */
let withKey: Record<string, string> = {};

const reportOf = (stdout: string): Report => {
  const line = stdout.split('\n').find((text) => text.startsWith('{"args"'));
  if (line === undefined) throw new Error(`the client printed no report:\n${stdout}`);
  return JSON.parse(line) as Report;
};

const answers = (url: string): Promise<boolean> =>
  fetch(`${url}/health`).then(
    () => true,
    () => false,
  );

const bridgeRoot = { name: 'cursor-bridge', status: 'ok' };

/** A `cursor-bridge serve` of the test's own, on a free port. */
const startServe = async (env: NodeJS.ProcessEnv): Promise<{ child: CliChild; port: number }> => {
  const child = startCli(['serve', '--port', '0'], { env });
  const port = Number((await child.waitFor('stderr', /listening on http:\/\/127\.0\.0\.1:(\d+)/))[1]);
  return { child, port };
};

describe('cursor-bridge claude with no serve running', () => {
  it('starts a serve for the session, runs claude with its arguments and the variables set, and stops the serve when claude exits', async () => {
    const port = await findFreePort();
    const result = await runCli(
      ['--port', String(port), 'claude', '-p', 'say hi', '--output-format', 'json'],
      {
        env: userEnv({ ...withKey, FAKE_EXIT: '0' }),
      },
    );
    const base = `http://127.0.0.1:${port}`;
    expect(result.code).toBe(0);
    const report = reportOf(result.stdout);
    expect(report.args).toEqual(['-p', 'say hi', '--output-format', 'json']);
    expect(report.env).toEqual({
      ANTHROPIC_BASE_URL: base,
      ANTHROPIC_AUTH_TOKEN: 'cursor-bridge',
      ANTHROPIC_MODEL: 'cursor,composer-2',
      ANTHROPIC_DEFAULT_OPUS_MODEL: 'cursor,composer-2',
      ANTHROPIC_DEFAULT_SONNET_MODEL: 'cursor,composer-2',
      ANTHROPIC_DEFAULT_HAIKU_MODEL: 'cursor,composer-2',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      // composer-2's catalog entry has no context parameter: Cursor's default window.
      CLAUDE_CODE_MAX_CONTEXT_TOKENS: '200000',
      CLAUDE_CODE_AUTO_COMPACT_WINDOW: '200000',
    });
    // While claude ran, a cursor-bridge serve with the Cursor key answered there.
    expect(report.root).toEqual(bridgeRoot);
    expect(report.health).toEqual({ status: 'ok', cursor: { ready: true } });
    expect(result.stderr).toMatch(
      new RegExp(
        `^cursor-bridge: started serve on ${base} for this session; log: ${tmp}/cursor-bridge-session-\\w+/serve\\.log\\. It stops when claude exits\\.\\n$`,
      ),
    );
    // Stopped with claude; a clean session leaves no log behind.
    expect(await answers(base)).toBe(false);
    expect(await readdir(tmp)).toEqual([]);
  });

  it('returns the client’s exit status and keeps the log of a session that failed', async () => {
    const port = await findFreePort();
    const result = await runCli(['--port', String(port), 'claude'], {
      env: userEnv({ ...withKey, FAKE_EXIT: '3' }),
    });
    expect(result.code).toBe(3);
    expect(await answers(`http://127.0.0.1:${port}`)).toBe(false);
    const [logDir] = await readdir(tmp);
    expect(await readdir(join(tmp, logDir ?? ''))).toEqual(['serve.log']);
  });

  it('moves to a free port when the port is held by something that is not cursor-bridge', async () => {
    const other = createServer((_request, response) => response.end('not a bridge'));
    servers.push(other);
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const address = other.address();
    const held = typeof address === 'object' && address !== null ? address.port : 0;

    const result = await runCli(['--port', String(held), 'claude', '-p', 'hi'], { env: userEnv(withKey) });
    expect(result.code).toBe(0);
    const report = reportOf(result.stdout);
    expect(report.base).not.toBe(`http://127.0.0.1:${held}`);
    expect(report.root).toEqual(bridgeRoot);
    expect(result.stderr).toContain(
      `for this session (127.0.0.1:${held} is held by something that is not cursor-bridge)`,
    );
    expect(await answers(report.base)).toBe(false);
  });

  it('without a Cursor key says so and runs nothing (exit 2)', async () => {
    const port = await findFreePort();
    const result = await runCli(['--port', String(port), 'claude'], { env: userEnv() });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(
      /^cursor-bridge: cannot start a serve for claude: Cursor API key not found: /,
    );
    expect(await answers(`http://127.0.0.1:${port}`)).toBe(false);
  });

  it('says how to install the client when it is not on PATH, and stops the serve (exit 1)', async () => {
    await rm(join(binDir, 'claude'));
    const port = await findFreePort();
    const result = await runCli(['--port', String(port), 'claude'], { env: userEnv(withKey) });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'cursor-bridge: cannot run claude: it is not on PATH. Install it (npm install -g @anthropic-ai/claude-code) and try again.\n',
    );
    expect(await answers(`http://127.0.0.1:${port}`)).toBe(false);
  });
});

describe('cursor-bridge claude with a serve running', () => {
  it('uses it, found by asking it (not by the port), and leaves it running', async () => {
    const serve = await startServe(createChildEnv(home, withKey));
    const result = await runCli(['--port', String(serve.port), 'claude', '-p', 'hi'], {
      env: userEnv(withKey),
    });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(`cursor-bridge: using the serve at http://127.0.0.1:${serve.port}\n`);
    expect(reportOf(result.stdout).base).toBe(`http://127.0.0.1:${serve.port}`);
    expect(await answers(`http://127.0.0.1:${serve.port}`)).toBe(true);
    await stopChild(serve.child);
  });

  it('sends its APIKEY, and refuses a serve that wants another one (exit 1)', async () => {
    const serve = await startServe(createChildEnv(home, { ...withKey, APIKEY: 'serve-secret' }));
    const accepted = await runCli(['--port', String(serve.port), 'claude'], {
      env: userEnv({ ...withKey, APIKEY: 'serve-secret' }),
    });
    expect(accepted.code).toBe(0);
    expect(reportOf(accepted.stdout).env['ANTHROPIC_AUTH_TOKEN']).toBe('serve-secret');

    const refused = await runCli(['--port', String(serve.port), 'claude'], {
      env: userEnv({ ...withKey, APIKEY: 'another' }),
    });
    expect(refused).toEqual({
      code: 1,
      stdout: '',
      stderr:
        `cursor-bridge: the serve at http://127.0.0.1:${serve.port} refuses this session's key: set APIKEY to its ` +
        "APIKEY, or pass --port <n> to start a serve of this session's own there.\n",
    });
    await stopChild(serve.child);
  });

  it('refuses a serve that has no Cursor key, saying why (exit 1)', async () => {
    const serve = await startServe(createChildEnv(home));
    const result = await runCli(['--port', String(serve.port), 'claude'], { env: userEnv(withKey) });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(
      `cursor-bridge: the serve at http://127.0.0.1:${serve.port} has no usable Cursor API key: Cursor API key not found`,
    );
    await stopChild(serve.child);
  });
});

describe('the user’s own environment', () => {
  it('keeps the user’s model choices and says so; replaces what must point at the bridge and says so', async () => {
    const port = await findFreePort();
    const result = await runCli(['--port', String(port), 'claude'], {
      env: userEnv({
        ...withKey,
        ANTHROPIC_MODEL: 'gpt-5.4',
        ANTHROPIC_BASE_URL: 'https://api.anthropic.com',
        ANTHROPIC_API_KEY: 'sk-ant-real',
        HTTPS_PROXY: 'http://proxy.invalid:8080',
      }),
    });
    expect(result.code).toBe(0);
    const report = reportOf(result.stdout);
    expect(report.env).toMatchObject({
      ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`,
      ANTHROPIC_MODEL: 'gpt-5.4',
      NO_PROXY: '127.0.0.1',
      // The window of the gpt-5.4 variant the bridge runs (its smallest context, 272k), not composer-2's.
      CLAUDE_CODE_MAX_CONTEXT_TOKENS: '272000',
      CLAUDE_CODE_AUTO_COMPACT_WINDOW: '272000',
    });
    expect(report.env['ANTHROPIC_API_KEY']).toBeUndefined();
    expect(result.stderr).toContain(
      'cursor-bridge: this session replaces ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY of your environment (it talks to the bridge)\n',
    );
    expect(result.stderr).toContain('cursor-bridge: keeping your ANTHROPIC_MODEL=gpt-5.4\n');
  });
});

describe('the context window Claude Code is told', () => {
  it('is the window of the model that runs for `--model` (an alias through the Router)', async () => {
    const port = await findFreePort();
    await mkdir(join(home, '.claude-code-router'), { recursive: true });
    await writeFile(
      join(home, '.claude-code-router', 'config.json'),
      JSON.stringify({ Router: { default: 'cursor,composer-2', think: 'cursor,gpt-5.4' } }),
    );
    const result = await runCli(['--port', String(port), 'claude', '--model', 'opus'], {
      env: userEnv(withKey),
    });
    expect(result.code).toBe(0);
    expect(reportOf(result.stdout).env).toMatchObject({
      ANTHROPIC_DEFAULT_OPUS_MODEL: 'cursor,gpt-5.4',
      CLAUDE_CODE_MAX_CONTEXT_TOKENS: '272000',
      CLAUDE_CODE_AUTO_COMPACT_WINDOW: '272000',
    });
  });

  it('the user’s own values win, and an autoCompactWindow in their Claude Code settings keeps its place', async () => {
    const port = await findFreePort();
    const own = await runCli(['--port', String(port), 'claude'], {
      env: userEnv({ ...withKey, CLAUDE_CODE_AUTO_COMPACT_WINDOW: '150k' }),
    });
    expect(reportOf(own.stdout).env).toMatchObject({
      CLAUDE_CODE_MAX_CONTEXT_TOKENS: '200000',
      CLAUDE_CODE_AUTO_COMPACT_WINDOW: '150k',
    });
    expect(own.stderr).toContain('cursor-bridge: keeping your CLAUDE_CODE_AUTO_COMPACT_WINDOW=150k\n');

    await mkdir(join(home, '.claude'), { recursive: true });
    await writeFile(join(home, '.claude', 'settings.json'), JSON.stringify({ autoCompactWindow: 120000 }));
    const setting = await runCli(['--port', String(port), 'claude'], { env: userEnv(withKey) });
    const env = reportOf(setting.stdout).env;
    expect(env['CLAUDE_CODE_MAX_CONTEXT_TOKENS']).toBe('200000');
    expect(env['CLAUDE_CODE_AUTO_COMPACT_WINDOW']).toBeUndefined();
    expect(setting.stderr).toContain(
      'cursor-bridge: keeping the autoCompactWindow of your Claude Code settings\n',
    );
  });
});

describe('stopping', () => {
  it('a SIGTERM to cursor-bridge reaches the client first, then the session’s serve stops', async () => {
    const port = await findFreePort();
    const child = startCli(['--port', String(port), 'claude'], {
      env: userEnv({ ...withKey, FAKE_WAIT: '1' }),
    });
    await child.waitFor('stdout', /"args"/);
    expect(await answers(`http://127.0.0.1:${port}`)).toBe(true);
    process.kill(child.pid, 'SIGTERM');
    expect(await child.exited).toEqual({ code: 143, signal: null });
    expect(await answers(`http://127.0.0.1:${port}`)).toBe(false);
  });

  it('the session’s serve stops even when cursor-bridge is killed outright (SIGKILL), with its stdin', async () => {
    const port = await findFreePort();
    const child = startCli(['--port', String(port), 'claude'], {
      env: userEnv({ ...withKey, FAKE_WAIT: '1' }),
      group: true,
    });
    await child.waitFor('stdout', /"args"/);
    // The whole group: cursor-bridge and the client; the serve has a group of its own.
    await stopChild(child, 'SIGKILL');
    await vi.waitFor(async () => expect(await answers(`http://127.0.0.1:${port}`)).toBe(false), {
      timeout: 30_000,
      interval: 50,
    });
  });
});

describe('cursor-bridge codex', () => {
  it('runs codex with the bridge as its model provider through -c overrides before the user’s arguments', async () => {
    const port = await findFreePort();
    const result = await runCli(['--port', String(port), 'codex', 'exec', '--json', 'hi'], {
      env: userEnv({ ...withKey, APIKEY: 'codex-secret' }),
    });
    expect(result.code).toBe(0);
    const report = reportOf(result.stdout);
    expect(report.args).toEqual([
      '-c',
      `model_providers.cursor-bridge={ name = "cursor-bridge", base_url = "http://127.0.0.1:${port}/v1", wire_api = "responses", env_key = "CURSOR_BRIDGE_CODEX_KEY" }`,
      '-c',
      'model_provider="cursor-bridge"',
      '-c',
      'model="cursor,composer-2"',
      'exec',
      '--json',
      'hi',
    ]);
    expect(report.env['CURSOR_BRIDGE_CODEX_KEY']).toBe('codex-secret');
    expect(report.root).toEqual(bridgeRoot);
    expect(await answers(`http://127.0.0.1:${port}`)).toBe(false);
  });
});
