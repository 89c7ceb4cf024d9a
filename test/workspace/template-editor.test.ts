/**
 * The console's template editor over a real TemplateStore (the shipped defaults, a temp override
 * directory): what it lists, how it checks a draft (as the store would load it), what a preview renders
 * (exactly what the bridge renders for the same facts), and how a save or revert touches the override
 * directory — atomically, never inside the shipped defaults, never changing the store itself.
 */

import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { envBlockFormats } from '../../src/workspace/env-block-formats.js';
import { extractHostFacts } from '../../src/workspace/host-facts.js';
import { PromptGrounding } from '../../src/workspace/prompt-grounding.js';
import { renderWorkspaceFiles } from '../../src/workspace/render-workspace-files.js';
import { exampleHostFacts, isTemplateName, TemplateEditor } from '../../src/workspace/template-editor.js';
import { encodeTemplateJson } from '../../src/workspace/template-renderer.js';
import {
  TemplateStore,
  templateNames,
  type GroundingMode,
  type TemplateName,
} from '../../src/workspace/template-store.js';
import { resolveDefaultTemplateDir } from '../../src/workspace/workspace-paths.js';
import { createTempDirs } from '../helpers/workspace-test-helpers.js';

const temp = createTempDirs();
afterEach(temp.cleanup);

const defaultDir = resolveDefaultTemplateDir();
const workspaceDir = '/srv/bridge/workspaces/0123456789abcdef0123456789abcdef';
const nodePath = '/opt/node/bin/node';
const facts = extractHostFacts([
  [
    '# Environment',
    'You have been invoked in the following environment: ',
    ' - Primary working directory: /home/grace/compiler',
    ' - Is a git repository: true',
    ' - Platform: darwin',
    ' - Shell: fish',
  ].join('\n'),
]);

/** A store of the shipped defaults with an override directory of its own (not created yet). */
const loadStore = async (mode: GroundingMode = 'bridge') => {
  const overrideDir = join(await temp.make('cb-editor-'), 'overrides');
  const store = await TemplateStore.load({ defaultDir, overrideDir, mode });
  return { store, overrideDir };
};

const filesIn = async (dir: string): Promise<string[]> =>
  (await readdir(dir, { recursive: true })).map((entry) => entry.split('\\').join('/')).sort();

const exists = async (path: string): Promise<boolean> =>
  stat(path).then(
    () => true,
    () => false,
  );

const previewText = (
  editor: TemplateEditor,
  name: TemplateName,
  text: string,
  target = { facts, workspaceDir },
) => {
  const preview = editor.preview(name, text, target);
  if (!preview.ok) throw new Error(`preview failed: ${JSON.stringify(preview.issues)}`);
  return preview.text;
};

describe('isTemplateName and exampleHostFacts', () => {
  it('knows exactly the store’s template names', () => {
    for (const name of templateNames) expect(isTemplateName(name)).toBe(true);
    for (const name of [
      '',
      'hooks.json',
      'cursor/hooks.json',
      '.cursor%2Fhooks.json',
      '../AGENTS.md',
      'AGENTS.md/',
      'agents.md',
      'prompt-head.bridge.md',
    ]) {
      expect(isTemplateName(name)).toBe(false);
    }
  });

  it('gives the example environment of the Claude Code block format', () => {
    const example = exampleHostFacts();
    expect(example).toEqual(extractHostFacts([envBlockFormats['claude-code'].example]));
    expect(example?.root).toBe('/home/ada/project');
    expect(example?.platform).toBe('linux');
    expect(example?.source).toBe('claude-code');
  });
});

describe('TemplateEditor.list', () => {
  it('lists every template with its role, modes, origin, text and shipped default', async () => {
    const { store, overrideDir } = await loadStore();
    const editor = new TemplateEditor({ store });
    const listed = await editor.list();
    expect(listed.map((entry) => entry.name).sort()).toEqual([...templateNames].sort());
    const byName = new Map(listed.map((entry) => [entry.name, entry]));
    const expected: Record<TemplateName, { role: string; modes: GroundingMode[] }> = {
      'AGENTS.md': { role: 'workspace-file', modes: ['bridge'] },
      '.cursor/hooks.json': { role: 'workspace-file', modes: ['bridge'] },
      '.cursor/hooks/deny-builtin.mjs': { role: 'workspace-file', modes: ['bridge'] },
      'deny-message.md': { role: 'deny-message', modes: ['bridge'] },
      'prompt-head.md': { role: 'prompt-head', modes: ['bridge'] },
      'prompt-tail.md': { role: 'prompt-tail', modes: ['bridge'] },
      'prompt-head.plan.md': { role: 'prompt-head', modes: ['plan'] },
      'prompt-tail.plan.md': { role: 'prompt-tail', modes: ['plan'] },
      'prompt-head.agent.md': { role: 'prompt-head', modes: ['agent'] },
      'prompt-tail.agent.md': { role: 'prompt-tail', modes: ['agent'] },
    };
    for (const name of templateNames) {
      const entry = byName.get(name);
      const shipped = await readFile(join(defaultDir, ...name.split('/')), 'utf8');
      expect(entry, name).toMatchObject(expected[name]);
      expect(entry?.source, name).toEqual({ origin: 'default', path: join(defaultDir, ...name.split('/')) });
      expect(entry?.text, name).toBe(shipped);
      expect(entry?.defaultText, name).toBe(shipped);
      expect(entry?.overridePath, name).toBe(join(overrideDir, ...name.split('/')));
      expect(entry?.overrideText, name).toBeNull();
    }
  });

  it("puts the bridge's own mode's templates first", async () => {
    for (const mode of ['bridge', 'plan', 'agent'] as const) {
      const { store } = await loadStore(mode);
      const listed = await new TemplateEditor({ store }).list();
      expect(new TemplateEditor({ store }).mode).toBe(mode);
      const own = listed.filter((entry) => entry.modes.includes(mode)).length;
      expect(own).toBeGreaterThanOrEqual(2);
      expect(
        listed.slice(0, own).every((entry) => entry.modes.includes(mode)),
        mode,
      ).toBe(true);
    }
  });

  it('shows an override in use, and a broken override beside the default still in use', async () => {
    const overrideDir = await temp.make('cb-editor-ov-');
    await writeFile(join(overrideDir, 'AGENTS.md'), 'My rules for {{root}}\n');
    await writeFile(join(overrideDir, 'prompt-tail.md'), 'Broken {{rooot}}\n');
    const store = await TemplateStore.load({ defaultDir, overrideDir });
    const listed = await new TemplateEditor({ store }).list();
    const agents = listed.find((entry) => entry.name === 'AGENTS.md');
    expect(agents?.source).toEqual({ origin: 'override', path: join(overrideDir, 'AGENTS.md') });
    expect(agents?.text).toBe('My rules for {{root}}\n');
    expect(agents?.overrideText).toBe('My rules for {{root}}\n');
    expect(agents?.defaultText).toBe(await readFile(join(defaultDir, 'AGENTS.md'), 'utf8'));
    const tail = listed.find((entry) => entry.name === 'prompt-tail.md');
    expect(tail?.source.origin).toBe('default');
    expect(tail?.text).toBe(await readFile(join(defaultDir, 'prompt-tail.md'), 'utf8'));
    expect(tail?.overrideText).toBe('Broken {{rooot}}\n');
  });

  it('has no override path without an override directory', async () => {
    const store = await TemplateStore.load({ defaultDir });
    const listed = await new TemplateEditor({ store }).list();
    expect(listed.every((entry) => entry.overridePath === null && entry.overrideText === null)).toBe(true);
  });
});

describe('TemplateEditor.check', () => {
  it('accepts every shipped default', async () => {
    const { store } = await loadStore();
    const editor = new TemplateEditor({ store });
    for (const name of templateNames) expect(editor.check(name, store.text(name)), name).toEqual([]);
  });

  it('places an unknown placeholder by line and column, and names the placeholder meant', async () => {
    const { store } = await loadStore();
    const issues = new TemplateEditor({ store }).check(
      'prompt-head.md',
      'First line.\nUse {{rooot}} here.\n',
    );
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ line: 2, column: 5 });
    expect(issues[0]?.message).toContain('unknown placeholder "rooot"');
    expect(issues[0]?.message).toContain('did you mean "root"');
    // The place is given apart, not again at the start of the message.
    expect(issues[0]?.message).not.toMatch(/^prompt-head\.md/);
    expect(issues[0]?.message).not.toMatch(/^\d+:\d+/);
  });

  it('reports an unclosed {{#if}} block and a stray {{/if}}', async () => {
    const { store } = await loadStore();
    const editor = new TemplateEditor({ store });
    const unclosed = editor.check('AGENTS.md', 'Rules.\n{{#if hasRoot}}Root: {{root}}\n');
    expect(unclosed).toHaveLength(1);
    expect(unclosed[0]).toMatchObject({ line: 2, column: 1 });
    expect(unclosed[0]?.message).toContain('never closed');
    const stray = editor.check('AGENTS.md', 'Rules.\n{{/if}}\n');
    expect(stray).toHaveLength(1);
    expect(stray[0]?.message).toContain('without an open');
  });

  it('rejects a hooks.json draft that renders to invalid JSON or to no hooks config', async () => {
    const { store } = await loadStore();
    const editor = new TemplateEditor({ store });
    const invalid = editor.check(
      '.cursor/hooks.json',
      '{ "version": 1, "hooks": { "preToolUse": [{ "command": "{{json hookCommand}}" }] }, }\n',
    );
    expect(invalid).toHaveLength(1);
    expect(invalid[0]?.message).toMatch(/^renders to invalid JSON/);
    expect(invalid[0]?.line).toBeUndefined();
    const noVersion = editor.check('.cursor/hooks.json', '{ "hooks": {} }\n');
    expect(noVersion).toEqual([{ message: 'renders to a hooks config without a numeric "version"' }]);
    // The same JSON is fine as any other template: only hooks.json must render to a hooks config.
    expect(editor.check('AGENTS.md', '{ "version": 1, "hooks": {}, }\n')).toEqual([]);
  });
});

describe('TemplateEditor.preview', () => {
  it('renders a prompt head and tail exactly as the prompt grounding does for the same facts', async () => {
    const { store } = await loadStore();
    const editor = new TemplateEditor({ store });
    const grounding = new PromptGrounding(store);
    for (const target of [
      { facts, workspaceDir },
      { facts: undefined, workspaceDir },
      { facts: exampleHostFacts(), workspaceDir: '/tmp/example/<session-key>' },
    ]) {
      const options = { scratchDir: target.workspaceDir };
      const head = previewText(editor, 'prompt-head.md', store.text('prompt-head.md'), target);
      expect(head).toBe(grounding.renderPromptHead(target.facts, options));
      const tail = previewText(editor, 'prompt-tail.md', store.text('prompt-tail.md'), target);
      expect(tail).toBe(grounding.renderPromptTail(target.facts, options));
    }
    expect(previewText(editor, 'prompt-head.md', store.text('prompt-head.md'))).toContain(
      '/home/grace/compiler',
    );
    expect(previewText(editor, 'prompt-head.md', store.text('prompt-head.md'))).toContain(workspaceDir);
  });

  it('renders the draft, not the store’s text', async () => {
    const { store } = await loadStore();
    const editor = new TemplateEditor({ store });
    const draft = 'Draft 5b1e: project at {{root}}{{#if scratchDir}}, scratch {{scratchDir}}{{/if}}.\n\n';
    expect(previewText(editor, 'prompt-head.md', draft)).toBe(
      `Draft 5b1e: project at /home/grace/compiler, scratch ${workspaceDir}.`,
    );
    expect(previewText(editor, 'prompt-head.md', draft, { facts: undefined, workspaceDir })).toBe(
      `Draft 5b1e: project at , scratch ${workspaceDir}.`,
    );
    // The store is untouched: the grounding still renders the shipped head.
    expect(new PromptGrounding(store).renderPromptHead(facts, { scratchDir: workspaceDir })).not.toContain(
      'Draft 5b1e',
    );
  });

  it('renders AGENTS.md and hooks.json as the workspace gets them, with the draft in place', async () => {
    const { store } = await loadStore();
    const editor = new TemplateEditor({ store, nodePath, platform: 'linux' });
    const files = renderWorkspaceFiles(store, facts, { workspaceDir, nodePath, platform: 'linux' });
    const file = (path: string) => files.find((entry) => entry.path === path)?.content;
    expect(previewText(editor, 'AGENTS.md', store.text('AGENTS.md'))).toBe(file('AGENTS.md'));
    expect(previewText(editor, '.cursor/hooks.json', store.text('.cursor/hooks.json'))).toBe(
      file('.cursor/hooks.json'),
    );
    expect(
      previewText(editor, '.cursor/hooks/deny-builtin.mjs', store.text('.cursor/hooks/deny-builtin.mjs')),
    ).toBe(file('.cursor/hooks/deny-builtin.mjs'));
    expect(previewText(editor, 'AGENTS.md', 'Agents draft 77c0 for {{root}}\n')).toBe(
      'Agents draft 77c0 for /home/grace/compiler\n',
    );
    // The hook command is the Node binary and the workspace's hook script, quoted for the platform.
    expect(
      JSON.parse(previewText(editor, '.cursor/hooks.json', store.text('.cursor/hooks.json'))),
    ).toMatchObject({
      hooks: {
        beforeShellExecution: [{ command: `'${nodePath}' '${workspaceDir}/.cursor/hooks/deny-builtin.mjs'` }],
      },
    });
  });

  it('defaults the hook command to this Node binary and platform', async () => {
    const { store } = await loadStore();
    const files = renderWorkspaceFiles(store, facts, {
      workspaceDir,
      nodePath: process.execPath,
      platform: process.platform,
    });
    expect(
      previewText(new TemplateEditor({ store }), '.cursor/hooks.json', store.text('.cursor/hooks.json')),
    ).toBe(files.find((entry) => entry.path === '.cursor/hooks.json')?.content);
  });

  it('renders the deny message as the hook script bakes it in', async () => {
    const { store } = await loadStore();
    const editor = new TemplateEditor({ store, nodePath, platform: 'linux' });
    const message = previewText(editor, 'deny-message.md', store.text('deny-message.md'));
    expect(message).toContain('/home/grace/compiler');
    expect(message).toBe(message.trim());
    const script = renderWorkspaceFiles(store, facts, { workspaceDir, nodePath, platform: 'linux' }).find(
      (entry) => entry.path === '.cursor/hooks/deny-builtin.mjs',
    )?.content;
    expect(script).toContain(`const DENY_MESSAGE = ${encodeTemplateJson(message)};`);
    const draft = previewText(editor, 'deny-message.md', '\n  Denied c3d9: use {{root}}.  \n');
    expect(draft).toBe('Denied c3d9: use /home/grace/compiler.');
  });

  it("renders another mode's template for that mode, with the draft", async () => {
    const { store } = await loadStore('bridge');
    const editor = new TemplateEditor({ store });
    const planStore = (await loadStore('plan')).store;
    const options = { scratchDir: workspaceDir };
    expect(previewText(editor, 'prompt-head.plan.md', store.text('prompt-head.plan.md'))).toBe(
      new PromptGrounding(planStore).renderPromptHead(facts, options),
    );
    expect(previewText(editor, 'prompt-tail.plan.md', store.text('prompt-tail.plan.md'))).toBe(
      new PromptGrounding(planStore).renderPromptTail(facts, options),
    );
    expect(previewText(editor, 'prompt-head.plan.md', 'Plan draft 9e2a for {{root}}')).toBe(
      'Plan draft 9e2a for /home/grace/compiler',
    );
  });

  it('renders agent mode with the configured working directory', async () => {
    const agentCwd = '/srv/agent-cwd';
    const { store } = await loadStore('bridge');
    const editor = new TemplateEditor({ store, agentCwd });
    const agentStore = (await loadStore('agent')).store;
    const expected = new PromptGrounding(agentStore, { agentCwd }).renderPromptHead(facts, {
      scratchDir: workspaceDir,
    });
    expect(expected).toContain(agentCwd);
    expect(previewText(editor, 'prompt-head.agent.md', store.text('prompt-head.agent.md'))).toBe(expected);
    // Without a cursorCwd the agent runs in its scratch workspace.
    const scratch = previewText(
      new TemplateEditor({ store }),
      'prompt-head.agent.md',
      store.text('prompt-head.agent.md'),
    );
    expect(scratch).not.toContain(agentCwd);
    expect(scratch).toContain(workspaceDir);
  });

  it('answers a broken draft with its issues instead of a text', async () => {
    const { store } = await loadStore();
    const editor = new TemplateEditor({ store });
    const preview = editor.preview('prompt-head.md', 'Root: {{rooot}}', { facts, workspaceDir });
    expect(preview.ok).toBe(false);
    if (preview.ok) return;
    expect(preview.issues).toHaveLength(1);
    expect(preview.issues[0]).toMatchObject({ line: 1, column: 7 });
    expect(preview.issues[0]?.message).toContain('did you mean "root"');
    const hooks = editor.preview('.cursor/hooks.json', '{ "version": 1 }', { facts, workspaceDir });
    expect(hooks).toEqual({
      ok: false,
      issues: [{ message: 'renders to a hooks config without a "hooks" object' }],
    });
  });
});

describe('TemplateEditor.save and revert', () => {
  it('writes the override whole, leaving no temporary file, and the store takes it on reload', async () => {
    const { store, overrideDir } = await loadStore();
    const editor = new TemplateEditor({ store });
    const text = 'Saved head 41f0: {{root}}\n';
    const saved = await editor.save('prompt-head.md', text);
    const path = join(overrideDir, 'prompt-head.md');
    expect(saved).toEqual({ ok: true, path });
    expect(await readFile(path, 'utf8')).toBe(text);
    expect(await filesIn(overrideDir)).toEqual(['prompt-head.md']);
    // The editor never changes the store: the watcher's reload does.
    expect(store.source('prompt-head.md').origin).toBe('default');
    const report = await store.reload();
    expect(report.changed).toEqual(['prompt-head.md']);
    expect(store.source('prompt-head.md')).toEqual({ origin: 'override', path });
    expect(store.text('prompt-head.md')).toBe(text);
    const listed = (await editor.list()).find((entry) => entry.name === 'prompt-head.md');
    expect(listed?.overrideText).toBe(text);
  });

  it('replaces an existing override, and writes a nested template under its folders', async () => {
    const { store, overrideDir } = await loadStore();
    const editor = new TemplateEditor({ store });
    await editor.save('prompt-tail.md', 'first {{root}}');
    const first = await stat(join(overrideDir, 'prompt-tail.md'));
    await editor.save('prompt-tail.md', 'second {{root}}');
    expect(await readFile(join(overrideDir, 'prompt-tail.md'), 'utf8')).toBe('second {{root}}');
    // A new file renamed over the old one, not the old one rewritten in place (a reader sees either whole).
    expect((await stat(join(overrideDir, 'prompt-tail.md'))).ino).not.toBe(first.ino);
    const hooks = '{ "version": 1, "hooks": { "stop": [{ "command": "{{json hookCommand}}" }] } }\n';
    expect(await editor.save('.cursor/hooks.json', hooks)).toEqual({
      ok: true,
      path: join(overrideDir, '.cursor', 'hooks.json'),
    });
    expect(await readFile(join(overrideDir, '.cursor', 'hooks.json'), 'utf8')).toBe(hooks);
    expect(await filesIn(overrideDir)).toEqual(['.cursor', '.cursor/hooks.json', 'prompt-tail.md']);
    await store.reload();
    expect(store.source('.cursor/hooks.json').origin).toBe('override');
    expect(store.problems).toEqual([]);
  });

  it('refuses a broken draft and writes nothing', async () => {
    const { store, overrideDir } = await loadStore();
    const editor = new TemplateEditor({ store });
    const saved = await editor.save('prompt-head.md', 'Use {{rooot}}');
    expect(saved.ok).toBe(false);
    if (saved.ok) return;
    expect(saved.issues[0]?.message).toContain('did you mean "root"');
    expect(await exists(overrideDir)).toBe(false);
    // Nor over an existing good override.
    await editor.save('prompt-head.md', 'good {{root}}');
    expect((await editor.save('prompt-head.md', '{{#if hasRoot}}open')).ok).toBe(false);
    expect((await editor.save('.cursor/hooks.json', '{ not json')).ok).toBe(false);
    expect(await readFile(join(overrideDir, 'prompt-head.md'), 'utf8')).toBe('good {{root}}');
    expect(await filesIn(overrideDir)).toEqual(['prompt-head.md']);
  });

  it('leaves no temporary file when the write fails', async () => {
    const { store, overrideDir } = await loadStore();
    // A directory where the override file would go: the rename over it fails.
    await mkdir(join(overrideDir, 'prompt-head.md', 'occupied'), { recursive: true });
    await expect(new TemplateEditor({ store }).save('prompt-head.md', 'x {{root}}')).rejects.toThrow();
    expect(await filesIn(overrideDir)).toEqual(['prompt-head.md', 'prompt-head.md/occupied']);
  });

  it('reverts by removing the override; false when there was none', async () => {
    const { store, overrideDir } = await loadStore();
    const editor = new TemplateEditor({ store });
    expect(await editor.revert('AGENTS.md')).toBe(false);
    await editor.save('AGENTS.md', 'custom {{root}}\n');
    await store.reload();
    expect(store.source('AGENTS.md').origin).toBe('override');
    expect(await editor.revert('AGENTS.md')).toBe(true);
    expect(await exists(join(overrideDir, 'AGENTS.md'))).toBe(false);
    expect(await editor.revert('AGENTS.md')).toBe(false);
    const report = await store.reload();
    expect(report.changed).toEqual(['AGENTS.md']);
    expect(store.source('AGENTS.md')).toEqual({ origin: 'default', path: join(defaultDir, 'AGENTS.md') });
  });

  it('never writes inside the shipped defaults', async () => {
    const copiedDefaults = await temp.copyDefaults();
    const before = await filesIn(copiedDefaults);
    for (const overrideDir of [join(copiedDefaults, 'overrides'), copiedDefaults]) {
      const store = await TemplateStore.load({ defaultDir: copiedDefaults, overrideDir });
      const editor = new TemplateEditor({ store });
      await expect(editor.save('prompt-head.md', 'inside {{root}}')).rejects.toThrow(
        /inside the shipped defaults/,
      );
      await expect(editor.save('.cursor/hooks.json', store.text('.cursor/hooks.json'))).rejects.toThrow(
        /inside the shipped defaults/,
      );
      await expect(editor.revert('prompt-head.md')).rejects.toThrow(/inside the shipped defaults/);
    }
    expect(await filesIn(copiedDefaults)).toEqual(before);
    expect(await readFile(join(copiedDefaults, 'prompt-head.md'), 'utf8')).toBe(
      await readFile(join(defaultDir, 'prompt-head.md'), 'utf8'),
    );
  });

  it('writes to a sibling directory whose name only starts like the defaults', async () => {
    const copiedDefaults = await temp.copyDefaults();
    const overrideDir = `${copiedDefaults}-overrides`;
    await mkdir(overrideDir);
    try {
      const store = await TemplateStore.load({ defaultDir: copiedDefaults, overrideDir });
      const saved = await new TemplateEditor({ store }).save('prompt-head.md', 'beside {{root}}');
      expect(saved).toEqual({ ok: true, path: join(overrideDir, 'prompt-head.md') });
    } finally {
      await rm(overrideDir, { recursive: true, force: true });
    }
  });

  it('refuses to save or revert without an override directory', async () => {
    const store = await TemplateStore.load({ defaultDir });
    const editor = new TemplateEditor({ store });
    await expect(editor.save('prompt-head.md', 'x')).rejects.toThrow(/no template override directory/);
    await expect(editor.revert('prompt-head.md')).rejects.toThrow(/no template override directory/);
  });
});
