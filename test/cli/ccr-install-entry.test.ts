/**
 * `cursor-bridge ccr install` through the real entry point (`node bin/cursor-bridge.js`), so the path
 * it writes is the one `require.resolve('cursor-bridge/ccr')` gives: the file CCR will `require`.
 */
import { createRequire } from 'node:module';
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { convertJsonNodeToValue, parseJson5 } from '../../src/config/parse-json5.js';
import { ensureBuilt } from '../helpers/ensure-built.js';
import { repoRoot } from '../helpers/repo-root.js';
import { createChildEnv, killLeftoverChildren, runCli } from '../helpers/cli/cli-process.js';

let home: string;

beforeAll(async () => {
  await ensureBuilt();
}, 180_000);
beforeEach(async () => {
  home = await realpath(await mkdtemp(join(tmpdir(), 'cursor-bridge-ccr-entry-')));
});
afterEach(async () => {
  await killLeftoverChildren();
  await rm(home, { recursive: true, force: true });
});

const readConfig = async (path: string): Promise<Record<string, unknown>> => {
  const parsed = parseJson5(await readFile(path, 'utf8'));
  if (!parsed.ok) throw new Error(parsed.error.message);
  return convertJsonNodeToValue(parsed.value) as Record<string, unknown>;
};

describe('cursor-bridge ccr install (entry point)', () => {
  it('writes the resolved cursor-bridge/ccr path into ~/.claude-code-router/config.json; a re-run says nothing changed', async () => {
    const installed = createRequire(join(repoRoot, 'package.json')).resolve('cursor-bridge/ccr');
    expect(installed).toBe(join(repoRoot, 'ccr', 'cursor-sdk.cjs'));
    const config = join(home, '.claude-code-router', 'config.json');

    const first = await runCli(['ccr', 'install'], { env: createChildEnv(home) });
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(`+++ ${config}\n`);
    expect(await readConfig(config)).toMatchObject({
      transformers: [{ path: installed, options: { cursorMode: 'bridge' } }],
      Providers: [{ name: 'cursor', api_key: '$CURSOR_API_KEY', transformer: { use: ['cursor-sdk'] } }],
      Router: { default: 'cursor,composer-2' },
    });

    const again = await runCli(['ccr', 'install'], { env: createChildEnv(home) });
    expect(again).toEqual({
      code: 0,
      stdout: `${config}: the cursor-sdk transformer is already installed; nothing changed.\n`,
      stderr: '',
    });
  });

  it('updates an outdated install path given with --config, without duplicating the entry', async () => {
    const installed = join(repoRoot, 'ccr', 'cursor-sdk.cjs');
    const path = join(home, 'ccr', 'config.json');
    await mkdir(join(home, 'ccr'));
    const old = '/usr/lib/node_modules/cursor-bridge/ccr/cursor-sdk.cjs';
    const text = `{
  // installed with an older Node
  "transformers": [{ "path": "${old}", "options": { "cursorMode": "plan" } }],
  "Providers": [{ "name": "cursor", "api_base_url": "https://cursor.com", "api_key": "crsr_test", "models": ["gpt-5.4"], "transformer": { "use": ["cursor-sdk"] } }],
  "Router": { "default": "cursor,gpt-5.4" }
}
`;
    await writeFile(path, text);
    const result = await runCli(['ccr', 'install', '--config', 'ccr/config.json'], {
      env: createChildEnv(home),
      cwd: home,
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      `-  "transformers": [{ "path": "${old}", "options": { "cursorMode": "plan" } }],\n`,
    );
    expect(result.stdout).toContain(`updated transformers[0].path from ${old} to ${installed}`);
    expect(await readFile(path, 'utf8')).toBe(text.replace(old, installed));
  });

  it('--help lists the command', async () => {
    const result = await runCli(['--help'], { env: createChildEnv(home) });
    expect(result.stdout).toMatch(/cursor-bridge ccr install \[--config FILE\]/);
  });
});
