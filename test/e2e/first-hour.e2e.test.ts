/**
 * Acceptance for a new user's first hour: the README's "Try it" commands for a source checkout, run from a
 * fresh `git clone` of this repository, end with the real Claude Code answering through a
 * `cursor-bridge serve` that `cursor-bridge claude` started by itself — and stopped when Claude Code exited.
 *
 * The README block is read from the clone and run line by line; every line must be one this test knows:
 * - `git clone … && cd cursor-bridge`: the test's own `git clone` of this repository (its committed tree);
 * - `npm install`: the clone gets this checkout's installed `node_modules` (a link: the registry is not
 *   reachable offline) and `npm run build`, the build `npm install` runs (`prepare`);
 * - `export CURSOR_API_KEY=crsr_...`: a test key;
 * - `npx cursor-bridge claude`: run as written, plus `-p <prompt>` and Claude Code's offline flags, in the
 *   clone, with the system `npx` (whose Node is older on these machines: `npx` runs the clone's bin on the
 *   pinned Node 22, as the README says).
 *
 * Everything of that last command runs in a private network namespace (`network-isolation.ts`) whose only
 * reachable address is the fake Cursor backend, relayed to 127.0.0.1:7777 there; port 3456 there is free, so the
 * session's serve takes the default port. A second scenario puts a running `serve` (recorded) at 3456 and
 * checks that `cursor-bridge claude` uses it instead of starting one.
 */

import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, onTestFailed, onTestFinished } from 'vitest';

import { startFakeCursorBackend } from '../fakes/cursor-backend/index.js';
import type { Scenario } from '../fakes/cursor-backend/run-context.js';
import { repoRoot } from '../helpers/repo-root.js';
import { findFreePort } from '../helpers/free-port.js';
import { claudeCodeDriver, claudeCodeResult } from '../helpers/e2e/claude-code-driver.js';
import { codexAgentMessages } from '../helpers/e2e/codex-driver.js';
import { clientTimeoutMs, installTimeoutMs } from '../helpers/e2e/e2e-harness.js';
import { createFakeBackendModel } from '../helpers/e2e/fake-backend-model.js';
import { ensureClient, type InstalledClient } from '../helpers/e2e/install-clients.js';
import { quoteToolResults, type ModelScenario } from '../helpers/e2e/model-scenario.js';
import { openClientEndpoint, type ClientEndpoint } from '../helpers/e2e/network-isolation.js';
import { clientPath, runClient, type ClientRun, type ClientSandbox } from '../helpers/e2e/run-client.js';
import { startServeBridge } from '../helpers/e2e/serve-bridge.js';

const run = promisify(execFile);

/** Where the fake Cursor backend is inside the namespace (any port but serve's 3456). */
const backendPort = 7777;

let work: string;
let clone: string;
let claude: InstalledClient;
let codex: InstalledClient;
/** The README's source-checkout block, one command per line, comments dropped. */
let readmeBlock: string[];

/** The fenced `sh` block after the README line "From a source checkout:". */
const readSourceCheckoutBlock = async (readmePath: string): Promise<string[]> => {
  const lines = (await readFile(readmePath, 'utf8')).split('\n');
  const start = lines.indexOf('From a source checkout:');
  if (start < 0) throw new Error('README.md has no "From a source checkout:" block');
  const open = lines.indexOf('```sh', start);
  const close = lines.indexOf('```', open + 1);
  return lines
    .slice(open + 1, close)
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter(Boolean);
};

beforeAll(async () => {
  [claude, codex] = await Promise.all([ensureClient('claude-code'), ensureClient('codex')]);
  work = await realpath(await mkdtemp(join(tmpdir(), 'cb-e2e-first-hour-')));
  clone = join(work, 'cursor-bridge');
  await run('git', ['clone', '--quiet', repoRoot, clone]);
  readmeBlock = await readSourceCheckoutBlock(join(clone, 'README.md'));
  const [cloneLine, installLine] = readmeBlock;
  expect(cloneLine).toMatch(/^git clone .+ cursor-bridge && cd cursor-bridge$/);
  expect(installLine).toBe('npm install');
  await symlink(join(repoRoot, 'node_modules'), join(clone, 'node_modules'));
  await run('npm', ['run', 'build'], {
    cwd: clone,
    env: { ...process.env, npm_config_update_notifier: 'false' },
    maxBuffer: 16 * 1024 * 1024,
  });
}, installTimeoutMs);
afterAll(async () => {
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

/** A unix socket that leads to a TCP port on the host's loopback (for the namespace relay). */
const socketTo = async (path: string, port: number): Promise<Server> => {
  const server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return server;
};

/**
 * The fake Cursor backend answering `scenario`, reached from the client's network namespace as
 * `endpoint.baseUrl` (through a unix socket), and a fresh HOME `home-<name>`; all closed when the test ends.
 */
const startBackendFor = async (
  name: string,
  scenario: Scenario,
): Promise<{ endpoint: ClientEndpoint; home: string }> => {
  const backend = await startFakeCursorBackend({ scenario });
  const socketPath = join(work, `backend-${name}.sock`);
  const backendSocket = await socketTo(socketPath, Number(new URL(backend.url).port));
  const endpoint = await openClientEndpoint(socketPath, [], backendPort);
  const home = join(work, `home-${name}`);
  await mkdir(join(home, 'tmp'), { recursive: true });
  onTestFinished(async () => {
    await endpoint.close();
    await new Promise<void>((resolve) => backendSocket.close(() => resolve()));
    await backend.close();
  });
  return { endpoint, home };
};

/** The processes whose command line names `text`, from /proc (looked at, never signalled). */
const processesNaming = async (text: string): Promise<string[]> => {
  const found: string[] = [];
  for (const pid of (await readdir('/proc')).filter((entry) => /^\d+$/.test(entry))) {
    const cmdline = await readFile(join('/proc', pid, 'cmdline'), 'utf8').catch(() => '');
    if (cmdline.includes(text)) found.push(`${pid}: ${cmdline.replaceAll('\0', ' ')}`);
  }
  return found;
};

const scenario: ModelScenario = {
  turns: [
    {
      steps: [
        { text: 'Checking on the host.', toolCalls: [{ shell: 'echo first-hour-$((40+2))' }] },
        { text: (context) => `The command printed: ${quoteToolResults(context)}` },
      ],
    },
  ],
};

/**
 * The README's lines after the install, as a shell script for the clone: the key exported, then the
 * `npx cursor-bridge claude` line with `claudeArgs` appended. Any other line fails the test.
 */
const readmeScript = (claudeArgs: readonly string[]): string => {
  const rest = readmeBlock.slice(2);
  const script: string[] = [];
  for (const line of rest) {
    if (/^export CURSOR_API_KEY=crsr_/.test(line)) script.push('export CURSOR_API_KEY=crsr_first_hour_test');
    else if (line === 'npx cursor-bridge claude')
      script.push(`exec ${line} ${claudeArgs.map((arg) => `'${arg.replaceAll("'", "'\\''")}'`).join(' ')}`);
    else throw new Error(`README's source-checkout block has a line this test does not run: ${line}`);
  }
  return script.join('\n');
};

/** Runs the README's commands in the clone, inside the client's network namespace. */
const runReadme = async (options: {
  endpoint: ClientEndpoint;
  home: string;
  extraEnv?: Record<string, string>;
}): Promise<ClientRun> => {
  const claudeArgs = ['-p', 'Run the check command.', '--output-format', 'json', '--allowedTools', 'Bash'];
  const sandbox: ClientSandbox = { root: work, home: options.home, project: clone, remove: async () => {} };
  return runClient({
    binaryPath: '/bin/sh',
    args: ['-c', readmeScript(claudeArgs)],
    sandbox,
    endpoint: options.endpoint,
    env: {
      // The user's PATH: the system's (its Node is older than 22.19 here) and Claude Code.
      PATH: [join(claude.prefix, 'node_modules', '.bin'), clientPath].join(':'),
      TMPDIR: join(options.home, 'tmp'),
      npm_config_update_notifier: 'false',
      npm_config_fund: 'false',
      npm_config_audit: 'false',
      DISABLE_AUTOUPDATER: '1',
      ...options.extraEnv,
    },
    timeoutMs: 2 * clientTimeoutMs,
  });
};

const describeRun = (result: ClientRun): string =>
  `exit ${String(result.exitCode)}${result.timedOut ? ' (timed out)' : ''}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`;

/** Prints the run when the test fails (and always with E2E_REPORT=1, as the other e2e files do). */
const reportRun = (result: ClientRun, extra: () => string = () => ''): void => {
  onTestFailed(() => console.error(`${describeRun(result)}\n${extra()}`));
  if (process.env['E2E_REPORT'] === '1') console.log(`${describeRun(result)}\n${extra()}`);
};

describe('the README’s "Try it" from a fresh clone', { timeout: 3 * clientTimeoutMs }, () => {
  it('`npx cursor-bridge claude -p …` starts a serve for the session, Claude Code runs a tool and answers, and the serve stops with it', async () => {
    const model = createFakeBackendModel(scenario, claudeCodeDriver.shell, () => 0);
    const { endpoint, home } = await startBackendFor('1', model.scenario);
    // On the host's network (no namespaces: E2E_ALLOW_HOST_NETWORK=1) 3456 is the machine's: use a free port.
    const servePort = endpoint.isolation === 'netns' ? 3456 : await findFreePort();
    if (endpoint.isolation !== 'netns') {
      await mkdir(join(home, '.claude-code-router'), { recursive: true });
      await writeFile(join(home, '.claude-code-router', 'config.json'), JSON.stringify({ PORT: servePort }));
    }

    const result = await runReadme({ endpoint, home, extraEnv: { CURSOR_BACKEND_URL: endpoint.baseUrl } });
    reportRun(result);

    expect(result.exitCode).toBe(0);
    // `first-hour-42` exists only if Claude Code ran the command on the host: the call said `$((40+2))`.
    expect(claudeCodeResult(result.stdout)).toMatchObject({
      is_error: false,
      result: expect.stringContaining('The command printed: first-hour-42') as unknown,
    });
    expect(result.stderr).toContain(
      `cursor-bridge: started serve on http://127.0.0.1:${servePort} for this session; log: `,
    );
    const main = model.played.filter((played) => played.main);
    expect(main).toHaveLength(1);
    expect(main[0]?.request.requestedModel?.modelId).toBe('composer-2');
    // The session's serve exited before cursor-bridge did.
    expect(await processesNaming(join(clone, 'bin', 'cursor-bridge.js'))).toEqual([]);
    // A clean session leaves no log behind (Claude Code keeps files of its own there).
    expect((await readdir(join(home, 'tmp'))).filter((name) => name.startsWith('cursor-bridge-'))).toEqual(
      [],
    );
  });

  it('with a serve already running at 3456, `npx cursor-bridge claude` uses it', async () => {
    const bridge = await startServeBridge({ scenario, shell: claudeCodeDriver.shell });
    const endpoint = await openClientEndpoint(bridge.socketPath);
    const home = join(work, 'home-2');
    await mkdir(join(home, 'tmp'), { recursive: true });
    onTestFinished(async () => {
      await endpoint.close();
      await bridge.close();
    });
    const port = Number(new URL(endpoint.baseUrl).port);
    if (endpoint.isolation !== 'netns') {
      await mkdir(join(home, '.claude-code-router'), { recursive: true });
      await writeFile(join(home, '.claude-code-router', 'config.json'), JSON.stringify({ PORT: port }));
    }

    const result = await runReadme({ endpoint, home });
    reportRun(result, () => bridge.describe());

    expect(result.exitCode).toBe(0);
    expect(claudeCodeResult(result.stdout)?.result).toContain('The command printed: first-hour-42');
    expect(result.stderr).toContain(`cursor-bridge: using the serve at http://127.0.0.1:${port}\n`);
    expect(result.stderr).not.toContain('started serve');
    // Claude Code's requests carried the session's variables: the token, and the Router's model by name.
    const [first] = bridge.mainExchanges();
    expect(first?.headers['authorization']).toBe('Bearer cursor-bridge');
    expect(first?.body).toMatchObject({ model: 'cursor,composer-2' });
    expect(bridge.mainRuns()).toHaveLength(1);
  });
});

describe('cursor-bridge codex', { timeout: 3 * clientTimeoutMs }, () => {
  it('runs the real Codex with the bridge as its model provider, through a serve it started', async () => {
    // Every run answers with this text (no turn offers a tool named so).
    const model = createFakeBackendModel(
      { turns: [], sideReply: 'Codex through cursor-bridge.' },
      { name: 'no-such-tool', input: (command) => ({ command }) },
      () => 0,
    );
    const { endpoint, home } = await startBackendFor('3', model.scenario);
    const servePort = endpoint.isolation === 'netns' ? 3456 : await findFreePort();
    const codexArgs = [
      // Codex's own offline settings (no update check, no analytics, no plugins), then the user's command.
      ...[
        '-c',
        'check_for_update_on_startup=false',
        '-c',
        'analytics.enabled=false',
        '-c',
        'features.plugins=false',
      ],
      ...['exec', '--skip-git-repo-check', '--json', 'Say something.'],
    ];
    const sandbox: ClientSandbox = { root: work, home, project: clone, remove: async () => {} };
    const result = await runClient({
      binaryPath: '/bin/sh',
      args: [
        '-c',
        `exec npx cursor-bridge --port ${servePort} codex ${codexArgs.map((arg) => `'${arg}'`).join(' ')}`,
      ],
      sandbox,
      endpoint,
      env: {
        PATH: [join(codex.prefix, 'node_modules', '.bin'), clientPath].join(':'),
        TMPDIR: join(home, 'tmp'),
        npm_config_update_notifier: 'false',
        CURSOR_API_KEY: 'crsr_first_hour_test',
        CURSOR_BACKEND_URL: endpoint.baseUrl,
      },
      timeoutMs: 2 * clientTimeoutMs,
    });
    reportRun(result);

    expect(result.exitCode).toBe(0);
    // Its last message is the model's; the bridge's note on OpenAI-hosted tools may open the conversation.
    expect(codexAgentMessages(result.stdout).at(-1)).toBe('Codex through cursor-bridge.');
    expect(result.stderr).toContain(
      `cursor-bridge: started serve on http://127.0.0.1:${servePort} for this session`,
    );
    expect(model.played.map((played) => played.request.requestedModel?.modelId)).toContain('composer-2');
    expect(await processesNaming(join(clone, 'bin', 'cursor-bridge.js'))).toEqual([]);
  });
});
