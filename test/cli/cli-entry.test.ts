/**
 * The real entry point as a user runs it: `node bin/cursor-bridge.js …` (and `npm start`) in child
 * processes, against a `dist/` rebuilt whenever it is older than the sources.
 */

import { mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

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
import { repoRoot } from '../helpers/repo-root.js';

let home: string;

beforeAll(async () => {
  await ensureBuilt();
}, 180_000);
beforeEach(async () => {
  home = await realpath(await mkdtemp(join(tmpdir(), 'cursor-bridge-cli-entry-')));
});
afterEach(async () => {
  await killLeftoverChildren();
  await rm(home, { recursive: true, force: true });
});

const listeningLine = /cursor-bridge listening on http:\/\/127\.0\.0\.1:(\d+)\n/;

const waitForListening = async (child: CliChild): Promise<number> =>
  Number((await child.waitFor('stderr', listeningLine))[1]);

const writeConfig = async (name: string, text: string): Promise<string> => {
  const path = join(home, name);
  await writeFile(path, text);
  return path;
};

describe('cursor-bridge entry point', () => {
  it('--version prints the package version', async () => {
    const manifest = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as {
      version: string;
    };
    const result = await runCli(['--version'], { env: createChildEnv(home) });
    expect(result).toEqual({ code: 0, stdout: `${manifest.version}\n`, stderr: '' });
  });

  it('an unknown command exits 2 with the usage', async () => {
    const result = await runCli(['frobnicate'], { env: createChildEnv(home) });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('cursor-bridge: unknown command "frobnicate"');
    expect(result.stderr).toContain('Usage:\n');
    expect(result.stderr).toContain(
      '\n  cursor-bridge serve [--host 127.0.0.1] [--port 3456] [--config FILE]',
    );
  });

  it('serve listens, answers HEAD / and GET /health, and exits 0 on SIGTERM', async () => {
    const config = await writeConfig('config.json', '{ "LOG_LEVEL": "info" }\n');
    const child = startCli(['serve', '--port', '0', '--host', '127.0.0.1', '--config', config], {
      env: createChildEnv(home),
    });
    const port = await waitForListening(child);
    expect(port).toBeGreaterThan(0);

    const head = await fetch(`http://127.0.0.1:${port}/`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    const health = await fetch(`http://127.0.0.1:${port}/health`);
    expect(health.status).toBe(200);
    // No Cursor key in this environment: up (200, for load balancers), and not ready for Cursor.
    expect(await health.json()).toEqual({
      status: 'ok',
      cursor: { ready: false, reason: expect.stringMatching(/^Cursor API key not found/) as unknown },
    });

    expect(await stopChild(child, 'SIGTERM')).toEqual({ code: 0, signal: null });
    expect(child.stdout()).toContain('"msg":"shutting down"');
    await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow();
  });

  it('`npm start -- --port P --config REL` passes the flags through to serve', async () => {
    const port = await findFreePort();
    const config = await writeConfig('c.json', '{ "LOG_LEVEL": "info" }\n');
    // npm runs the script in the package root, so a relative --config resolves against it.
    const relativeConfig = relative(repoRoot, config);
    const child = startCli(['start', '--', '--port', String(port), '--config', relativeConfig], {
      env: createChildEnv(home),
      command: 'npm',
      prefix: [],
      cwd: repoRoot,
      group: true,
    });
    expect(await waitForListening(child)).toBe(port);
    const health = await fetch(`http://127.0.0.1:${port}/health`);
    expect(health.status).toBe(200);
    expect(child.stdout()).toContain(`"config":${JSON.stringify(config)}`);
    await stopChild(child, 'SIGTERM');
    await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow();
  });

  it.each([
    ['invalid JSON5', '{\n  "PORT": 3456,\n  oops\n}\n', (file: string) => `${file}:4:1: invalid JSON5`],
    [
      'a bad cursorMode',
      JSON.stringify({
        Providers: [{ name: 'cursor', transformer: { use: [['cursor-sdk', { cursorMode: 'nope' }]] } }],
      }),
      (file: string) => `${file}: Providers[0].transformer.use[0][1].cursorMode`,
    ],
    ['a bad PORT', '{ "PORT": "many" }', (file: string) => `${file}: PORT`],
  ])('serve with %s exits 2 naming the file and the field', async (_label, text, expected) => {
    const config = await writeConfig('bad.json', text);
    const result = await runCli(['serve', '--port', '0', '--config', config], { env: createChildEnv(home) });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`cursor-bridge: ${expected(config)}`);
    expect(result.stderr).not.toContain('listening');
  });

  it('serve with a bad --port or LOG_LEVEL exits 2', async () => {
    const badPort = await runCli(['serve', '--port', '70000'], { env: createChildEnv(home) });
    expect(badPort.code).toBe(2);
    expect(badPort.stderr).toContain('--port must be an integer from 0 to 65535, got "70000"');
    const config = await writeConfig('config.json', '{}');
    const badLevel = await runCli(['serve', '--port', '0', '--config', config], {
      env: createChildEnv(home, { LOG_LEVEL: 'chatty' }),
    });
    expect(badLevel.code).toBe(2);
    expect(badLevel.stderr).toContain('LOG_LEVEL must be one of');
  });

  it('serve with a bad --drain-timeout or CURSOR_BRIDGE_DRAIN_TIMEOUT exits 2; other commands refuse the flag', async () => {
    const config = await writeConfig('config.json', '{}');
    const badFlag = await runCli(['serve', '--port', '0', '--config', config, '--drain-timeout', 'soon'], {
      env: createChildEnv(home),
    });
    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).toContain('--drain-timeout must be a number of seconds (0 or more), got "soon"');
    const badEnv = await runCli(['serve', '--port', '0', '--config', config], {
      env: createChildEnv(home, { CURSOR_BRIDGE_DRAIN_TIMEOUT: '-1' }),
    });
    expect(badEnv.code).toBe(2);
    expect(badEnv.stderr).toContain(
      'CURSOR_BRIDGE_DRAIN_TIMEOUT must be a number of seconds (0 or more), got "-1"',
    );
    const misplaced = await runCli(['model', 'get', 'cursor', '--drain-timeout', '5'], {
      env: createChildEnv(home),
    });
    expect(misplaced.code).toBe(2);
    expect(misplaced.stderr).toContain('--drain-timeout does not apply to "model"');
  });
});
