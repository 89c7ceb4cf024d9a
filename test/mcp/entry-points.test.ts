/**
 * What each `mcp/` entry loads. The gateway imports `mcp/index.ts` (through the Cursor upstream) for its
 * per-session tool host; the standalone host's transports — `ws`, the MCP SDK's Streamable HTTP and stdio
 * server transports — belong to `mcp/host.ts` only, so `serve` does not hold them (≈ 1 MB of live heap).
 * Each import runs in a fresh Node process whose resolve hook records every module it loads.
 */

import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/repo-root.js';

const run = promisify(execFile);

/** The module URLs a fresh process resolves while importing `entry` (a path under the repository). */
const modulesLoadedBy = async (entry: string): Promise<string[]> => {
  const script = `
    import { registerHooks } from 'node:module';
    const seen = [];
    registerHooks({ resolve: (specifier, context, next) => { const result = next(specifier, context); seen.push(result.url); return result; } });
    await import(${JSON.stringify(pathToFileURL(join(repoRoot, entry)).href)});
    process.stdout.write(JSON.stringify(seen));
  `;
  const { stdout } = await run(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '--eval', script],
    { cwd: repoRoot, timeout: 30_000 },
  );
  return JSON.parse(stdout) as string[];
};

const hostTransports = (urls: string[]): string[] =>
  urls.filter((url) =>
    /\/node_modules\/ws\/|\/sdk\/dist\/esm\/server\/(streamableHttp|webStandardStreamableHttp|stdio)\.js$/.test(
      url,
    ),
  );

describe('mcp entry points', () => {
  it('the standalone host (mcp/host.ts) loads ws and the HTTP and stdio server transports', async () => {
    const transports = hostTransports(await modulesLoadedBy('mcp/host.ts'));
    expect(transports.some((url) => url.includes('/node_modules/ws/'))).toBe(true);
    expect(transports.some((url) => url.endsWith('/server/streamableHttp.js'))).toBe(true);
    expect(transports.some((url) => url.endsWith('/server/stdio.js'))).toBe(true);
  });

  it('the per-session tool host (mcp/index.ts) and the Cursor upstream that uses it load none of them', async () => {
    expect(hostTransports(await modulesLoadedBy('mcp/index.ts'))).toEqual([]);
    const upstream = await modulesLoadedBy('src/upstream/cursor/cursor-upstream.ts');
    expect(upstream.some((url) => url.endsWith('/mcp/index.ts'))).toBe(true);
    expect(hostTransports(upstream)).toEqual([]);
  });
});
