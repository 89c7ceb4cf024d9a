/**
 * The import boundaries `eslint.config.js` enforces (ARCHITECTURE.md: `mcp/` never imports `src/`),
 * checked on a one-line module linted as if it sat at each path: `lib/` is the neutral helper library
 * of `src/` and `mcp/` and imports neither; `src/` reaches `mcp/` only through the tool host's public
 * entry points (`index.js`, `host.js`, `server-name.js`); only `src/upstream/cursor/` imports `@cursor/sdk`;
 * nothing imports `src/cli/`; the inner layers never import `src/hosts/` or `src/bridge/`; the hosts
 * (`src/hosts/http/`, `src/hosts/ccr/`) never import each other.
 */

import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/repo-root.js';

const eslint = new ESLint({ cwd: repoRoot });

/** The `no-restricted-imports` findings for `specifier` imported by a module at `filePath`. */
const restrictedImports = async (filePath: string, specifier: string): Promise<string[]> => {
  const [result] = await eslint.lintText(
    `import { value } from '${specifier}';\nexport const copy = value;\n`,
    {
      filePath,
    },
  );
  return (result?.messages ?? [])
    .filter((message) => message.ruleId === 'no-restricted-imports')
    .map((message) => message.message);
};

describe('import boundaries', () => {
  it('lib/ imports neither src/ nor mcp/', async () => {
    expect(await restrictedImports('lib/helper.ts', '../src/turn/turn-event.js')).toHaveLength(1);
    expect(await restrictedImports('lib/helper.ts', '../mcp/index.js')).toHaveLength(1);
    expect(await restrictedImports('lib/helper.ts', './is-record.js')).toEqual([]);
  });

  it('mcp/ imports lib/ but never src/', async () => {
    expect(await restrictedImports('mcp/helper.ts', '../src/turn/turn-event.js')).toHaveLength(1);
    expect(await restrictedImports('mcp/helper.ts', '../lib/is-record.js')).toEqual([]);
  });

  it('src/ uses mcp/ only through its public entry points', async () => {
    for (const entry of ['index', 'host', 'server-name']) {
      expect(await restrictedImports('src/hosts/http/helper.ts', `../../../mcp/${entry}.js`), entry).toEqual(
        [],
      );
    }
    const [message] = await restrictedImports('src/hosts/http/helper.ts', '../../../mcp/tool-call-result.js');
    expect(message).toContain('public entry points');
    expect(
      await restrictedImports('src/upstream/cursor/helper.ts', '../../../mcp/parked-call-broker.js'),
    ).toHaveLength(1);
    expect(await restrictedImports('src/hosts/http/helper.ts', '../../../lib/is-record.js')).toEqual([]);
  });

  it('nothing outside src/cli/ imports src/cli/', async () => {
    expect(await restrictedImports('src/hosts/http/helper.ts', '../../cli/cli-io.js')).toHaveLength(1);
    expect(await restrictedImports('src/engine/helper.ts', '../cli/cli-io.js')).toHaveLength(1);
    expect(await restrictedImports('src/upstream/cursor/helper.ts', '../../cli/cli-io.js')).toHaveLength(1);
    expect(await restrictedImports('src/cli/helper.ts', './cli-io.js')).toEqual([]);
  });

  it('the inner layers never import the hosts or the composition root', async () => {
    expect(await restrictedImports('src/engine/helper.ts', '../hosts/turn-pipeline.js')).toHaveLength(1);
    expect(await restrictedImports('src/config/helper.ts', '../bridge/create-bridge.js')).toHaveLength(1);
    expect(
      await restrictedImports('src/upstream/cursor/helper.ts', '../../hosts/http/create-server.js'),
    ).toHaveLength(1);
    expect(await restrictedImports('src/bridge/helper.ts', '../hosts/http/create-server.js')).toEqual([]);
    expect(await restrictedImports('src/hosts/ccr/helper.ts', '../../bridge/create-bridge.js')).toEqual([]);
  });

  it('the hosts stand side by side over the turn pipeline, neither importing the other', async () => {
    expect(await restrictedImports('src/hosts/http/helper.ts', '../ccr/ccr-facade.js')).toHaveLength(1);
    expect(await restrictedImports('src/hosts/ccr/helper.ts', '../http/create-server.js')).toHaveLength(1);
    expect(
      await restrictedImports('src/hosts/ccr/install/helper.ts', '../../http/send-json.js'),
    ).toHaveLength(1);
    expect(await restrictedImports('src/hosts/helper.ts', './http/send-json.js')).toHaveLength(1);
    expect(await restrictedImports('src/hosts/helper.ts', './ccr/ccr-facade.js')).toHaveLength(1);
    expect(await restrictedImports('src/hosts/ccr/helper.ts', '../turn-pipeline.js')).toEqual([]);
    expect(await restrictedImports('src/hosts/http/helper.ts', '../turn-pipeline.js')).toEqual([]);
    expect(await restrictedImports('src/hosts/ccr/helper.ts', 'node:http')).toEqual([]);
  });

  it('only src/upstream/cursor/ imports @cursor/sdk', async () => {
    expect(await restrictedImports('src/engine/helper.ts', '@cursor/sdk')).toHaveLength(1);
    expect(await restrictedImports('src/upstream/cursor/helper.ts', '@cursor/sdk')).toEqual([]);
  });
});
