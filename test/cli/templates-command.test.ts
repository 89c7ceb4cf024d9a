import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { main } from '../../src/cli/main.js';
import { templateNames } from '../../src/workspace/template-store.js';
import { resolveDefaultTemplateDir } from '../../src/workspace/workspace-paths.js';
import { createCapturedIo } from '../helpers/cli/captured-io.js';

const defaultDir = resolveDefaultTemplateDir();

let home: string;
let overrideDir: string;

beforeEach(async () => {
  home = await realpath(await mkdtemp(join(tmpdir(), 'cursor-bridge-cli-templates-')));
  overrideDir = join(home, '.claude-code-router', 'cursor-templates');
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

const run = async (...argv: string[]) => {
  const captured = createCapturedIo({ homedir: home });
  const code = await main(argv, captured.io);
  return { code, stdout: captured.stdout(), stderr: captured.stderr() };
};

const writeOverride = async (name: string, text: string, dir = overrideDir): Promise<string> => {
  const path = join(dir, ...name.split('/'));
  await mkdir(join(path, '..'), { recursive: true });
  await writeFile(path, text);
  return path;
};

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The line of `templates list` output for `name`. */
const listLine = (stdout: string, name: string): string =>
  stdout.split('\n').find((line) => line.startsWith(`${name} `)) ?? '';

// Blocks shaped like the environment blocks Claude Code, OpenCode and Codex were captured sending.
const claudeCodeEnv = [
  'You are an interactive agent that helps users with software engineering tasks.',
  '',
  '# Environment',
  'You have been invoked in the following environment: ',
  ' - Primary working directory: /home/ada/claude-project',
  ' - Is a git repository: true',
  ' - Platform: linux',
  ' - Shell: zsh',
  ' - OS Version: Linux 6.18.44',
].join('\n');
const openCodeEnv = [
  'Here is some useful information about the environment you are running in:',
  '<env>',
  '  Working directory: /home/ada/opencode-project',
  '  Is directory a git repo: no',
  '  Platform: darwin',
  '</env>',
].join('\n');
const codexEnv = [
  '<environment_context>',
  '  <cwd>/home/ada/codex-project</cwd>',
  '  <shell>bash</shell>',
  '</environment_context>',
].join('\n');

describe('templates list', () => {
  it('lists every template from the defaults while no override dir exists', async () => {
    const result = await run('templates', 'list');
    expect(result.code).toBe(0);
    for (const name of templateNames) {
      expect(listLine(result.stdout, name)).toMatch(
        new RegExp(`^${escape(name)}\\s+default\\s+${escape(join(defaultDir, name))}$`),
      );
    }
    expect(result.stdout).toContain(`Overrides: ${overrideDir}`);
    expect(result.stdout).toContain('does not exist yet');
    expect(result.stdout).toContain('No problems.');
    // Which templates each cursorMode uses, the config's (the default, bridge) marked.
    expect(result.stdout).toContain(
      'Used per mode (cursorMode):\n' +
        '  bridge  AGENTS.md, .cursor/hooks.json, .cursor/hooks/deny-builtin.mjs, deny-message.md, prompt-head.md, prompt-tail.md   <- this config\n' +
        '  plan    prompt-head.plan.md, prompt-tail.plan.md\n' +
        '  agent   prompt-head.agent.md, prompt-tail.agent.md\n',
    );
  });

  it('shows overrides, a broken override with its file, line and fallback, and files matching no template', async () => {
    const good = await writeOverride('AGENTS.md', 'Project at {{root}}\n');
    const broken = await writeOverride('prompt-head.md', 'first line\nroot is {{rooot}}\n');
    await writeOverride('AGENT.md', 'typo in the name\n');
    const result = await run('templates', 'list');
    expect(result.code).toBe(1);
    expect(listLine(result.stdout, 'AGENTS.md')).toMatch(new RegExp(`override\\s+${escape(good)}$`));
    expect(listLine(result.stdout, 'prompt-head.md')).toMatch(/\sdefault\s/);
    expect(result.stdout).toContain(`PROBLEM: ${broken}:2:9: unknown placeholder "rooot"`);
    expect(result.stdout).toContain('so the default version is used');
    expect(result.stdout).toContain('Ignored in the override dir (not a template name): AGENT.md');
    expect(result.stdout).toContain('1 problem(s)');
    expect(listLine(result.stdout, 'prompt-tail.md')).toMatch(/\sdefault\s/);
  });

  it('reads the override dir from cursorTemplatesDir in --config (relative to the config file)', async () => {
    const configDir = join(home, 'cfg');
    await mkdir(configDir);
    await writeFile(join(configDir, 'config.json'), '{ cursorTemplatesDir: "./my-templates" }\n');
    const custom = await writeOverride('prompt-tail.md', 'tail\n', join(configDir, 'my-templates'));
    await writeOverride('prompt-tail.md', 'not read\n'); // the default override dir is not used
    const result = await run('templates', 'list', '--config', join(configDir, 'config.json'));
    expect(result.code).toBe(0);
    expect(listLine(result.stdout, 'prompt-tail.md')).toMatch(new RegExp(`override\\s+${escape(custom)}$`));
    expect(result.stdout).toContain(`cursorTemplatesDir in ${join(configDir, 'config.json')}`);
  });

  it('rejects a bad config with exit 2 naming the file and field', async () => {
    const config = join(home, 'bad.json');
    await writeFile(config, '{ "cursorTemplatesDir": 5 }');
    const result = await run('templates', 'list', '--config', config);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${config}: cursorTemplatesDir`);
  });
});

describe('templates show', () => {
  it('prints the default source verbatim on stdout and where it comes from on stderr', async () => {
    const result = await run('templates', 'show', 'prompt-head.md');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(await readFile(join(defaultDir, 'prompt-head.md'), 'utf8'));
    expect(result.stderr).toContain(
      `prompt-head.md in effect: default ${join(defaultDir, 'prompt-head.md')}`,
    );
  });

  it('prints the override when there is one, and accepts a unique base name', async () => {
    const path = await writeOverride('.cursor/hooks.json', '{ "version": 1, "hooks": {} }\n');
    const result = await run('templates', 'show', 'hooks.json');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('{ "version": 1, "hooks": {} }\n');
    expect(result.stderr).toContain(`.cursor/hooks.json in effect: override ${path}`);
  });

  it('names the problem and prints the default in effect when the override is broken', async () => {
    const path = await writeOverride('.cursor/hooks.json', '{ "hooks": {} }\n');
    const result = await run('templates', 'show', '.cursor/hooks.json');
    expect(result.code).toBe(1);
    expect(result.stdout).toBe(await readFile(join(defaultDir, '.cursor', 'hooks.json'), 'utf8'));
    expect(result.stderr).toContain(
      `PROBLEM: ${path}: renders to a hooks config without a numeric "version"`,
    );
  });

  it('exits 2 on an unknown name, naming the valid ones', async () => {
    const result = await run('templates', 'show', 'AGENT.md');
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('unknown template "AGENT.md"');
    for (const name of templateNames) expect(result.stderr).toContain(name);
  });
});

describe('templates render', () => {
  it.each([
    ['Claude Code', claudeCodeEnv, '/home/ada/claude-project', 'Claude Code "# Environment"'],
    ['OpenCode', openCodeEnv, '/home/ada/opencode-project', 'OpenCode <env>'],
    ['Codex', codexEnv, '/home/ada/codex-project', 'Codex <environment_context>'],
  ])(
    'renders every file and the prompt head and tail for a %s block',
    async (_client, text, root, source) => {
      const envFile = join(home, 'env.txt');
      await writeFile(envFile, `some prompt text\n${text}\nmore text\n`);
      const result = await run('templates', 'render', '--env', envFile);
      expect(result.code).toBe(0);
      expect(result.stderr).toBe('');
      expect(result.stdout).toContain(`Environment block in ${envFile} (${source}):\n  root: ${root}\n`);
      expect(result.stdout).not.toContain('no-root wording');
      const sections = [...result.stdout.matchAll(/^==> (.+) <==$/gm)].map((match) => match[1]);
      expect(sections).toEqual([
        'AGENTS.md (default)',
        '.cursor/hooks.json (default)',
        '.cursor/hooks/deny-builtin.mjs (default)',
        '.git (fixed, not a template)',
        'deny-message.md, baked into the hook script (default)',
        'prompt head (default)',
        'prompt tail (default)',
      ]);
      const head = result.stdout.split('==> prompt head (default) <==\n')[1] ?? '';
      expect(head).toContain(`Use host paths under ${root}, the user's project root.`);
      const workspaceDir = join(home, '.claude-code-router', 'cursor-sdk-workspaces', '<session-key>');
      expect(head).toContain(`(${workspaceDir})`);
    },
  );

  it('says when the file has no environment block and renders the no-root wording', async () => {
    const envFile = join(home, 'plain.txt');
    await writeFile(envFile, 'Just a question, no environment here.\n');
    const result = await run('templates', 'render', '--env', envFile);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`No environment block found in ${envFile}`);
    expect(result.stdout).toContain('no-root wording applies');
    expect(result.stdout).toContain(
      'Use only absolute host paths that appear in the conversation; never guess a project root.',
    );
    expect(result.stdout).not.toContain('Use host paths under');
  });

  it('uses the no-root wording when the block names no working directory', async () => {
    const envFile = join(home, 'env.txt');
    await writeFile(envFile, '<env>\n  Platform: linux\n  Shell: bash\n</env>\n');
    const result = await run('templates', 'render', '--env', envFile);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      `Environment block in ${envFile} (generic <env>):\n  platform: linux\n  shell: bash\n`,
    );
    expect(result.stdout).toContain('No project root is known, so the no-root wording applies');
    const head = result.stdout.split('==> prompt head (default) <==\n')[1] ?? '';
    expect(head).toContain('(Platform: linux; Shell: bash)');
    expect(head).toContain('Use only absolute host paths that appear in the conversation');
  });

  it('renders with the user override', async () => {
    await writeOverride('prompt-tail.md', 'CUSTOM TAIL for {{#if hasRoot}}{{root}}{{else}}nowhere{{/if}}\n');
    const envFile = join(home, 'env.txt');
    await writeFile(envFile, codexEnv);
    const result = await run('templates', 'render', '--env', envFile);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      '==> prompt tail (override) <==\nCUSTOM TAIL for /home/ada/codex-project\n',
    );
  });

  // Each cursorMode is grounded by its own templates.
  it("renders the templates of the config's cursorMode: agent mode has its own prompt and no deny-hooks", async () => {
    const config = join(home, 'agent.json');
    await writeFile(
      config,
      JSON.stringify({
        Providers: [
          {
            name: 'cursor',
            api_base_url: 'https://cursor.com',
            api_key: 'crsr_x',
            models: ['composer-2'],
            transformer: { use: [['cursor-sdk', { cursorMode: 'agent', cursorCwd: '/srv/work' }]] },
          },
        ],
      }),
    );
    const envFile = join(home, 'env.txt');
    await writeFile(envFile, claudeCodeEnv);
    const result = await run('templates', 'render', '--env', envFile, '--config', config);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      'Mode: agent (cursorMode): prompt from prompt-head.agent.md and prompt-tail.agent.md\n',
    );
    const sections = [...result.stdout.matchAll(/^==> (.+) <==$/gm)].map((match) => match[1]);
    expect(sections).toEqual([
      '.git (fixed, not a template)',
      'prompt head from prompt-head.agent.md (default)',
      'prompt tail from prompt-tail.agent.md (default)',
    ]);
    expect(result.stdout).toContain('in your working directory /srv/work; use them there.');
    expect(result.stdout).not.toContain('custom-user-tools');

    await writeOverride('prompt-tail.plan.md', 'PLAN TAIL for {{root}}\n');
    const plan = join(home, 'plan.json');
    await writeFile(plan, (await readFile(config, 'utf8')).replace('"agent"', '"plan"'));
    const planned = await run('templates', 'render', '--env', envFile, '--config', plan);
    expect(planned.stdout).toContain(
      '==> prompt tail from prompt-tail.plan.md (override) <==\nPLAN TAIL for /home/ada/claude-project\n',
    );
    expect(planned.stdout).toContain('you have no tools, and you must not try to call or execute any');
  });

  it('exits 1 when the --env file cannot be read', async () => {
    const result = await run('templates', 'render', '--env', join(home, 'missing.txt'));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`cannot read ${join(home, 'missing.txt')}`);
  });
});

describe('templates eject', () => {
  it('copies every default into the override dir, then skips existing files without overwriting them', async () => {
    const first = await run('templates', 'eject');
    expect(first.code).toBe(0);
    for (const name of templateNames) {
      expect(await readFile(join(overrideDir, ...name.split('/')), 'utf8')).toBe(
        await readFile(join(defaultDir, ...name.split('/')), 'utf8'),
      );
      expect(first.stdout).toContain(`  wrote    ${name}\n`);
    }
    expect(first.stdout).not.toContain('Note: the bridge reads overrides');

    const edited = join(overrideDir, 'prompt-head.md');
    await writeFile(edited, 'my head\n');
    const second = await run('templates', 'eject');
    expect(second.code).toBe(0);
    expect(await readFile(edited, 'utf8')).toBe('my head\n');
    expect(second.stdout).toContain('  skipped  prompt-head.md (already exists; left unchanged)\n');
    expect(second.stdout).toContain(`${templateNames.length} existing file(s) kept as they were`);
    expect(second.stdout).not.toContain('wrote');
  });

  it('copies into --dir DIR (relative to the cwd), fills only the missing files and says how to use DIR', async () => {
    const target = join(home, 'elsewhere');
    await writeOverride('AGENTS.md', 'mine\n', target);
    const result = await run('templates', 'eject', '--dir', 'elsewhere');
    expect(result.code).toBe(0);
    expect(await readFile(join(target, 'AGENTS.md'), 'utf8')).toBe('mine\n');
    expect(await readFile(join(target, '.cursor', 'hooks', 'deny-builtin.mjs'), 'utf8')).toBe(
      await readFile(join(defaultDir, '.cursor', 'hooks', 'deny-builtin.mjs'), 'utf8'),
    );
    expect(result.stdout).toContain('1 existing file(s) kept as they were: AGENTS.md.');
    expect(result.stdout).toContain(`set "cursorTemplatesDir": ${JSON.stringify(target)}`);
  });
});

describe('templates usage', () => {
  it.each([
    [['templates'], 'missing templates subcommand'],
    [['templates', 'frobnicate'], 'unknown templates subcommand "frobnicate"'],
    [['templates', 'list', '--env', 'x'], '--env only applies to `templates render`'],
    [['templates', 'show'], '`templates show` takes one NAME'],
    [['templates', 'eject', 'a', 'b'], 'takes at most one NAME'],
    [['templates', 'list', '--dir', 'x'], '--dir only applies to `templates eject`'],
    [['templates', 'eject', '--url', 'x'], '--url only applies to `templates live`'],
    [['templates', 'placeholders', 'x'], '`templates placeholders` takes no arguments'],
    [['model', 'get', 'cursor', '--url', 'x'], '--url does not apply to "model"'],
    [['serve', '--env', 'x'], '--env does not apply to "serve"'],
    [['templates', 'list', '--port', '1'], '--port does not apply to "templates"'],
  ])('%j → exit 2: %s', async (argv, message) => {
    const result = await run(...argv);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    // A bad flag prints the usage of the command it was given to.
    expect(result.stderr).toContain(
      argv[0] === 'serve'
        ? 'cursor-bridge serve [--host 127.0.0.1]'
        : argv[0] === 'model'
          ? 'cursor-bridge model get cursor [--config FILE]'
          : 'cursor-bridge templates render [--env FILE]',
    );
  });

  it('lists the templates commands in --help', async () => {
    const result = await run('--help');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('cursor-bridge templates eject [NAME] [--dir DIR] [--config FILE]');
  });
});
