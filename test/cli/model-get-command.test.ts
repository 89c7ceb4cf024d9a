/**
 * `cursor-bridge model get cursor` as a user runs it: the real entry point in a child process, the real
 * `@cursor/sdk` inside it, pointed at the project's fake Cursor backend through `CURSOR_BACKEND_URL`.
 */

import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readlink,
  realpath,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { startFakeCursorBackend, type FakeCursorBackend } from '../fakes/cursor-backend/index.js';
import { resolveInstalledTransformer } from '../../src/cli/ccr-install-command.js';
import { placeholderBaseUrl } from '../../src/hosts/ccr/install/ccr-install-plan.js';
import { createChildEnv, killLeftoverChildren, runCli } from '../helpers/cli/cli-process.js';
import { ensureBuilt } from '../helpers/ensure-built.js';

let backend: FakeCursorBackend;
let home: string;

beforeAll(async () => {
  await ensureBuilt();
  backend = await startFakeCursorBackend();
}, 180_000);
afterAll(async () => {
  await backend.close();
});
beforeEach(async () => {
  home = await realpath(await mkdtemp(join(tmpdir(), 'cursor-bridge-cli-model-get-')));
});
afterEach(async () => {
  await killLeftoverChildren();
  await rm(home, { recursive: true, force: true });
});

const cursorEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv =>
  createChildEnv(home, { CURSOR_BACKEND_URL: backend.url, CURSOR_API_KEY: 'crsr_test', ...extra });

const modelListRequests = (): number =>
  backend.requests.filter((request) => request.path === '/v1/models').length;

/** A hand-edited JSON5 config: comments, unquoted keys, odd spacing, another provider. */
const configBefore = `// my router config
{
  LOG: true,
  "Providers": [
    { "name": "openrouter", "api_base_url": "https://openrouter.ai/api/v1/chat/completions", "api_key": "sk-or", "models": ["gpt-4o"] },
    {
      "name": "cursor",
      "api_key": "$CURSOR_API_KEY",   // from the environment
      "models": [
        "composer-2"
      ],
      "transformer": { "use": [["cursor-sdk", { "cursorMode": "bridge" }]] },
    },
  ],
  Router: { default: "cursor,composer-2" },
}
`;

const configAfter = `// my router config
{
  LOG: true,
  "Providers": [
    { "name": "openrouter", "api_base_url": "https://openrouter.ai/api/v1/chat/completions", "api_key": "sk-or", "models": ["gpt-4o"] },
    {
      "name": "cursor",
      "api_key": "$CURSOR_API_KEY",   // from the environment
      "models": [
        "composer-2",
        "claude-opus-4-8",
        "claude-haiku-4-5",
        "gpt-5.4"
      ],
      "transformer": { "use": [["cursor-sdk", { "cursorMode": "bridge" }]] },
    },
  ],
  Router: { default: "cursor,composer-2" },
}
`;

describe('cursor-bridge model get cursor', () => {
  it('adds the catalog ids to the Cursor provider, keeps every other byte, and is idempotent', async () => {
    const config = join(home, 'config.json');
    await writeFile(config, configBefore);
    const before = modelListRequests();

    const first = await runCli(['model', 'get', 'cursor', '--config', config], { env: cursorEnv() });
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(await readFile(config, 'utf8')).toBe(configAfter);
    expect(first.stdout).toBe(
      'Cursor catalog: 4 models\n' +
        `${config}: added 3 model(s): claude-opus-4-8, claude-haiku-4-5, gpt-5.4\n` +
        'Restart cursor-bridge to pick up the list.\n',
    );
    expect(modelListRequests()).toBeGreaterThan(before);

    const second = await runCli(['model', 'get', 'cursor', '--config', config], { env: cursorEnv() });
    expect(second.code).toBe(0);
    expect(second.stdout).toBe(
      `Cursor catalog: 4 models\n${config}: every catalog model is already listed; nothing changed.\n`,
    );
    expect(await readFile(config, 'utf8')).toBe(configAfter);
  });

  it('writes through a symlinked config.json: the link stays a link and its target keeps its mode', async () => {
    await mkdir(join(home, 'dotfiles'));
    const target = join(home, 'dotfiles', 'ccr-config.json');
    await writeFile(target, configBefore);
    await chmod(target, 0o640);
    const config = join(home, 'config.json');
    await symlink(join('dotfiles', 'ccr-config.json'), config);

    const result = await runCli(['model', 'get', 'cursor', '--config', config], { env: cursorEnv() });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect((await lstat(config)).isSymbolicLink()).toBe(true);
    expect(await readlink(config)).toBe(join('dotfiles', 'ccr-config.json'));
    expect(await readFile(target, 'utf8')).toBe(configAfter);
    expect((await stat(target)).mode & 0o777).toBe(0o640);
  });

  it('exits 1 and says what to check when the Cursor catalog is empty, writing nothing', async () => {
    const empty = await startFakeCursorBackend({ models: [] });
    try {
      const config = join(home, 'config.json');
      await writeFile(config, configBefore);
      const env = cursorEnv({ CURSOR_BACKEND_URL: empty.url });
      const result = await runCli(['model', 'get', 'cursor', '--config', config], { env });
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('Cursor catalog: 0 models\n');
      expect(result.stderr).toBe(
        `cursor-bridge: Cursor returned no models, so ${config} was left as it was. ` +
          `Confirm auth (CURSOR_API_KEY, or the Cursor provider's api_key) and that the provider uses cursor-sdk ` +
          `(named "cursor", or "cursor-sdk" in its transformer.use).\n`,
      );
      expect(await readFile(config, 'utf8')).toBe(configBefore);

      const fresh = await runCli(['model', 'get', 'cursor'], { env });
      expect(fresh.code).toBe(1);
      await expect(stat(join(home, '.claude-code-router', 'config.json'))).rejects.toThrow(/ENOENT/);
    } finally {
      await empty.close();
    }
  });

  it('creates the default config under HOME when there is none', async () => {
    const result = await runCli(['model', 'get', 'cursor'], { env: cursorEnv() });
    expect(result.code).toBe(0);
    const path = join(home, '.claude-code-router', 'config.json');
    const written = JSON.parse(await readFile(path, 'utf8')) as {
      transformers: unknown;
      Providers: Array<{ name: string; models: string[]; api_base_url: string }>;
      Router: { default: string };
    };
    expect(written.Providers.map((provider) => [provider.name, provider.models])).toEqual([
      ['cursor', ['composer-2', 'claude-opus-4-8', 'claude-haiku-4-5', 'gpt-5.4']],
    ]);
    expect(written.Router.default).toBe('cursor,composer-2');
    // What `ccr install` writes, so CCR loads it as it is: the installed transformer, the placeholder URL.
    expect(written.transformers).toEqual([
      { path: resolveInstalledTransformer(), options: { cursorMode: 'bridge' } },
    ]);
    expect(written.Providers[0]?.api_base_url).toBe(placeholderBaseUrl);
    expect(result.stderr).not.toContain('transformers entry');
    expect(result.stdout).toContain(`${path}: added 4 model(s)`);
    // It may hold an API key.
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });

  it.each([
    [
      'only a non-Cursor provider',
      '{ "Providers": [{ "name": "openrouter", "models": ["gpt-4o"] }] }',
      'Providers: no Cursor provider',
    ],
    ['no Providers at all', '{ "LOG": false }\n', 'no Cursor provider in the config'],
  ])('exits 2 without asking Cursor when the config has %s', async (_label, text, message) => {
    const config = join(home, 'config.json');
    await writeFile(config, text);
    const before = backend.requests.length;
    const result = await runCli(['model', 'get', 'cursor', '--config', config], { env: cursorEnv() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`cursor-bridge: ${config}: ${message}`);
    expect(await readFile(config, 'utf8')).toBe(text);
    expect(backend.requests.length).toBe(before);
  });

  it('exits 2 when the named provider is not the Cursor provider', async () => {
    const config = join(home, 'config.json');
    await writeFile(config, configBefore);
    const result = await runCli(['model', 'get', 'openrouter', '--config', config], { env: cursorEnv() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('provider "openrouter" is not a Cursor provider');
    expect(await readFile(config, 'utf8')).toBe(configBefore);
  });

  it('exits 1 with "Cursor API key not found" when no key is configured', async () => {
    const config = join(home, 'config.json');
    await writeFile(config, configBefore);
    const before = backend.requests.length;
    const env = cursorEnv();
    delete env['CURSOR_API_KEY'];
    const result = await runCli(['model', 'get', 'cursor', '--config', config], { env });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('Cursor API key not found');
    expect(result.stderr).toContain('CURSOR_API_KEY');
    expect(await readFile(config, 'utf8')).toBe(configBefore);
    expect(backend.requests.length).toBe(before);
  });

  it("warns that a provider's apiKey is ignored, naming api_key", async () => {
    const config = join(home, 'config.json');
    await writeFile(config, configBefore.replace('"api_key": "$CURSOR_API_KEY"', '"apiKey": "crsr_ignored"'));
    const result = await runCli(['model', 'get', 'cursor', '--config', config], { env: cursorEnv() });
    expect(result.stderr).toBe(
      `cursor-bridge: warning: ${config}: Providers[1] ("cursor").apiKey is ignored: CCR's config spells it "api_key"\n`,
    );
    expect(result.code).toBe(0);
  });

  it('exits 1 naming the failure when Cursor rejects the key', async () => {
    const config = join(home, 'config.json');
    await writeFile(config, configBefore);
    backend.setAuth('reject');
    try {
      const result = await runCli(['model', 'get', 'cursor', '--config', config], { env: cursorEnv() });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('could not list Cursor models: Invalid API key (fake)');
      expect(await readFile(config, 'utf8')).toBe(configBefore);
    } finally {
      backend.setAuth('ok');
    }
  });
});
