/**
 * What needs Docker itself. `compose.yml` is checked with `docker compose config` wherever the compose
 * plugin (or the standalone `docker-compose`) is installed; no daemon is needed for that. Building and
 * running the image is opt-in (`CURSOR_BRIDGE_DOCKER_TEST=1`) and needs a reachable daemon. Either
 * way, a test that cannot run here says so on stderr and in the test name.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

import { repoRoot } from '../helpers/repo-root.js';
import { findComposeCommand, succeeds } from '../helpers/docker/compose-command.js';
import { findFreePort } from '../helpers/cli/cli-process.js';
import { startFakeCursorBackend } from '../fakes/cursor-backend/index.js';

const run = promisify(execFile);

const compose = findComposeCommand();
if (compose === undefined) {
  console.warn(
    'compose.yml NOT validated: neither the docker compose plugin nor docker-compose is installed here',
  );
}

const dockerOptIn = process.env['CURSOR_BRIDGE_DOCKER_TEST'] === '1';
/**
 * The Node 22 image the Dockerfile starts from (`--build-arg NODE_IMAGE`); default its own `node:22-slim`.
 * Where Docker Hub is unreachable, test/docker/build-local-node-image.sh makes one.
 */
const nodeImage = process.env['CURSOR_BRIDGE_DOCKER_NODE_IMAGE'];
const buildArgs =
  nodeImage === undefined || nodeImage === '' ? [] : ['--build-arg', `NODE_IMAGE=${nodeImage}`];
const daemon = dockerOptIn && succeeds('docker', ['info']);
if (!daemon) {
  console.warn(
    dockerOptIn
      ? 'Docker image test did NOT run: CURSOR_BRIDGE_DOCKER_TEST=1 but no Docker daemon answers `docker info`'
      : 'Docker image test did NOT run: set CURSOR_BRIDGE_DOCKER_TEST=1 on a machine with a Docker daemon',
  );
}

const composeEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const name of ['CURSOR_BRIDGE_BIND', 'CURSOR_BRIDGE_PORT']) {
    if (!(name in extra)) delete env[name];
  }
  return env;
};

describe.runIf(compose !== undefined)(
  `compose.yml under \`${(compose ?? ['docker compose']).join(' ')} config\``,
  () => {
    const config = async (extra: Record<string, string>): Promise<string> => {
      const [command = 'docker', ...prefix] = compose ?? [];
      const { stdout } = await run(command, [...prefix, '-f', join(repoRoot, 'compose.yml'), 'config'], {
        cwd: repoRoot,
        env: composeEnv(extra),
      });
      return stdout;
    };

    it('is valid: service cursor-bridge, keys passed through, host port on 127.0.0.1, named volume for ~/.claude-code-router', async () => {
      const text = await config({ CURSOR_API_KEY: 'crsr_from_shell', APIKEY: 'client-secret' });
      expect(text).toMatch(/^services:\n {2}cursor-bridge:\n/m);
      expect(text).toMatch(/CURSOR_API_KEY: crsr_from_shell\n/);
      expect(text).toMatch(/APIKEY: "?client-secret"?\n/);
      // v2 prints ports in long syntax, v1 in short syntax.
      expect(text).toMatch(/host_ip: 127\.0\.0\.1[\s\S]*published: "?3456"?|- 127\.0\.0\.1:3456:3456/);
      expect(text).toMatch(
        /claude-code-router:\/home\/node\/\.claude-code-router|source: claude-code-router\n\s+target: \/home\/node\/\.claude-code-router/,
      );
      expect(text).toMatch(/^volumes:\n {2}claude-code-router:/m);
    });

    it('binds elsewhere only when asked (CURSOR_BRIDGE_BIND, CURSOR_BRIDGE_PORT)', async () => {
      const text = await config({ CURSOR_BRIDGE_BIND: '0.0.0.0', CURSOR_BRIDGE_PORT: '4000', APIKEY: 'k' });
      expect(text).toMatch(/host_ip: 0\.0\.0\.0[\s\S]*published: "?4000"?|- 0\.0\.0\.0:4000:3456/);
    });
  },
);

describe.runIf(daemon)('the Docker image (CURSOR_BRIDGE_DOCKER_TEST=1)', () => {
  const tag = `cursor-bridge:test-${process.pid}`;
  const containers: string[] = [];
  afterAll(async () => {
    // Only the containers this test started, by id.
    for (const id of containers) await run('docker', ['rm', '-f', id]).catch(() => undefined);
    await run('docker', ['image', 'rm', '-f', tag]).catch(() => undefined);
  });

  it('builds, runs as non-root on 0.0.0.0 with APIKEY, answers /health through a 127.0.0.1 port, refuses without APIKEY', async () => {
    await run('docker', ['build', ...buildArgs, '-t', tag, repoRoot], {
      maxBuffer: 64 * 1024 * 1024,
      timeout: 900_000,
    });
    const port = await findFreePort();
    const { stdout } = await run('docker', [
      'run',
      '-d',
      '-e',
      'APIKEY=docker-secret',
      '-e',
      'CURSOR_API_KEY=crsr_docker_test',
      '-e',
      'CCR_CURSOR_SANDBOX=1',
      '-p',
      `127.0.0.1:${port}:3456`,
      tag,
    ]);
    const id = stdout.trim();
    containers.push(id);
    let health: Response | undefined;
    for (let attempt = 0; attempt < 60 && health?.status !== 200; attempt += 1) {
      health = await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined);
      if (health?.status !== 200) await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(health?.status).toBe(200);
    expect((await run('docker', ['exec', id, 'id', '-u'])).stdout.trim()).not.toBe('0');
    const healthcheck = JSON.parse(
      (await run('docker', ['inspect', '--format', '{{json .Config.Healthcheck.Test}}', id])).stdout,
    ) as string[];
    await run('docker', ['exec', id, ...healthcheck.slice(1)]);
    const logs = await run('docker', ['logs', id]);
    expect(logs.stdout).toMatch(/"reason":"forced off: running inside a container"/);

    const refused = await run('docker', ['run', '--rm', tag]).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code?: number; stderr?: string }) => ({ code: error.code, stderr: error.stderr ?? '' }),
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/needs APIKEY/);
  }, 1_200_000);

  it('runs a host tool round trip through the image (real SDK, fake Cursor backend), and stops cleanly on docker stop', async () => {
    // The container shares this machine's loopback (host network), so the fake backend stays on 127.0.0.1.
    const backend = await startFakeCursorBackend({
      scenario: async (run) => {
        const result = await run.toolCall({ toolName: 'Bash', args: { command: 'echo from-the-host' } });
        const text = result.status === 'success' ? JSON.stringify(result.content) : result.status;
        run.text(`The tool said ${text.includes('from-the-host') ? 'from-the-host' : text}.`);
      },
    });
    const port = await findFreePort();
    try {
      const { stdout } = await run('docker', [
        'run',
        '-d',
        '--network',
        'host',
        '-e',
        'APIKEY=docker-secret',
        '-e',
        'CURSOR_API_KEY=crsr_docker_test',
        '-e',
        `CURSOR_BACKEND_URL=${backend.url}`,
        '-e',
        'CCR_CURSOR_SANDBOX=1',
        tag,
        'serve',
        '--port',
        String(port),
      ]);
      const id = stdout.trim();
      containers.push(id);
      const base = `http://127.0.0.1:${port}`;
      let health: Response | undefined;
      for (let attempt = 0; attempt < 60 && health?.status !== 200; attempt += 1) {
        health = await fetch(`${base}/health`).catch(() => undefined);
        if (health?.status !== 200) await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect(health?.status).toBe(200);
      const headers = { 'content-type': 'application/json', 'x-api-key': 'docker-secret' };
      const tools = [
        {
          name: 'Bash',
          description: 'Run a shell command',
          input_schema: {
            type: 'object',
            properties: { command: { type: 'string' } },
            required: ['command'],
          },
        },
      ];
      const ask = { role: 'user', content: 'Run it.' };
      const first = await fetch(`${base}/v1/messages`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: 'composer-2', max_tokens: 256, tools, messages: [ask] }),
      });
      const toolUse = (await first.json()) as {
        stop_reason: string;
        content: Array<{ type: string; id?: string; name?: string; input?: unknown }>;
      };
      expect(toolUse.stop_reason).toBe('tool_use');
      const call = toolUse.content.find((block) => block.type === 'tool_use');
      expect(call).toMatchObject({ name: 'Bash', input: { command: 'echo from-the-host' } });
      const second = await fetch(`${base}/v1/messages`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          model: 'composer-2',
          max_tokens: 256,
          tools,
          messages: [
            ask,
            { role: 'assistant', content: toolUse.content },
            {
              role: 'user',
              content: [{ type: 'tool_result', tool_use_id: call?.id, content: 'from-the-host\n' }],
            },
          ],
        }),
      });
      const answer = (await second.json()) as { stop_reason: string; content: Array<{ text?: string }> };
      expect(answer.stop_reason).toBe('end_turn');
      expect(answer.content.map((block) => block.text ?? '').join('')).toBe('The tool said from-the-host.');
      // One run: the result resumed the parked run inside the container.
      expect(backend.runRequests).toHaveLength(1);
      const logs = await run('docker', ['logs', id]);
      expect(logs.stdout).toMatch(/"reason":"forced off: running inside a container"/);

      await run('docker', ['stop', id]);
      const state = JSON.parse(
        (await run('docker', ['inspect', '--format', '{{json .State}}', id])).stdout,
      ) as {
        ExitCode: number;
        OOMKilled: boolean;
      };
      expect(state).toMatchObject({ ExitCode: 0, OOMKilled: false });
      expect((await run('docker', ['logs', id])).stdout).toMatch(
        /"finished":true,"abandoned":0,"msg":"stopped"/,
      );
    } finally {
      await backend.close();
    }
  }, 300_000);
});
