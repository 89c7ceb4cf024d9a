/**
 * No Node traps: every entry point of the package — the `cursor-bridge` bin, the example tool host, the CCR
 * 1/2 transformer and the CCR 3 plugin — refuses a Node older than the package's minimum (package.json
 * `engines.node`, for running from source and from npm) with the same one line: the version needed, the
 * version found, and the advice for that entry and for how the package was installed (a source checkout runs
 * through npm on the pinned Node 22; an npm install needs a newer Node). The examples run with one documented
 * command (`cursor-bridge example mcp-tool-host`) and are in the package.
 *
 * Each entry runs as a real process: on a faked old version (`--import` a module that rewrites
 * `process.versions.node` before the entry loads) and on any real old Node on PATH (Node 20 on these machines).
 */

import { execFile, execFileSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { createChildEnv, killLeftoverChildren, runCli, startCli } from '../helpers/cli/cli-process.js';
import { ensureBuilt } from '../helpers/ensure-built.js';
import { repoRoot } from '../helpers/repo-root.js';

const run = promisify(execFile);

/** The package's minimum Node; package.json `engines.node` is the one source every entry reads. */
const minimumNode = '22.19.0';

const advice = {
  checkoutCli: `in this source checkout run it through npm (npm start, npx cursor-bridge <command>), which uses the Node 22 pinned in devDependencies, or install Node ${minimumNode} or newer.`,
  checkoutExample: `in this source checkout run it through npm (npx cursor-bridge example mcp-tool-host), which uses the Node 22 pinned in devDependencies, or install Node ${minimumNode} or newer.`,
  package: `install Node ${minimumNode} or newer and run cursor-bridge with it (with nvm: \`nvm install 22\`, then \`npm install -g cursor-bridge\` again on that Node).`,
  ccr: `run Claude Code Router with Node ${minimumNode} or newer (the node that runs \`ccr start\`); Cursor requests fail until then.`,
  ccr3: `run Claude Code Router 3 with Node ${minimumNode} or newer (\`ccr stop\`, then \`ccr start\` on that node); the plugin stays disabled until then.`,
};

/** The one line, the same for every entry but for its advice. */
const refusal = (found: string, entryAdvice: string): string =>
  `cursor-bridge needs Node.js >= ${minimumNode} but runs on ${found}: ${entryAdvice}`;

/** `--import` this to make the process report `version` (as an old Node would). */
const fakeNode = (version: string): string =>
  `data:text/javascript,${encodeURIComponent(
    `Object.defineProperty(process.versions, 'node', { value: ${JSON.stringify(version)} });` +
      `Object.defineProperty(process, 'version', { value: ${JSON.stringify(`v${version}`)} });`,
  )}`;

/** Node binaries on PATH older than the minimum (the system Node on these machines is 20). */
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

/** A Node to run an entry on: the test's own (22) made to report `fake`, or a real old binary. */
type Runtime = { label: string; command: string; prefix: string[]; found: string };

const runtimes = (): Runtime[] => [
  ...['22.18.0', '20.19.0', '18.20.4'].map((version) => ({
    label: `Node ${version} (faked)`,
    command: process.execPath,
    prefix: ['--import', fakeNode(version)],
    found: `v${version}`,
  })),
  ...findOldNodes().map(({ path, version }) => ({
    label: `the real ${version} at ${path}`,
    command: path,
    prefix: [],
    found: version,
  })),
];

let home: string;
beforeAll(async () => {
  await ensureBuilt();
}, 180_000);
beforeEach(async () => {
  home = await realpath(await mkdtemp(join(tmpdir(), 'cursor-bridge-node-entries-')));
});
afterEach(async () => {
  await killLeftoverChildren();
  await rm(home, { recursive: true, force: true });
});

/** Runs `node <prefix> <entry> ...args` in `root` (the checkout, or an installed copy). */
const runEntry = (runtime: Runtime, entry: string, args: readonly string[] = []) =>
  runCli(args, { env: createChildEnv(home), command: runtime.command, prefix: [...runtime.prefix, entry] });

/** The CCR 1/2 transformer as CCR loads it (`require` + `new`), answering one request; prints what it says. */
const transformerScript = (root: string): string =>
  `const Transformer = require(${JSON.stringify(join(root, 'ccr', 'cursor-sdk.cjs'))});` +
  `new Transformer({}).transformRequestIn({}, {}, {}).then(` +
  `() => process.stdout.write('loaded'), (error) => process.stdout.write(error.message));`;

/** The CCR 3 plugin as CCR imports it; prints why the import failed. */
const pluginScript = (root: string): string =>
  `import(${JSON.stringify(join(root, 'ccr', 'ccr3-plugin.mjs'))}).then(` +
  `() => process.stdout.write('loaded'), (error) => process.stdout.write(error.message));`;

describe.each(runtimes())('every entry point on $label', (runtime) => {
  it('bin/cursor-bridge.js: exit 2, the line on stderr with the checkout advice', async () => {
    const result = await runEntry(runtime, join(repoRoot, 'bin', 'cursor-bridge.js'), ['serve']);
    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr: `${refusal(runtime.found, advice.checkoutCli)}\n`,
    });
  });

  it('the example tool host, run directly: exit 2, the same line with the example command', async () => {
    const result = await runEntry(runtime, join(repoRoot, 'examples', 'mcp-tool-host.mjs'));
    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr: `${refusal(runtime.found, advice.checkoutExample)}\n`,
    });
  });

  it('`cursor-bridge example mcp-tool-host`: the bin refuses first', async () => {
    const result = await runEntry(runtime, join(repoRoot, 'bin', 'cursor-bridge.js'), [
      'example',
      'mcp-tool-host',
    ]);
    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr: `${refusal(runtime.found, advice.checkoutCli)}\n`,
    });
  });

  it('the CCR transformer loads, prints the line once and fails Cursor requests with it', async () => {
    const result = await runCli(['-e', transformerScript(repoRoot)], {
      env: createChildEnv(home),
      command: runtime.command,
      prefix: runtime.prefix,
    });
    const line = refusal(runtime.found, advice.ccr);
    expect(result).toEqual({ code: 0, stdout: line, stderr: `${line}\n` });
  });

  it('the CCR 3 plugin refuses to load with the line (CCR logs it and disables the plugin)', async () => {
    const result = await runCli(['-e', pluginScript(repoRoot)], {
      env: createChildEnv(home),
      command: runtime.command,
      prefix: runtime.prefix,
    });
    expect(result).toEqual({ code: 0, stdout: refusal(runtime.found, advice.ccr3), stderr: '' });
  });
});

describe('an npm install (the package under node_modules, without its sources)', () => {
  /** The files the version rule and the entries need, laid out as `npm install -g` lays them out. */
  const installCopy = async (): Promise<string> => {
    const root = join(home, 'prefix', 'lib', 'node_modules', 'cursor-bridge');
    await mkdir(root, { recursive: true });
    for (const entry of ['package.json', 'bin', 'ccr', 'examples'])
      await cp(join(repoRoot, entry), join(root, entry), { recursive: true });
    return root;
  };
  const old: Runtime = {
    label: 'Node 20.19.0 (faked)',
    command: process.execPath,
    prefix: ['--import', fakeNode('20.19.0')],
    found: 'v20.19.0',
  };

  it.each([
    ['bin/cursor-bridge.js', ['--version']],
    ['examples/mcp-tool-host.mjs', []],
  ] as const)('%s advises a newer Node, not npm scripts it does not have', async (entry, args) => {
    const root = await installCopy();
    const result = await runEntry(old, join(root, entry), args);
    expect(result).toEqual({ code: 2, stdout: '', stderr: `${refusal(old.found, advice.package)}\n` });
  });
});

describe('the examples on a supported Node', () => {
  it('are in the package (`npm pack`)', async () => {
    const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: repoRoot,
      env: createChildEnv(home),
    });
    const [pack] = JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>;
    const files = pack?.files.map((file) => file.path) ?? [];
    expect(files).toContain('examples/mcp-tool-host.mjs');
    expect(files).toContain('bin/node-version.cjs');
  });

  it('`cursor-bridge example` lists them; an unknown name exits 2', async () => {
    const listed = await runCli(['example'], { env: createChildEnv(home) });
    expect(listed.code).toBe(0);
    expect(listed.stdout).toBe(`mcp-tool-host   ${join(repoRoot, 'examples', 'mcp-tool-host.mjs')}\n`);
    const unknown = await runCli(['example', 'nope'], { env: createChildEnv(home) });
    expect(unknown).toEqual({
      code: 2,
      stdout: '',
      stderr: 'cursor-bridge: no example "nope"; the examples are: mcp-tool-host\n',
    });
  });

  it('`cursor-bridge example mcp-tool-host` runs the tool host (it tries to attach, and stops on SIGTERM)', async () => {
    const child = startCli(['example', 'mcp-tool-host'], {
      // Nothing listens there: the host says it cannot attach and retries.
      env: createChildEnv(home, { CURSOR_BRIDGE_MCP_URL: 'ws://127.0.0.1:9/host' }),
    });
    await child.waitFor('stderr', /cannot attach to ws:\/\/127\.0\.0\.1:9\/host/);
    child.child.kill('SIGTERM');
    expect(await child.exited).toEqual({ code: 0, signal: null });
  });

  it('states one minimum everywhere: package.json engines, the README', async () => {
    const manifest = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as {
      engines: { node: string };
    };
    expect(manifest.engines.node).toBe(`>=${minimumNode}`);
    const readme = await readFile(join(repoRoot, 'README.md'), 'utf8');
    expect(readme).toContain(`Node.js ≥ ${minimumNode} to run`);
    expect(readme).not.toMatch(/(Node(\.js)? (≥|>=) ?|older than )22\.(?!19\.0)\d+/);
  });
});

describe('a supported Node', () => {
  it.each([minimumNode, '22.20.1', '24.0.0'])('Node %s runs the bin', async (version) => {
    const result = await runCli(['--version'], {
      env: createChildEnv(home),
      prefix: ['--import', fakeNode(version), join(repoRoot, 'bin', 'cursor-bridge.js')],
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });
});
