/**
 * Startup says what is wrong, on stderr, in words, with the real CLI as a process:
 * - no Cursor key: `serve` starts (its `/health` stays 200, the liveness HAProxy and the image's HEALTHCHECK
 *   poll) but says on stderr that every turn will fail and how to fix it — the missing-key sentence "Cursor
 *   API key not found: Set Providers[].api_key to a key starting with crsr_, or export CURSOR_API_KEY" — and
 *   `/health` reports `"cursor":{"ready":false,…}`;
 * - a port in use: the flag that moves it, and what answers there (another cursor-bridge, Claude Code Router,
 *   or something else and how to find it);
 * - bad flags: the command's own usage line, no Node parser advice;
 * - `npm start`: the process npm starts is the bridge, so a SIGTERM to npm's PID stops it;
 * - `serve` loads the SDK before it says it listens.
 */

import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import {
  binPath,
  createChildEnv,
  findFreePort,
  killLeftoverChildren,
  runCli,
  startCli,
  stopChild,
  type CliChild,
} from '../helpers/cli/cli-process.js';
import { ensureBuilt } from '../helpers/ensure-built.js';
import { repoRoot } from '../helpers/repo-root.js';

let home: string;
let config: string;
const servers: Array<HttpServer | TcpServer> = [];
/** Connections the test's own listeners accepted, ended at cleanup (a server closes only once they are). */
const sockets: Socket[] = [];

beforeAll(async () => {
  await ensureBuilt();
}, 180_000);
beforeEach(async () => {
  home = await realpath(await mkdtemp(join(tmpdir(), 'cursor-bridge-startup-')));
  config = join(home, 'config.json');
  await writeFile(config, '{}\n');
});
afterEach(async () => {
  await killLeftoverChildren();
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(
    servers.splice(0).map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
  );
  await rm(home, { recursive: true, force: true });
});

const listeningLine = /cursor-bridge listening on http:\/\/127\.0\.0\.1:(\d+)\n/;
const waitForListening = async (child: CliChild): Promise<number> =>
  Number((await child.waitFor('stderr', listeningLine))[1]);

const listen = async <T extends HttpServer | TcpServer>(server: T): Promise<number> => {
  servers.push(server);
  server.on('connection', (socket: Socket) => sockets.push(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
};

describe('serve without a Cursor API key', () => {
  it('starts, says on stderr that every turn will fail and how to fix it, and /health reports it not ready for Cursor', async () => {
    const child = startCli(['serve', '--port', '0', '--config', config], { env: createChildEnv(home) });
    const port = await waitForListening(child);
    expect(child.stderr()).toContain(
      'cursor-bridge: serve is starting without a usable Cursor API key, so every turn fails (401) until it has one. ' +
        'Cursor API key not found: Set Providers[].api_key to a key starting with crsr_, or export CURSOR_API_KEY.',
    );
    expect(child.stderr()).toContain(`(Config: ${config}.) Then restart serve;`);

    const health = await fetch(`http://127.0.0.1:${port}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({
      status: 'ok',
      cursor: {
        ready: false,
        reason:
          'Cursor API key not found: Set Providers[].api_key to a key starting with crsr_, or export CURSOR_API_KEY. ' +
          'Placeholders like $CURSOR_API_KEY only work when the env var is actually set.',
      },
    });
    await stopChild(child);
  });

  it('with a key: no such line, and /health says ready', async () => {
    const child = startCli(['serve', '--port', '0', '--config', config], {
      env: createChildEnv(home, { CURSOR_API_KEY: 'crsr_startup_test' }),
    });
    const port = await waitForListening(child);
    expect(child.stderr()).not.toContain('Cursor API key');
    expect(await (await fetch(`http://127.0.0.1:${port}/health`)).json()).toEqual({
      status: 'ok',
      cursor: { ready: true },
    });
    await stopChild(child);
  });

  it('says it listens only once the SDK is loaded, so the first request after a start does not wait for it', async () => {
    const probe = pathToFileURL(join(repoRoot, 'test', 'helpers', 'cli', 'report-sdk-load.mjs')).href;
    const child = startCli(['serve', '--port', '0', '--config', config], {
      env: createChildEnv(home, { CURSOR_API_KEY: 'crsr_startup_test' }),
      prefix: ['--import', probe, binPath],
    });
    await waitForListening(child);
    const stderr = child.stderr();
    expect(stderr).toContain('[test probe] @cursor/sdk is loaded');
    expect(stderr.indexOf('[test probe] @cursor/sdk is loaded')).toBeLessThan(
      stderr.indexOf('cursor-bridge listening on'),
    );
    await stopChild(child);
  });

  it('a wrong key prefix is said the same way', async () => {
    const child = startCli(['serve', '--port', '0', '--config', config], {
      env: createChildEnv(home, { CURSOR_API_KEY: 'sk-ant-123' }),
    });
    const port = await waitForListening(child);
    expect(child.stderr()).toContain('every turn fails (401) until it has one. Wrong key prefix:');
    expect(await (await fetch(`http://127.0.0.1:${port}/health`)).json()).toMatchObject({
      cursor: { ready: false, reason: expect.stringMatching(/^Wrong key prefix: .*not sk-/) as unknown },
    });
    await stopChild(child);
  });
});

describe('serve on a port in use says which flag moves it and what holds it', () => {
  const inUse = (port: number): string =>
    `cursor-bridge: serve cannot listen on 127.0.0.1:${port}: the port is already in use. ` +
    'Choose another with --port <n> (or PORT in the config).';

  it('another cursor-bridge serve', async () => {
    const first = startCli(['serve', '--port', '0', '--config', config], { env: createChildEnv(home) });
    const port = await waitForListening(first);
    const second = await runCli(['serve', '--port', String(port), '--config', config], {
      env: createChildEnv(home),
    });
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(
      `${inUse(port)} A cursor-bridge server already answers there: use it (\`cursor-bridge claude\` does), or stop it first.\n`,
    );
    await stopChild(first);
  });

  it('Claude Code Router (its `GET /` answers "LLMs API", as @musistudio/llms does)', async () => {
    const port = await listen(
      createHttpServer((request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify(request.url === '/' ? { message: 'LLMs API', version: '1.0.53' } : {}));
      }),
    );
    const result = await runCli(['serve', '--port', String(port), '--config', config], {
      env: createChildEnv(home),
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `${inUse(port)} Claude Code Router answers there (its default port is 3456 too): with CCR the cursor-sdk ` +
        'transformer runs inside CCR and needs no serve; otherwise stop CCR (ccr stop) or pick another port.\n',
    );
  });

  it.each([
    [
      'an HTTP server that is not cursor-bridge',
      () => createHttpServer((_request, response) => response.end('hi')),
    ],
    ['a TCP listener that never answers', () => createTcpServer(() => {})],
  ])('%s: how to find the process', async (_label, create) => {
    const port = await listen(create());
    const result = await runCli(['serve', '--port', String(port), '--config', config], {
      env: createChildEnv(home),
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `${inUse(port)} What holds it does not answer as cursor-bridge or Claude Code Router; ` +
        `\`ss -ltnp 'sport = :${port}'\` (or \`lsof -i :${port}\`) names the process.\n`,
    );
  });
});

describe('bad flags print the command’s own usage, in words', () => {
  const serveUsage =
    'Usage:\n  cursor-bridge serve [--host 127.0.0.1] [--port 3456] [--config FILE] [--drain-timeout SECONDS]\n' +
    '(cursor-bridge --help lists every command and the environment it reads)\n';

  it.each([
    [
      ['serve', '--prot', '5'],
      'cursor-bridge serve: unknown option --prot (did you mean --port?)\n' + serveUsage,
    ],
    [['serve', '--port'], 'cursor-bridge serve: --port needs a value\n' + serveUsage],
    [
      ['serve', '--port', '--host', 'x'],
      'cursor-bridge serve: --port needs a value, and the next argument is an option (write --port=VALUE for a value starting with "-")\n' +
        serveUsage,
    ],
    [
      ['mcp-host', '--stdio=yes'],
      'cursor-bridge mcp-host: --stdio takes no value\nUsage:\n' +
        '  cursor-bridge mcp-host [--stdio] [--host 127.0.0.1] [--port 3457] [--config FILE]\n' +
        '(cursor-bridge --help lists every command and the environment it reads)\n',
    ],
    [
      ['model', 'get', 'cursor', '--host', 'x'],
      'cursor-bridge: --host does not apply to "model"\nUsage:\n  cursor-bridge model get cursor [--config FILE]\n' +
        '(cursor-bridge --help lists every command and the environment it reads)\n',
    ],
  ])('%j', async (args, stderr) => {
    const result = await runCli(args, { env: createChildEnv(home) });
    expect(result).toEqual({ code: 2, stdout: '', stderr });
  });

  it('an unknown option before any command gets the whole usage', async () => {
    const result = await runCli(['--frobnicate'], { env: createChildEnv(home) });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^cursor-bridge serve: unknown option --frobnicate\nUsage:\n/);
    expect(result.stderr).not.toContain("'");
  });
});

describe('npm start', () => {
  it('runs the bridge as the process npm starts: a SIGTERM to npm’s PID stops the bridge', async () => {
    const port = await findFreePort();
    const child = startCli(['start', '--', '--port', String(port), '--config', config], {
      env: createChildEnv(home),
      command: 'npm',
      prefix: [],
      cwd: repoRoot,
      // Its own group only so that cleanup can reach a leftover; the test signals npm's PID alone.
      group: true,
    });
    expect(await waitForListening(child)).toBe(port);
    process.kill(child.pid, 'SIGTERM');
    await child.exited;
    // npm waits for the script's process before it exits: with the bridge as that process, nothing answers.
    await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow();
    // Not asserted: the bridge's "shutting down" line. On a loaded machine about one run in ten ends with
    // npm killed by SIGTERM and the bridge gone without its shutdown lines (what cuts the drain short is not
    // yet known); the stop itself — the behaviour this test names — holds in every run.
  });
});
