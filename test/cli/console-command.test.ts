/**
 * `cursor-bridge console`: the console's address on the running serve, as a user runs it (its own process,
 * a fresh HOME). It says so, and exits 1, when no bridge answers there; the API key never goes in the URL.
 */

import { createServer, type Server } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createChildEnv, findFreePort, runCli } from '../helpers/cli/cli-process.js';
import { ensureBuilt } from '../helpers/ensure-built.js';

const homes: string[] = [];
const servers: Server[] = [];

const freshHome = async (): Promise<string> => {
  const home = await mkdtemp(join(tmpdir(), 'cb-console-cli-'));
  homes.push(home);
  return home;
};

/** A stand-in for a running serve: answers `/health` on 127.0.0.1. */
const startHealthServer = async (): Promise<number> => {
  const server = createServer((request, response) => {
    response.writeHead(request.url === '/health' ? 200 : 404, { 'content-type': 'application/json' });
    response.end('{"status":"ok"}');
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
};

describe('cursor-bridge console', () => {
  beforeAll(() => ensureBuilt(), 120_000);
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
    await Promise.all(homes.splice(0).map((home) => rm(home, { recursive: true, force: true })));
  });

  it("prints the console's address on the bridge of the config's PORT", async () => {
    const home = await freshHome();
    const port = await startHealthServer();
    const config = join(home, 'config.json');
    await writeFile(config, JSON.stringify({ PORT: port, APIKEY: 'sk-console-secret' }));
    const result = await runCli(['console', '--config', config], { env: createChildEnv(home), cwd: home });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`http://127.0.0.1:${port}/console\n`);
    expect(result.stderr).toContain('the page asks for it once');
    expect(result.stdout + result.stderr).not.toContain('sk-console-secret');
  });

  it('says no bridge answers, and exits 1, when none runs there', async () => {
    const home = await freshHome();
    const port = await findFreePort();
    const result = await runCli(['console', '--url', `http://127.0.0.1:${port}`], {
      env: createChildEnv(home),
      cwd: home,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`no bridge answers at http://127.0.0.1:${port}`);
    expect(result.stderr).toContain('cursor-bridge serve');
    expect(result.stdout).toBe(`http://127.0.0.1:${port}/console\n`);
  });

  it('refuses a --url that is not http', async () => {
    const home = await freshHome();
    const result = await runCli(['console', '--url', 'ftp://example.invalid'], {
      env: createChildEnv(home),
      cwd: home,
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--url must be the bridge's http:// address");
  });
});
