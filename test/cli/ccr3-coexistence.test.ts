/**
 * `serve` and `mcp-host` beside Claude Code Router 3: which config file they read once CCR 3 owns
 * `~/.claude-code-router`, the notice when they start on built-in defaults, and what a busy port says.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ccr3OwnsCcrDir, cursorBridgeConfigPath, resolveConfigPath } from '../../src/cli/config-path.js';
import { describeListenFailure } from '../../src/cli/listen-error.js';
import { ensureBuilt } from '../helpers/ensure-built.js';
import { createCapturedIo } from '../helpers/cli/captured-io.js';
import { createChildEnv, killLeftoverChildren, runCli } from '../helpers/cli/cli-process.js';

let home: string;
let busy: Server | undefined;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'cursor-bridge-coexist-'));
});
afterEach(async () => {
  await killLeftoverChildren();
  await new Promise<void>((resolve) => (busy === undefined ? resolve() : busy.close(() => resolve())));
  busy = undefined;
  await rm(home, { recursive: true, force: true });
});

const ccrDir = () => join(home, '.claude-code-router');
const path = (env: Record<string, string> = {}, flag?: string) =>
  resolveConfigPath(createCapturedIo({ homedir: home, cwd: '/work', env }).io, flag);

/** A loopback port held by this test. */
const holdPort = async (): Promise<number> => {
  // Ends each connection at once: serve asks what holds a busy port, and a server's close waits for them.
  busy = createServer((socket) => socket.destroy());
  const server = busy;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
};

describe('config lookup', () => {
  it('--config, then $CURSOR_BRIDGE_CONFIG, then CCR’s config.json', async () => {
    await mkdir(ccrDir(), { recursive: true });
    await writeFile(join(ccrDir(), 'config.json'), '{}');
    expect(path({}, 'my.json')).toBe('/work/my.json');
    expect(path({ CURSOR_BRIDGE_CONFIG: '/etc/cb.json' })).toBe('/etc/cb.json');
    expect(path()).toBe(join(ccrDir(), 'config.json'));
  });

  it('under CCR 3 (config.sqlite, no config.json): ~/.config/cursor-bridge/config.json, or $XDG_CONFIG_HOME’s', async () => {
    await mkdir(ccrDir(), { recursive: true });
    await writeFile(join(ccrDir(), 'config.sqlite'), '');
    expect(ccr3OwnsCcrDir(home)).toBe(true);
    expect(path()).toBe(join(home, '.config', 'cursor-bridge', 'config.json'));
    expect(path({ XDG_CONFIG_HOME: '/x' })).toBe('/x/cursor-bridge/config.json');
    expect(cursorBridgeConfigPath({}, home)).toBe(join(home, '.config', 'cursor-bridge', 'config.json'));
  });

  it('without CCR 3: CCR’s config.json stays the default path; an existing cursor-bridge file is read', async () => {
    expect(path()).toBe(join(ccrDir(), 'config.json'));
    await mkdir(join(home, '.config', 'cursor-bridge'), { recursive: true });
    await writeFile(join(home, '.config', 'cursor-bridge', 'config.json'), '{}');
    expect(path()).toBe(join(home, '.config', 'cursor-bridge', 'config.json'));
  });
});

describe('a busy port', () => {
  const inUse = Object.assign(new Error('listen EADDRINUSE: address already in use'), { code: 'EADDRINUSE' });

  it('names the flag and the config key', () => {
    expect(describeListenFailure(inUse, { command: 'serve', host: '127.0.0.1', port: 8080 })).toBe(
      'cursor-bridge: serve cannot listen on 127.0.0.1:8080: the port is already in use. Choose another with --port <n> (or PORT in the config).',
    );
    expect(describeListenFailure(inUse, { command: 'mcp-host', host: '127.0.0.1', port: 9000 })).toMatch(
      /--port <n> \(or mcpHost\.port in the config\)\.$/,
    );
  });

  it('on CCR 3’s ports says CCR 3 uses 3456–3458 and what to do instead', () => {
    for (const port of [3456, 3457, 3458])
      expect(describeListenFailure(inUse, { command: 'serve', host: '127.0.0.1', port })).toMatch(
        /Claude Code Router 3 listens on 3456–3458 .*cursor-bridge ccr install.*--port 3465\.$/,
      );
    expect(describeListenFailure(inUse, { command: 'mcp-host', host: '127.0.0.1', port: 3457 })).toMatch(
      /3456–3458 .*pick a port outside that range/,
    );
  });

  it('other listen errors pass through', () => {
    expect(describeListenFailure(new Error('EACCES'), { command: 'serve', host: '0.0.0.0', port: 80 })).toBe(
      'cursor-bridge: serve cannot listen on 0.0.0.0:80: EACCES',
    );
  });
});

describe('serve and mcp-host as processes', () => {
  beforeAll(async () => {
    await ensureBuilt();
  }, 180_000);

  it('serve on a busy port, without a config: the defaults notice, then the flag that fixes it (exit 1)', async () => {
    const port = await holdPort();
    const result = await runCli(['serve', '--port', String(port)], { env: createChildEnv(home) });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `cursor-bridge: no config file at ${join(ccrDir(), 'config.json')}; starting on built-in defaults`,
    );
    expect(result.stderr).toContain(
      `serve cannot listen on 127.0.0.1:${port}: the port is already in use. Choose another with --port <n>`,
    );
  });

  it('mcp-host on a busy port says the same (exit 1)', async () => {
    const port = await holdPort();
    const result = await runCli(['mcp-host', '--port', String(port)], { env: createChildEnv(home) });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('starting on built-in defaults');
    expect(result.stderr).toContain(
      `mcp-host cannot listen on 127.0.0.1:${port}: the port is already in use`,
    );
  });

  it('under CCR 3, serve reads ~/.config/cursor-bridge/config.json (an invalid one is reported by that path)', async () => {
    await mkdir(ccrDir(), { recursive: true });
    await writeFile(join(ccrDir(), 'config.sqlite'), '');
    const own = join(home, '.config', 'cursor-bridge', 'config.json');
    await mkdir(join(home, '.config', 'cursor-bridge'), { recursive: true });
    await writeFile(own, '{ "PORT": "not a port" }');
    const result = await runCli(['serve'], { env: createChildEnv(home) });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${own}: PORT`);
  });
});
