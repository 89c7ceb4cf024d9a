/**
 * Templates you can edit with confidence, each as a user runs it: the real
 * `node bin/cursor-bridge.js templates …` in a child process with a fresh HOME, its stdout, stderr and exit
 * code. The live preview against a conversation of the real Claude Code is
 * test/e2e/claude-code-grounding-preview.e2e.test.ts.
 */

import { mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { envBlockFormats } from '../../src/workspace/env-block-formats.js';
import { templatePlaceholders } from '../../src/workspace/template-placeholders.js';
import { templateNames } from '../../src/workspace/template-store.js';
import { resolveDefaultTemplateDir } from '../../src/workspace/workspace-paths.js';
import { ensureBuilt } from '../helpers/ensure-built.js';
import {
  createChildEnv,
  findFreePort,
  killLeftoverChildren,
  runCli,
  startCli,
  stopChild,
} from '../helpers/cli/cli-process.js';

const defaultDir = resolveDefaultTemplateDir();

let home: string;
let overrideDir: string;

beforeAll(async () => {
  await ensureBuilt();
}, 180_000);
beforeEach(async () => {
  home = await realpath(await mkdtemp(join(tmpdir(), 'cursor-bridge-cli-templates-process-')));
  overrideDir = join(home, '.claude-code-router', 'cursor-templates');
});
afterEach(async () => {
  await killLeftoverChildren();
  await rm(home, { recursive: true, force: true });
});

/** `cursor-bridge …` run to its end in `cwd` (default HOME) with `env` added to a clean environment. */
const cli = (args: string[], options: { cwd?: string; env?: Record<string, string> } = {}) =>
  runCli(args, { env: createChildEnv(home, options.env), cwd: options.cwd ?? home });

const writeOverride = async (name: string, text: string): Promise<string> => {
  const path = join(overrideDir, ...name.split('/'));
  await mkdir(join(path, '..'), { recursive: true });
  await writeFile(path, text);
  return path;
};

describe('templates placeholders', () => {
  it('lists every placeholder with its kind, meaning and an example value', async () => {
    const result = await cli(['templates', 'placeholders']);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    for (const { name, kind, meaning, example } of templatePlaceholders) {
      const [first = '', ...rest] = example.split('\n');
      expect(result.stdout).toContain(`\n${name}  (${kind})\n    ${meaning}\n    e.g.    ${first}`);
      for (const line of rest) expect(result.stdout).toContain(`\n            ${line}\n`);
    }
    expect(result.stdout).toContain('{{#if name}}…{{else}}…{{/if}}');
  });

  it('an unknown placeholder names the nearest one and the command that lists them all', async () => {
    const path = await writeOverride('AGENTS.md', 'Project:\n  {{projectRoot}}\n');
    const result = await cli(['templates', 'list']);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      `PROBLEM: ${path}:2:3: unknown placeholder "projectRoot" — did you mean "root"? run \`cursor-bridge templates placeholders\` for the list`,
    );
  });
});

describe('templates render --env', () => {
  it('--help documents each environment block it accepts with an example, and each example renders', async () => {
    const help = await cli(['templates', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('render --env FILE: FILE is plain text');
    for (const [source, { label, shape, example }] of Object.entries(envBlockFormats)) {
      const indented = example
        .split('\n')
        .map((line) => `      ${line}`)
        .join('\n');
      expect(help.stdout, source).toContain(`  ${label}: ${shape}, e.g.\n${indented}\n`);

      const envFile = join(home, `${source}.txt`);
      await writeFile(envFile, `Text before the block.\n${example}\nText after it.\n`);
      const rendered = await cli(['templates', 'render', '--env', envFile]);
      expect(rendered.code, source).toBe(0);
      expect(rendered.stdout, source).toContain(
        `Environment block in ${envFile} (${label}):\n  root: /home/ada/project\n`,
      );
      expect(rendered.stdout, source).toContain('Use host paths under /home/ada/project');
    }
  });

  it('a file without a block points at the examples', async () => {
    const envFile = join(home, 'plain.txt');
    await writeFile(envFile, 'No environment here.\n');
    const result = await cli(['templates', 'render', '--env', envFile]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('`cursor-bridge templates --help` shows an example of each');
  });
});

describe('templates eject NAME', () => {
  it('copies only that template into the override directory', async () => {
    const cwd = join(home, 'project');
    await mkdir(cwd);
    const result = await cli(['templates', 'eject', 'AGENTS.md'], { cwd });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('  wrote    AGENTS.md\n');
    expect(await readdir(overrideDir)).toEqual(['AGENTS.md']);
    expect(await readFile(join(overrideDir, 'AGENTS.md'), 'utf8')).toBe(
      await readFile(join(defaultDir, 'AGENTS.md'), 'utf8'),
    );
    // Not a directory named after the template in the cwd.
    expect(await readdir(cwd)).toEqual([]);

    const again = await cli(['templates', 'eject', 'AGENTS.md'], { cwd });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('  skipped  AGENTS.md (already exists; left unchanged)\n');
  });

  it('takes a unique base name and --dir DIR', async () => {
    const result = await cli(['templates', 'eject', 'hooks.json', '--dir', 'mine']);
    expect(result.code).toBe(0);
    expect(await readdir(join(home, 'mine'), { recursive: true })).toEqual(['.cursor', '.cursor/hooks.json']);
    expect(result.stdout).toContain(`set "cursorTemplatesDir": ${JSON.stringify(join(home, 'mine'))}`);
  });

  it('an unknown NAME exits 2 with the list of names and writes nothing', async () => {
    const result = await cli(['templates', 'eject', 'AGENT.md']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(`unknown template "AGENT.md"; valid names: ${templateNames.join(', ')}`);
    expect(await readdir(home)).toEqual([]);
  });
});

describe('templates exit codes follow the problems found', () => {
  it('list, show and render exit 1 while a template is broken, 0 once it is fixed', async () => {
    const path = await writeOverride('prompt-tail.md', 'Tail for {{rooot}}\n');
    const envFile = join(home, 'env.txt');
    await writeFile(envFile, envBlockFormats.codex.example);
    for (const args of [['list'], ['show', 'prompt-tail.md'], ['render', '--env', envFile]]) {
      const result = await cli(['templates', ...args]);
      expect(result.code, args.join(' ')).toBe(1);
      expect(`${result.stdout}${result.stderr}`, args.join(' ')).toContain(
        `${path}:1:10: unknown placeholder "rooot" — did you mean "root"?`,
      );
    }
    await writeFile(path, 'Tail for {{root}}\n');
    for (const args of [['list'], ['show', 'prompt-tail.md'], ['render', '--env', envFile]]) {
      const result = await cli(['templates', ...args]);
      expect(result.code, args.join(' ')).toBe(0);
    }
  });
});

describe('templates live', () => {
  it('exits 1 naming the address when no bridge answers there', async () => {
    const port = await findFreePort();
    const result = await cli(['templates', 'live', '--url', `http://127.0.0.1:${port}`]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`cannot reach the bridge at http://127.0.0.1:${port}`);
    expect(result.stderr).toContain('Is `cursor-bridge serve` running there?');
  });

  it("reads the running serve at the config's PORT, with the config's APIKEY; a wrong key exits 2", async () => {
    const port = await findFreePort();
    const config = join(home, 'config.json');
    await writeFile(config, JSON.stringify({ PORT: port, APIKEY: 'bridge-key', LOG_LEVEL: 'warn' }));
    const serve = startCli(['serve', '--config', config], { env: createChildEnv(home) });
    await serve.waitFor('stderr', /listening on http:\/\/127\.0\.0\.1:\d+/);

    const live = await cli(['templates', 'live', '--config', config]);
    expect(live.stderr).toBe('');
    expect(live.code).toBe(0);
    expect(live.stdout).toBe(
      `Live grounding at http://127.0.0.1:${port} (cursorMode bridge): no live conversation; a conversation appears here after its first turn.\n`,
    );

    const wrongKey = await cli(['templates', 'live', '--config', config], { env: { APIKEY: 'not-it' } });
    expect(wrongKey.code).toBe(2);
    expect(wrongKey.stderr).toContain(`the bridge at http://127.0.0.1:${port} requires its API key`);
    await stopChild(serve);
  });
});
