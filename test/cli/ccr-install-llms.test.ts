/**
 * What `cursor-bridge ccr install` writes is what real CCR accepts: the config written by the real
 * entry point (the real `cursor-bridge/ccr` path) is handed, as CCR hands it, to the real
 * `@musistudio/llms@1.0.53` (CCR 1.0.73 / 2.0.0), whose registry must load the transformer from that
 * path and keep the `cursor` provider (llms silently drops a provider it cannot resolve).
 */
import { mkdir, mkdtemp, readFile, realpath, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { convertJsonNodeToValue, parseJson5 } from '../../src/config/parse-json5.js';
import { createLlmsServer, llmsInstallTimeoutMs } from '../helpers/ccr/real-llms.js';
import { ensureClient } from '../helpers/e2e/install-clients.js';
import { ensureBuilt } from '../helpers/ensure-built.js';
import { repoRoot } from '../helpers/repo-root.js';
import { createChildEnv, killLeftoverChildren, runCli } from '../helpers/cli/cli-process.js';

let home: string;

beforeAll(async () => {
  await ensureBuilt();
  await ensureClient('ccr-1');
}, llmsInstallTimeoutMs);
beforeEach(async () => {
  home = await realpath(await mkdtemp(join(tmpdir(), 'cursor-bridge-ccr-llms-')));
});
afterEach(async () => {
  await killLeftoverChildren();
  await rm(home, { recursive: true, force: true });
});

/** CCR's `readConfigFile`: JSON5, then `$VAR` interpolation (v1 `src/utils/index.ts`). */
const readLikeCcr = async (path: string, env: Record<string, string>): Promise<Record<string, unknown>> => {
  const parsed = parseJson5(await readFile(path, 'utf8'));
  if (!parsed.ok) throw new Error(parsed.error.message);
  const interpolate = (value: unknown): unknown => {
    if (typeof value === 'string')
      return value.replace(/\$\{([^}]+)\}|\$([A-Z_][A-Z0-9_]*)/g, (match, braced, bare) => {
        const name = String(braced ?? bare);
        return env[name] || match;
      });
    if (Array.isArray(value)) return value.map(interpolate);
    if (typeof value === 'object' && value !== null)
      return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, interpolate(item)]));
    return value;
  };
  return interpolate(convertJsonNodeToValue(parsed.value)) as Record<string, unknown>;
};

describe('the config cursor-bridge ccr install writes, in the real llms 1.0.53', () => {
  it.each([
    ['a fresh config', undefined],
    [
      'a config with another provider and its own default route',
      `{
  // OpenRouter first
  "Providers": [
    { "name": "openrouter", "api_base_url": "https://openrouter.ai/api/v1/chat/completions", "api_key": "sk-or", "models": ["m"], "transformer": { "use": ["openrouter"] } }
  ],
  "Router": { "default": "openrouter,m" }
}
`,
    ],
  ])(
    '%s: the transformer loads from the written path and the cursor provider uses it',
    async (_label, before) => {
      const path = join(home, '.claude-code-router', 'config.json');
      if (before !== undefined) {
        await mkdir(join(home, '.claude-code-router'));
        await writeFile(path, before);
      }
      const result = await runCli(['ccr', 'install'], { env: createChildEnv(home) });
      expect(result.code, result.stderr).toBe(0);

      const config = await readLikeCcr(path, { CURSOR_API_KEY: 'crsr_test' });
      const server = await createLlmsServer({
        providers: config['Providers'],
        transformers: config['transformers'],
      });
      expect(server.transformerService.hasTransformer('cursor-sdk')).toBe(true);
      const provider = server.providerService?.getProvider('cursor');
      expect(provider).toBeDefined();
      const [transformer] = (provider?.transformer?.use ?? []) as Array<Record<string, unknown>>;
      expect(transformer).toMatchObject({ name: 'cursor-sdk', options: { cursorMode: 'bridge' } });
      expect(typeof transformer?.['transformRequestIn']).toBe('function');
      expect((config['transformers'] as Array<{ path: string }>)[0]?.path).toBe(
        join(repoRoot, 'ccr', 'cursor-sdk.cjs'),
      );
      if (before !== undefined) expect(server.providerService?.getProvider('openrouter')).toBeDefined();
    },
  );
});
