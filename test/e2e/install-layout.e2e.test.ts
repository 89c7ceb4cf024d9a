/**
 * The Docker image without a container engine: `npm pack` the project, run the Dockerfile's runtime
 * install commands (read from the Dockerfile) into a temporary prefix instead of /usr/local, then
 * start the installed `cursor-bridge` with the image's ENV and CMD in a simulated container
 * (`container=docker`). The npm install uses the machine's npm cache first (`prefer-offline`) and the
 * npm registry only for what the cache lacks.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { startFakeCursorBackend } from '../fakes/cursor-backend/index.js';
import { ensureBuilt } from '../helpers/ensure-built.js';
import { repoRoot } from '../helpers/repo-root.js';
import {
  findFreePort,
  killLeftoverChildren,
  nodeBinary,
  runCli,
  startCli,
  stopChild,
} from '../helpers/cli/cli-process.js';
import {
  envOf,
  execForm,
  readDockerfile,
  readDockerfileArgs,
  runCommands,
  type DockerStage,
} from '../helpers/docker/dockerfile-steps.js';

const run = promisify(execFile);

let work: string;
let prefix: string;
let runtime: DockerStage;
let installMs = 0;

/** The image's Node (22) first on PATH, so `#!/usr/bin/env node` scripts run on it. */
const pathWithNode22 = [dirname(nodeBinary), process.env['PATH'] ?? ''].join(delimiter);

beforeAll(async () => {
  await ensureBuilt();
  const stages = await readDockerfile();
  const [build, last] = [stages[0], stages.at(-1)];
  if (build === undefined || last === undefined || stages.length !== 2)
    throw new Error('expected a build stage and a runtime stage');
  runtime = last;
  // Both stages start from node:22-slim unless a build passes another NODE_IMAGE.
  expect(await readDockerfileArgs()).toEqual({ NODE_IMAGE: 'node:22-slim' });
  expect(build.from).toBe('${NODE_IMAGE} AS build');
  expect(runtime.from).toBe('${NODE_IMAGE}');
  expect(runCommands(build)).toContain('npm pack --ignore-scripts --pack-destination /pkg');

  work = await realpath(await mkdtemp(join(tmpdir(), 'cursor-bridge-docker-layout-')));
  prefix = join(work, 'usr-local');
  await mkdir(prefix);
  const packDir = join(work, 'pkg');
  await mkdir(packDir);
  await run('npm', ['pack', '--ignore-scripts', '--pack-destination', packDir], { cwd: repoRoot });
  const [tarball] = await readdir(packDir);
  if (tarball === undefined) throw new Error('npm pack wrote nothing');

  // The runtime stage's install steps, with the temp prefix for /usr/local and the packed tarball for
  // the one COPY'd from the build stage. Only image-size cleanup (rm, npm cache clean) is not run here.
  const commands = runCommands(runtime);
  expect(commands).toContain('rm /tmp/cursor-bridge.tgz');
  expect(commands).toContain('npm cache clean --force');
  const install = commands.filter((command) => !/^rm |^npm cache clean|^mkdir -p \/home\/node/.test(command));
  expect(install[0]).toMatch(
    /^npm install --global --prefix \/usr\/local --omit=dev .* \/tmp\/cursor-bridge\.tgz$/,
  );
  const started = Date.now();
  for (const command of install) {
    const local = command
      .replaceAll('/tmp/cursor-bridge.tgz', join(packDir, tarball))
      .replaceAll('/usr/local', prefix);
    const { stdout } = await run('sh', ['-c', local], {
      cwd: work,
      env: {
        ...process.env,
        PATH: pathWithNode22,
        npm_config_prefer_offline: 'true',
        npm_config_update_notifier: 'false',
        npm_config_fund: 'false',
        npm_config_audit: 'false',
      },
      maxBuffer: 16 * 1024 * 1024,
    });
    if (command.startsWith('node -e')) expect(stdout).toMatch(/^@cursor\/sdk-linux-(x64|arm64) at \//);
  }
  installMs = Date.now() - started;
}, 300_000);

afterEach(async () => {
  await killLeftoverChildren();
});
afterAll(async () => {
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

const packageDir = (): string => join(prefix, 'lib', 'node_modules', 'cursor-bridge');

describe('the Docker build stage', () => {
  it("copies every directory the package ships (package.json's files) but the dist/ it builds", async () => {
    const manifest = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as {
      files: string[];
    };
    const [build] = await readDockerfile();
    const copied = (build?.instructions ?? [])
      .filter((instruction) => instruction.keyword === 'COPY')
      .map((instruction) => instruction.args.split(/\s+/)[0]);
    for (const shipped of manifest.files.filter((entry) => entry !== 'dist')) {
      expect(copied, `COPY ${shipped} in the build stage`).toContain(shipped);
    }
  });
});

describe('the Docker runtime install (npm install --omit=dev of the packed tarball)', () => {
  it('has the build output, the CCR transformer and the SDK platform package, and no devDependencies', () => {
    console.info(`docker install-layout: runtime install took ${installMs} ms`);
    const root = packageDir();
    expect(existsSync(join(prefix, 'bin', 'cursor-bridge'))).toBe(true);
    for (const file of [
      'dist/src/cli/main.js',
      'dist/mcp',
      'dist/lib',
      'ccr/cursor-sdk.cjs',
      'workspace-templates',
      'console/index.html',
    ]) {
      expect(existsSync(join(root, file)), file).toBe(true);
    }
    expect(existsSync(join(root, 'node_modules', '@cursor', 'sdk', 'package.json'))).toBe(true);
    expect(
      existsSync(
        join(root, 'node_modules', '@cursor', `sdk-${process.platform}-${process.arch}`, 'package.json'),
      ),
    ).toBe(true);
    for (const dev of ['typescript', 'vitest', 'eslint', 'tsx', 'node']) {
      expect(existsSync(join(root, 'node_modules', dev)), dev).toBe(false);
    }
    expect(existsSync(join(root, 'src')), 'TypeScript sources are not shipped').toBe(false);
  });

  it('ships a CCR transformer that loads as CCR loads it (require + new) from the installed package', async () => {
    const transformer = join(packageDir(), 'ccr', 'cursor-sdk.cjs');
    const script = `const T = require(${JSON.stringify(transformer)}); const t = new T({ cursorMode: 'bridge' }); process.stdout.write(String(t.name) + ' ' + typeof t.transformRequestIn);`;
    const { stdout } = await run(nodeBinary, ['-e', script], { cwd: work });
    expect(stdout).toBe('cursor-sdk function');
    expect(existsSync(join(packageDir(), 'dist', 'src', 'hosts', 'ccr', 'ccr-transformer.js'))).toBe(true);
  });

  it('serves /health and a turn on 0.0.0.0 with APIKEY in a container, sandbox forced off; the HEALTHCHECK passes', async () => {
    const home = join(work, 'home-ok');
    await mkdir(home);
    const imageEnv = envOf(runtime);
    expect(imageEnv).toMatchObject({ NODE_ENV: 'production', HOST: '0.0.0.0' });
    expect(execForm(runtime, 'ENTRYPOINT')).toEqual(['cursor-bridge']);
    const cmd = execForm(runtime, 'CMD');
    expect(cmd).toEqual(['serve', '--port', '3456']);
    const port = await findFreePort();
    const backend = await startFakeCursorBackend();
    const child = startCli([...cmd.slice(0, -1), String(port)], {
      command: join(prefix, 'bin', 'cursor-bridge'),
      prefix: [],
      cwd: home,
      env: {
        ...imageEnv,
        PATH: pathWithNode22,
        HOME: home,
        container: 'docker',
        APIKEY: 'docker-test-secret',
        CURSOR_API_KEY: 'crsr_test',
        CURSOR_BACKEND_URL: backend.url,
        CCR_CURSOR_SANDBOX: '1',
        LOG_LEVEL: 'info',
      },
    });
    try {
      await child.waitFor(
        'stderr',
        new RegExp(`cursor-bridge listening on http://0\\.0\\.0\\.0:${port}\\n`),
        30_000,
      );
      const health = await fetch(`http://127.0.0.1:${port}/health`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: 'ok', cursor: { ready: true } });
      // APIKEY from the environment guards everything but / and /health.
      expect((await fetch(`http://127.0.0.1:${port}/v1/models`)).status).toBe(401);
      // The console's page and its libraries come from the installed package; its data needs the key.
      for (const file of [
        '',
        '/console.js',
        '/vendor/preact-hooks.mjs',
        '/vendor/htm.mjs',
        '/vendor/uPlot.esm.js',
      ]) {
        const asset = await fetch(`http://127.0.0.1:${port}/console${file}`);
        expect(asset.status, `/console${file}`).toBe(200);
      }
      expect((await fetch(`http://127.0.0.1:${port}/console/api/state`)).status).toBe(401);
      const state = await fetch(`http://127.0.0.1:${port}/console/api/state`, {
        headers: { 'x-api-key': 'docker-test-secret' },
      });
      expect(state.status).toBe(200);
      const sandboxLine = child
        .stdout()
        .split('\n')
        .find((line) => line.includes('Cursor local sandbox'));
      expect(JSON.parse(sandboxLine ?? '{}')).toMatchObject({
        enabled: false,
        reason: 'forced off: running inside a container',
      });

      // A turn through the installed @cursor/sdk (its native platform package) to the fake Cursor backend.
      const answer = await fetch(`http://127.0.0.1:${port}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': 'docker-test-secret' },
        body: JSON.stringify({
          model: 'composer-2',
          max_tokens: 64,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      expect(answer.status).toBe(200);
      expect(await answer.json()).toMatchObject({
        role: 'assistant',
        content: [{ type: 'text', text: 'ok' }],
      });
      expect(backend.runRequests.length).toBe(1);

      const healthcheck = runtime.instructions.find((instruction) => instruction.keyword === 'HEALTHCHECK');
      const probe = JSON.parse(healthcheck?.args.replace(/^.*?CMD /, '') ?? '[]') as string[];
      expect(probe.slice(0, 2)).toEqual(['node', '-e']);
      const script = (probe[2] ?? '').replace('127.0.0.1:3456', `127.0.0.1:${port}`);
      await expect(run(nodeBinary, ['-e', script])).resolves.toBeDefined();
    } finally {
      const exit = await stopChild(child);
      await backend.close();
      expect(exit.code).toBe(0);
    }
    // Once stopped, the same probe fails: it really checks the server.
    const healthcheck = runtime.instructions.find((instruction) => instruction.keyword === 'HEALTHCHECK');
    const probe = JSON.parse(healthcheck?.args.replace(/^.*?CMD /, '') ?? '[]') as string[];
    await expect(
      run(nodeBinary, ['-e', (probe[2] ?? '').replace('127.0.0.1:3456', `127.0.0.1:${port}`)]),
    ).rejects.toThrow();
  }, 60_000);

  it('refuses to start on 0.0.0.0 without APIKEY: exit 2 and why, nothing listening', async () => {
    const home = join(work, 'home-refused');
    await mkdir(home);
    const port = await findFreePort();
    const result = await runCli(['serve', '--port', String(port)], {
      command: join(prefix, 'bin', 'cursor-bridge'),
      prefix: [],
      cwd: home,
      env: { ...envOf(runtime), PATH: pathWithNode22, HOME: home, container: 'docker' },
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^cursor-bridge: \$HOST 0\.0\.0\.0 needs APIKEY: .*inside a container/);
    expect(result.stdout).not.toMatch(/listening/);
  }, 60_000);
});
