/**
 * `ccr/cursor-sdk.cjs` as CCR 1.0.73 / 2.0.0 loads it. In its own process (the `unit` project): constructing
 * the transformer starts importing `@cursor/sdk`, which a `unit-shared` worker must never do (test/README.md).
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createLlmsServer, llmsInstallTimeoutMs } from '../helpers/ccr/real-llms.js';
import { createChildEnv, startCli, stopChild } from '../helpers/cli/cli-process.js';
import { ensureBuilt } from '../helpers/ensure-built.js';
import { repoRoot } from '../helpers/repo-root.js';

describe('ccr/cursor-sdk.cjs in the real llms registry', () => {
  it(
    'resolves both reference styles to transformers with the merged options',
    async () => {
      await ensureBuilt();
      const path = join(repoRoot, 'ccr', 'cursor-sdk.cjs');
      const provider = (name: string, use: unknown[]) => ({
        name,
        api_base_url: 'https://cursor.invalid/v1/chat/completions',
        api_key: 'crsr_test',
        models: ['composer-2'],
        transformer: { use },
      });
      const server = await createLlmsServer({
        transformers: [{ path, options: { cursorMode: 'agent', cursorCwd: '/tmp/a' } }],
        providers: [
          provider('by-name', ['cursor-sdk']),
          provider('with-options', [['cursor-sdk', { cursorMode: 'bridge' }]]),
        ],
      });

      expect(server.transformerService.hasTransformer('cursor-sdk')).toBe(true);
      const byName = server.providerService?.getProvider('by-name')?.transformer?.use?.[0] as Record<
        string,
        unknown
      >;
      const withOptions = server.providerService?.getProvider('with-options')?.transformer
        ?.use?.[0] as Record<string, unknown>;
      // Upstream llms would throw "not a constructor" on the tuple and drop the provider.
      expect(byName).toMatchObject({
        name: 'cursor-sdk',
        options: { cursorMode: 'agent', cursorCwd: '/tmp/a' },
      });
      expect(withOptions).toMatchObject({
        name: 'cursor-sdk',
        options: { cursorMode: 'bridge', cursorCwd: '/tmp/a' },
      });
      expect(typeof byName['transformRequestIn']).toBe('function');
      expect(typeof withOptions['transformRequestIn']).toBe('function');
    },
    llmsInstallTimeoutMs,
  );
});

describe('ccr/cursor-sdk.cjs at CCR start', () => {
  it('starts loading the SDK when CCR constructs the transformer, so the first request does not wait for it', async () => {
    await ensureBuilt();
    const home = await mkdtemp(join(tmpdir(), 'cursor-bridge-ccr-preload-'));
    try {
      // As CCR loads it (`require`, `new`), and then no request at all.
      const script = `const T = require(${JSON.stringify(join(repoRoot, 'ccr', 'cursor-sdk.cjs'))}); new T({}); setInterval(() => {}, 1000);`;
      const probe = pathToFileURL(join(repoRoot, 'test', 'helpers', 'cli', 'report-sdk-load.mjs')).href;
      const child = startCli([], { env: createChildEnv(home), prefix: ['--import', probe, '-e', script] });
      try {
        await child.waitFor('stderr', /\[test probe\] @cursor\/sdk is loaded\n/);
      } finally {
        await stopChild(child);
      }
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});
