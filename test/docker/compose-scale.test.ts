/**
 * `deploy/compose.scale.yml`: checked with `docker compose config` wherever the compose plugin (or the
 * standalone `docker-compose`) is installed (no daemon needed), and the HAProxy config it mounts is
 * checked by the real `haproxy -c` with the environment compose gives it.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ensureHaproxy, haproxyConfigPath } from '../helpers/e2e/haproxy-lb.js';
import { repoRoot } from '../helpers/repo-root.js';
import { findComposeCommand } from '../helpers/docker/compose-command.js';

const run = promisify(execFile);
const composeFile = join(repoRoot, 'deploy', 'compose.scale.yml');

const compose = findComposeCommand();
if (compose === undefined) {
  console.warn(
    'deploy/compose.scale.yml NOT validated: neither the docker compose plugin nor docker-compose is installed here',
  );
}

/** `compose config` output (block YAML), split into the text of each service. */
const resolvedServices = async (): Promise<Record<string, string>> => {
  const [command = 'docker', ...prefix] = compose ?? [];
  const env: NodeJS.ProcessEnv = { ...process.env, APIKEY: 'k', CURSOR_API_KEY: 'crsr_x' };
  for (const name of ['CURSOR_BRIDGE_BIND', 'CURSOR_BRIDGE_PORT', 'CURSOR_BRIDGE_DRAIN_TIMEOUT'])
    delete env[name];
  const { stdout } = await run(command, [...prefix, '-f', composeFile, 'config'], { cwd: repoRoot, env });
  const services = /^services:\n([\s\S]*?)(?=^\S)/m.exec(stdout)?.[1] ?? '';
  const blocks: Record<string, string> = {};
  for (const block of services.split(/^(?= {2}[\w-]+:$)/m)) {
    const name = /^ {2}([\w-]+):$/m.exec(block)?.[1];
    if (name !== undefined) blocks[name] = block;
  }
  return blocks;
};

describe.runIf(compose !== undefined)('deploy/compose.scale.yml', () => {
  it('runs three replicas of the repository image behind HAProxy with the deploy config, draining within docker’s stop grace', async () => {
    const services = await resolvedServices();
    expect(Object.keys(services).sort()).toEqual(['bridge1', 'bridge2', 'bridge3', 'haproxy']);
    for (const name of ['bridge1', 'bridge2', 'bridge3']) {
      const text = services[name] ?? '';
      expect(text).toMatch(/image: cursor-bridge:local\n/);
      expect(text).toContain(`context: ${repoRoot}\n`);
      expect(text).toMatch(/APIKEY: "?k"?\n/);
      expect(text).toMatch(/CURSOR_API_KEY: "?crsr_x"?\n/);
      const drain = Number(/CURSOR_BRIDGE_DRAIN_TIMEOUT: ['"]?(\d+)/.exec(text)?.[1]);
      expect(drain).toBe(30);
      // Docker SIGKILLs after stop_grace_period: it must outlast the drain.
      const grace = Number(/stop_grace_period: ['"]?(\d+)s/.exec(text)?.[1]);
      expect(grace).toBeGreaterThan(drain);
    }
    const haproxy = services['haproxy'] ?? '';
    expect(haproxy).toMatch(/image: haproxy:2\.6\n/);
    expect(haproxy).toMatch(/CURSOR_BRIDGE_LB_BIND: ['"]?:3456/);
    for (const index of [1, 2, 3])
      expect(haproxy).toMatch(new RegExp(`CURSOR_BRIDGE_BACKEND_${index}: ['"]?bridge${index}:3456`));
    expect(haproxy).toMatch(
      new RegExp(`${haproxyConfigPath}:/usr/local/etc/haproxy/haproxy\\.cfg:ro|source: ${haproxyConfigPath}`),
    );
    expect(haproxy).toMatch(/host_ip: 127\.0\.0\.1[\s\S]*published: "?3456"?|- 127\.0\.0\.1:3456:3456/);
  });
});

describe('deploy/haproxy/haproxy.cfg under haproxy -c', () => {
  it('is valid with the environment compose gives it (names, resolver, stats) and with loopback addresses', async () => {
    const haproxy = await ensureHaproxy();
    const check = (env: Record<string, string>) =>
      run(haproxy, ['-c', '-f', haproxyConfigPath], {
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env },
      });
    const composeEnv = {
      CURSOR_BRIDGE_LB_BIND: ':3456',
      CURSOR_BRIDGE_BACKEND_1: 'bridge1:3456',
      CURSOR_BRIDGE_BACKEND_2: 'bridge2:3456',
      CURSOR_BRIDGE_BACKEND_3: 'bridge3:3456',
      CURSOR_BRIDGE_LB_RESOLVER: '127.0.0.11:53',
      CURSOR_BRIDGE_LB_STATS_BIND: ':8404',
    };
    expect((await check(composeEnv)).stdout).toContain('Configuration file is valid');
    const loopback = {
      CURSOR_BRIDGE_LB_BIND: '127.0.0.1:3456',
      CURSOR_BRIDGE_BACKEND_1: '127.0.0.1:3461',
      CURSOR_BRIDGE_BACKEND_2: '127.0.0.1:3462',
      CURSOR_BRIDGE_BACKEND_3: '127.0.0.1:3463',
      CURSOR_BRIDGE_BACKEND_4: '127.0.0.1:3464',
    };
    expect((await check(loopback)).stdout).toContain('Configuration file is valid');
    // A backend left out is an error, not a silently smaller pool.
    const { CURSOR_BRIDGE_BACKEND_3: _left, ...missing } = loopback;
    await expect(check(missing)).rejects.toThrow();
  });
});
