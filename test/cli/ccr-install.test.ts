/**
 * `cursor-bridge ccr install` in-process: the config text it writes, byte-exact outside its edits,
 * and the file handling (missing file, symlink, mode, re-run), with the transformer path injected.
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
import { diffChars } from 'diff';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { main } from '../../src/cli/main.js';
import { runCcrInstall } from '../../src/cli/ccr-install-command.js';
import { planCcrInstall, placeholderBaseUrl } from '../../src/hosts/ccr/install/ccr-install-plan.js';
import { parseConfigText } from '../../src/config/load-config.js';
import { convertJsonNodeToValue, parseJson5 } from '../../src/config/parse-json5.js';
import { createCapturedIo } from '../helpers/cli/captured-io.js';

let home: string;
let transformerPath: string;

beforeEach(async () => {
  home = await realpath(await mkdtemp(join(tmpdir(), 'cursor-bridge-ccr-install-')));
  transformerPath = join(home, 'pkg', 'ccr', 'cursor-sdk.cjs');
  await mkdir(join(home, 'pkg', 'ccr'), { recursive: true });
  await writeFile(transformerPath, 'module.exports = class {};\n');
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

const parse = (text: string): Record<string, unknown> => {
  const parsed = parseJson5(text);
  if (!parsed.ok) throw new Error(`not JSON5: ${parsed.error.message}\n${text}`);
  return convertJsonNodeToValue(parsed.value) as Record<string, unknown>;
};

const plan = (text: string | undefined): { text: string; changes: string[] } => {
  const result = planCcrInstall(text, transformerPath);
  if (!result.ok) throw new Error(result.error);
  return result;
};

const install = async (configPath: string, env: Record<string, string> = {}) => {
  const captured = createCapturedIo({ homedir: home, env });
  const code = await runCcrInstall(captured.io, { configPath, transformerPath });
  return { code, stdout: captured.stdout(), stderr: captured.stderr() };
};

/** A user's CCR config: comments, a compact Router, JSON5 trailing commas and an unquoted key. */
const commented = `// my CCR setup
{
  LOG: true, // keep logs
  "PORT": 3456,
  /* providers I use */
  "Providers": [
    {
      "name": "openrouter",
      "api_base_url": "https://openrouter.ai/api/v1/chat/completions",
      "api_key": "$OPENROUTER_KEY",
      "models": ["anthropic/claude-sonnet-4"],
      "transformer": { "use": ["openrouter"] }, // needed for OR
    },
  ],
  "Router": { "default": "openrouter,anthropic/claude-sonnet-4" },
}
`;

describe('planCcrInstall', () => {
  it('a missing file becomes a config CCR loads: transformer entry, cursor provider, default route', () => {
    const result = plan(undefined);
    expect(parse(result.text)).toEqual({
      transformers: [{ path: transformerPath, options: { cursorMode: 'bridge' } }],
      Providers: [
        {
          name: 'cursor',
          api_base_url: placeholderBaseUrl,
          api_key: '$CURSOR_API_KEY',
          models: ['composer-2'],
          transformer: { use: ['cursor-sdk'] },
        },
      ],
      Router: { default: 'cursor,composer-2' },
    });
    // The bridge's own loader accepts it and finds the same provider and options.
    const config = parseConfigText(result.text, { path: '/c.json', env: {} });
    expect(config.cursor).toMatchObject({ providerName: 'cursor', mode: 'bridge', models: ['composer-2'] });
    expect(config.router.default).toBe('cursor,composer-2');
  });

  it('keeps every byte of a commented JSON5 file outside its insertions', () => {
    const result = plan(commented);
    const value = parse(result.text);
    expect(value['transformers']).toEqual([{ path: transformerPath, options: { cursorMode: 'bridge' } }]);
    expect((value['Providers'] as unknown[]).length).toBe(2);
    expect(value['Router']).toEqual({ default: 'openrouter,anthropic/claude-sonnet-4' });
    // Only insertions: nothing removed, and the unchanged parts joined are the original exactly.
    const parts = diffChars(commented, result.text);
    expect(parts.filter((part) => part.removed)).toEqual([]);
    expect(
      parts
        .filter((part) => !part.added)
        .map((part) => part.value)
        .join(''),
    ).toBe(commented);
    expect(result.text).toContain('  "Router": { "default": "openrouter,anthropic/claude-sonnet-4" },\n');
    expect(result.text).toContain('"transformer": { "use": ["openrouter"] }, // needed for OR\n');
    expect(result.changes).toEqual([
      `added transformers entry ${transformerPath}`,
      'added provider "cursor"',
    ]);
  });

  it('inserts after a line comment, so the comment stays with its member', () => {
    const text = '{\n  "PORT": 3456 // the port\n}\n';
    const result = plan(text);
    expect(result.text.startsWith('{\n  "PORT": 3456, // the port\n  "transformers": [\n')).toBe(true);
  });

  it('completes a one-line provider on its own line', () => {
    const text = '{\n  "Providers": [\n    { "name": "cursor", "models": [] }\n  ],\n  "Router": {}\n}\n';
    expect(plan(text).text).toBe(
      `{
  "Providers": [
    { "name": "cursor", "models": ["composer-2"], "api_base_url": "${placeholderBaseUrl}", "api_key": "$CURSOR_API_KEY", "transformer": { "use": ["cursor-sdk"] } }
  ],
  "Router": {
    "default": "cursor,composer-2"
  },
  "transformers": [
    {
      "path": ${JSON.stringify(transformerPath)},
      "options": {
        "cursorMode": "bridge"
      }
    }
  ]
}
`,
    );
  });

  it('keeps tab indentation and CRLF line endings', () => {
    const text = '{\r\n\t"PORT": 3456\r\n}\r\n';
    const result = plan(text);
    expect(result.text).not.toMatch(/[^\r]\n/);
    expect(result.text).toContain('\r\n\t"transformers": [\r\n\t\t{\r\n\t\t\t"path": ');
  });

  it('is idempotent: its own output plans no change', () => {
    for (const start of [undefined, commented, '{}', '{ "Providers": [] }']) {
      const once = plan(start).text;
      const twice = plan(once);
      expect(twice.changes).toEqual([]);
      expect(twice.text).toBe(once);
    }
  });

  it('updates an older install path in place and keeps the user options', () => {
    const text = `{
  "transformers": [
    { "path": "/old/lib/node_modules/cursor-bridge/ccr/cursor-sdk.cjs", "options": { "cursorMode": "plan" } }
  ],
  "Providers": [{ "name": "cursor", "api_base_url": "https://cursor.com", "api_key": "crsr_x", "models": ["gpt-5.4"], "transformer": { "use": ["cursor-sdk"] } }],
  "Router": { "default": "cursor,gpt-5.4" }
}
`;
    const result = plan(text);
    expect(result.text).toBe(
      text.replace('/old/lib/node_modules/cursor-bridge/ccr/cursor-sdk.cjs', transformerPath),
    );
    expect(result.changes).toEqual([
      `updated transformers[0].path from /old/lib/node_modules/cursor-bridge/ccr/cursor-sdk.cjs to ${transformerPath}`,
    ]);
  });

  it('completes an existing cursor provider without replacing what the user set', () => {
    const text = `{
  "transformers": [{ "path": "/elsewhere/cursor-sdk.js" }],
  "Providers": [
    { "name": "cursor", "api_key": "", "models": [] }
  ],
  "Router": { "default": "" }
}
`;
    const result = plan(text);
    expect(parse(result.text)).toEqual({
      transformers: [{ path: transformerPath, options: { cursorMode: 'bridge' } }],
      Providers: [
        {
          name: 'cursor',
          api_key: '$CURSOR_API_KEY',
          models: ['composer-2'],
          api_base_url: placeholderBaseUrl,
          transformer: { use: ['cursor-sdk'] },
        },
      ],
      Router: { default: 'cursor,composer-2' },
    });
  });

  it('adds cursor-sdk to a cursor provider whose use lacks it; keeps the [name, options] tuple form as it is', () => {
    const lacking = plan(
      '{ "Providers": [{ "name": "cursor", "api_base_url": "u", "api_key": "k", "models": ["m"], "transformer": { "use": ["maxtoken"] } }] }',
    );
    expect(lacking.text).toContain('"transformer": { "use": ["maxtoken", "cursor-sdk"] }');
    const tuple =
      '{ "Providers": [{ "name": "c", "api_base_url": "u", "api_key": "k", "models": ["m"], "transformer": { "use": [["cursor-sdk", { "cursorMode": "agent" }]] } }], "Router": { "default": "c,m" } }';
    const result = plan(tuple);
    expect(result.changes).toEqual([`added transformers entry ${transformerPath}`]);
    expect(result.text.startsWith(tuple.slice(0, -2))).toBe(true);
  });

  it('reports invalid JSON5 with its position', () => {
    expect(planCcrInstall('{\n  "a": 1\n  "b": 2\n}', transformerPath)).toEqual({
      ok: false,
      error: expect.stringMatching(/^invalid JSON5: expected ',' or '}'/),
      line: 3,
      column: 3,
    });
  });
});

describe('runCcrInstall', () => {
  it('creates a missing file and its directory, prints the diff, and a re-run changes nothing', async () => {
    const path = join(home, '.claude-code-router', 'config.json');
    const first = await install(path);
    expect(first.code).toBe(0);
    expect(first.stderr).toBe('');
    const written = await readFile(path, 'utf8');
    expect(first.stdout).toContain('--- /dev/null\n');
    expect(first.stdout).toContain(`+++ ${path}\n`);
    expect(first.stdout).toContain(`+      "path": ${JSON.stringify(transformerPath)},\n`);
    expect(first.stdout).toContain('ccr restart');
    expect((await stat(path)).mode & 0o777).toBe(0o600);

    const again = await install(path);
    expect(again).toEqual({
      code: 0,
      stdout: `${path}: the cursor-sdk transformer is already installed; nothing changed.\n`,
      stderr: '',
    });
    expect(await readFile(path, 'utf8')).toBe(written);
  });

  it('defaults to ~/.claude-code-router/config.json, or $CURSOR_BRIDGE_CONFIG', async () => {
    const captured = createCapturedIo({ homedir: home });
    expect(await runCcrInstall(captured.io, { transformerPath })).toBe(0);
    expect(parse(await readFile(join(home, '.claude-code-router', 'config.json'), 'utf8'))).toHaveProperty(
      'transformers',
    );
    const other = join(home, 'other.json');
    const viaEnv = createCapturedIo({ homedir: home, env: { CURSOR_BRIDGE_CONFIG: other } });
    expect(await runCcrInstall(viaEnv.io, { transformerPath })).toBe(0);
    expect(parse(await readFile(other, 'utf8'))).toHaveProperty('Router');
  });

  it('edits a commented config in place, printing a unified diff of only its insertions', async () => {
    const path = join(home, 'config.json');
    await writeFile(path, commented);
    const result = await install(path);
    expect(result.code).toBe(0);
    const diffLines = result.stdout.split('\n').filter((line) => /^[-+](?![-+]{2} )/.test(line));
    expect(diffLines.length).toBeGreaterThan(0);
    expect(diffLines.filter((line) => line.startsWith('-'))).toEqual([]);
    // The user's own default route is kept, and they are told how to reach Cursor.
    expect(result.stderr).toBe(
      `cursor-bridge: ${path}: note: Router.default stays "openrouter,anthropic/claude-sonnet-4"; use Cursor with /model cursor,composer-2 in Claude Code, or set Router.default to "cursor,composer-2"\n`,
    );
    expect(diffLines).toContain(`+      "path": ${JSON.stringify(transformerPath)},`);
    expect(await readFile(path, 'utf8')).toBe(plan(commented).text);
  });

  it('writes through a symlink: the link stays, its target is updated, the mode is kept', async () => {
    const dotfiles = join(home, 'dotfiles');
    await mkdir(dotfiles);
    const target = join(dotfiles, 'ccr-config.json');
    await writeFile(target, commented);
    await chmod(target, 0o640);
    const link = join(home, 'config.json');
    await symlink('dotfiles/ccr-config.json', link);

    const result = await install(link);
    expect(result.code).toBe(0);
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect(await readlink(link)).toBe('dotfiles/ccr-config.json');
    expect(await readFile(target, 'utf8')).toBe(plan(commented).text);
    expect((await stat(target)).mode & 0o7777).toBe(0o640);
  });

  it('exits 2 naming the file, line and column for invalid JSON5, and leaves the file alone', async () => {
    const path = join(home, 'config.json');
    const broken = '{\n  "PORT": 3456,\n  "Router": { default: "a,b" ]\n}\n';
    await writeFile(path, broken);
    const captured = createCapturedIo({ homedir: home });
    expect(await main(['ccr', 'install', '--config', path], captured.io)).toBe(2);
    expect(captured.stderr()).toMatch(new RegExp(`^cursor-bridge: ${path}:3:\\d+: invalid JSON5: `));
    expect(await readFile(path, 'utf8')).toBe(broken);
  });

  it('warns when the transformer sits in npx’s temporary cache, and notes a second cursor-sdk entry', async () => {
    const npxPath = join(
      home,
      '.npm',
      '_npx',
      'abc123',
      'node_modules',
      'cursor-bridge',
      'ccr',
      'cursor-sdk.cjs',
    );
    await mkdir(join(npxPath, '..'), { recursive: true });
    await writeFile(npxPath, 'module.exports = class {};\n');
    const path = join(home, 'config.json');
    await writeFile(
      path,
      '{ "transformers": [{ "path": "/a/cursor-sdk.cjs" }, { "path": "/b/plugins/cursor-sdk.js" }] }\n',
    );
    const captured = createCapturedIo({ homedir: home });
    expect(await runCcrInstall(captured.io, { configPath: path, transformerPath: npxPath })).toBe(0);
    expect(captured.stderr()).toContain(
      `${path}: note: transformers[1] (/b/plugins/cursor-sdk.js) also loads cursor-sdk; CCR keeps only the last one registered`,
    );
    expect(captured.stderr()).toContain(`warning: ${npxPath} is in npx's temporary cache`);
    expect(parse(await readFile(path, 'utf8'))['transformers']).toEqual([
      { path: npxPath, options: { cursorMode: 'bridge' } },
      { path: '/b/plugins/cursor-sdk.js' },
    ]);
  });

  it('exits 1 when the transformer file is missing', async () => {
    const captured = createCapturedIo({ homedir: home });
    const code = await runCcrInstall(captured.io, {
      configPath: join(home, 'c.json'),
      transformerPath: join(home, 'nope.cjs'),
    });
    expect(code).toBe(1);
    expect(captured.stderr()).toMatch(/cannot find the installed CCR transformer/);
  });
});
