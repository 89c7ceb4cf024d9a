/**
 * The real entry point as a user runs it: `node bin/cursor-bridge.js …` (and `npm start`) in child
 * processes, against a `dist/` rebuilt whenever it is older than the sources.
 */

import { execFileSync } from 'node:child_process';
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
} from './helpers/cli-process.js';
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
    expect(result.stderr).toContain(
      'Usage:\n  cursor-bridge serve [--host 127.0.0.1] [--port 3456] [--config FILE]',
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
    expect(await health.json()).toEqual({ status: 'ok' });

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
});

/** The spec's minimum ("Node.js ≥ 22.19.0"); package.json `engines.node` is the one source the guard reads. */
const minimumNode = '22.19.0';

const refusal = (version: string): string =>
  `cursor-bridge needs Node.js >= ${minimumNode}; this is ${version}.\n` +
  `Run it through npm (\`npm start\`), which uses the Node 22 pinned in devDependencies, or install Node ${minimumNode} or newer.\n`;

/** Node binaries on PATH older than the minimum (the system Node on this machine is 20). */
const findOldNodes = (): Array<{ path: string; version: string }> => {
  let paths: string[];
  try {
    paths = execFileSync('which', ['-a', 'node'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  } catch {
    return [];
  }
  const found = new Map<string, string>();
  for (const path of paths) {
    try {
      const version = execFileSync(path, ['--version'], { encoding: 'utf8' }).trim();
      const [major = 0, minor = 0] = version.slice(1).split('.').map(Number);
      if (major < 22 || (major === 22 && minor < 19)) found.set(version, path);
    } catch {
      // not runnable
    }
  }
  return [...found].map(([version, path]) => ({ path, version }));
};

describe('the Node version guard in bin/cursor-bridge.js', () => {
  const fakeNode = (version: string): string =>
    `data:text/javascript,${encodeURIComponent(
      `Object.defineProperty(process.versions, 'node', { value: ${JSON.stringify(version)} });` +
        `Object.defineProperty(process, 'version', { value: ${JSON.stringify(`v${version}`)} });`,
    )}`;

  it('states one minimum everywhere: package.json engines, the README', async () => {
    const manifest = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as {
      engines: { node: string };
    };
    expect(manifest.engines.node).toBe(`>=${minimumNode}`);
    const readme = await readFile(join(repoRoot, 'README.md'), 'utf8');
    expect(readme).toContain(`Node.js ≥ ${minimumNode} to run`);
    expect(readme).not.toMatch(/(Node(\.js)? (≥|>=) ?|older than )22\.(?!19\.0)\d+/);
  });

  it.each(['22.18.0', minimumNode])('the CCR entry applies the same minimum on Node %s', (version) => {
    // The transformer loads on any Node and answers each request with the version problem, if any.
    const script =
      `const Transformer = require(${JSON.stringify(join(repoRoot, 'ccr', 'cursor-sdk.cjs'))});` +
      `new Transformer({}).transformRequestIn({}, {}, {}).then(` +
      `() => process.stdout.write('loaded'), (error) => process.stdout.write(error.message));`;
    const output = execFileSync(process.execPath, ['--import', fakeNode(version), '-e', script], {
      encoding: 'utf8',
      env: createChildEnv(home),
    });
    if (version === minimumNode) {
      expect(output).not.toContain('too old');
      return;
    }
    expect(output).toBe(
      `cursor-sdk transformer: Node ${version} is too old; @cursor/sdk needs Node >= ${minimumNode} ` +
        `(it crashes on older versions). Run CCR with Node ${minimumNode} or newer. Cursor requests fail until then.`,
    );
  });

  it.each(['22.18.0', '22.13.0', '22.12.0', '20.19.0', '18.20.4'])(
    'refuses Node %s with exit 2 and says what to do',
    async (version) => {
      const result = await runCli(['--version'], {
        env: createChildEnv(home),
        prefix: ['--import', fakeNode(version), join(repoRoot, 'bin', 'cursor-bridge.js')],
      });
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(refusal(`v${version}`));
    },
  );

  it.each([minimumNode, '22.20.1', '24.0.0'])('lets Node %s through', async (version) => {
    const result = await runCli(['--version'], {
      env: createChildEnv(home),
      prefix: ['--import', fakeNode(version), join(repoRoot, 'bin', 'cursor-bridge.js')],
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  it.each(findOldNodes())('refuses the real $version at $path', async ({ path, version }) => {
    const result = await runCli(['serve'], { env: createChildEnv(home), command: path });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(refusal(version));
  });
});
