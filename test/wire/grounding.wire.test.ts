/**
 * Host environment grounding, proven with the REAL `@cursor/sdk`:
 * the bridge runs the SDK in the session's scratch workspace, which holds the rendered AGENTS.md and
 * deny-hooks; the prompt the backend receives opens and closes with the grounding blocks; and a Cursor
 * built-in the server asks the SDK to run is denied with a message stating the real topology.
 *
 * The fake backend plays Cursor's server: besides the prompt it records, it sends the execs a real
 * server sends the SDK (`requestContextArgs` for the workspace context, `shellArgs` / `readArgs` /
 * `writeArgs` for built-in tools) and records the SDK's answers.
 */

import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fakeShellArgs } from '../fakes/cursor-backend/exec-args.js';
import type { JsonObject } from '../fakes/cursor-backend/client-message.js';
import type { Scenario } from '../fakes/cursor-backend/run-context.js';
import { requestContextOf } from '../helpers/request-context.js';
import { closeWireBackend, startWireBridge, type WireBridge } from '../helpers/wire-bridge.js';

let wire: WireBridge | undefined;
let scratch = '';
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'cursor-bridge-grounding-'));
});
afterEach(async () => {
  await wire?.close();
  wire = undefined;
});
afterAll(async () => {
  await closeWireBackend();
  await rm(scratch, { recursive: true, force: true });
});

const hostRoot = '/home/dev/project';
const environment =
  '# Environment\nYou have been invoked in the following environment: \n' +
  ` - Primary working directory: ${hostRoot}\n - Platform: linux\n`;
const noRootWording =
  'Use only absolute host paths that appear in the conversation; never guess a project root.';
/** What the SDK appends to a hook's `user_message` when it blocks a built-in. */
const sdkBlockedNote = '\n\nAgent note: Do not suggest workarounds to the blocked tool.';

/** What the fake server saw and got back during one run. */
type Probe = {
  prompt: string;
  context: JsonObject;
  shell: JsonObject;
  read: JsonObject;
  write: JsonObject;
};

/** Files the built-ins are asked to touch; none of them may change in bridge mode. */
type Targets = { shellMarker: string; writeMarker: string; secretFile: string; secret: string };

const newTargets = async (name: string): Promise<Targets> => {
  const dir = await mkdtemp(join(scratch, `${name}-`));
  const secret = `secret-${name}-${Date.now()}`;
  const secretFile = join(dir, 'secret.txt');
  await writeFile(secretFile, `${secret}\n`);
  return {
    shellMarker: join(dir, 'shell-marker'),
    writeMarker: join(dir, 'write-marker'),
    secretFile,
    secret,
  };
};

/** Plays one turn: asks the SDK for its request context, then for three built-ins, then answers. */
const probeScenario =
  (targets: Targets, found: (probe: Probe) => void): Scenario =>
  async (run) => {
    const context = await run.exec('requestContextArgs', {});
    const shell = await run.exec(
      'shellArgs',
      fakeShellArgs(`touch ${targets.shellMarker}`, { toolCallId: 'builtin-shell' }),
    );
    const read = await run.exec('readArgs', { path: targets.secretFile, toolCallId: 'builtin-read' });
    const write = await run.exec('writeArgs', {
      path: targets.writeMarker,
      fileText: 'x',
      toolCallId: 'builtin-write',
    });
    found({ prompt: run.prompt, context, shell, read, write });
    run.text('probed');
  };

const ask = async (url: string, system: string | undefined): Promise<string> => {
  const client = new Anthropic({ baseURL: url, apiKey: 'sk-test', maxRetries: 0 });
  const message = await client.messages
    .stream({
      model: 'composer-2',
      max_tokens: 100,
      ...(system === undefined ? {} : { system }),
      messages: [{ role: 'user', content: 'Where is my project?' }],
    })
    .finalMessage();
  return message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
};

/** The `reason` of a `…Result.rejected` answer (shell, read) or the `error` of `writeResult.error`. */
const refusalOf = (answer: JsonObject, resultKey: string): string => {
  const result = z.record(z.string(), z.looseObject({ reason: z.string(), error: z.string() }).partial());
  const parsed = result.parse(z.looseObject({}).parse(answer[resultKey]));
  const refusal = parsed.rejected?.reason ?? parsed.error?.error ?? parsed.permissionDenied?.error;
  if (refusal === undefined) throw new Error(`${resultKey} is not a refusal: ${JSON.stringify(answer)}`);
  return refusal;
};

/** The denial text baked into the rendered hook script (`const DENY_MESSAGE = "…";`). */
const denyMessageIn = (hookScript: string): string => {
  const literal = /^const DENY_MESSAGE = ("(?:[^"\\]|\\.)*");$/m.exec(hookScript)?.[1];
  if (literal === undefined) throw new Error('the hook script has no DENY_MESSAGE line');
  return z.string().parse(JSON.parse(literal));
};

/** Head block, the text between, and tail block of a grounded prompt. */
const splitPrompt = (prompt: string): { head: string; body: string; tail: string } => {
  const match =
    /^(<bridge_environment>\n[\s\S]*?\n<\/bridge_environment>)\n([\s\S]*)\n(<bridge_reminder>\n[\s\S]*?\n<\/bridge_reminder>)$/.exec(
      prompt,
    );
  if (match === null) throw new Error(`prompt is not head + body + tail:\n${prompt}`);
  return { head: match[1] ?? '', body: match[2] ?? '', tail: match[3] ?? '' };
};

describe('host environment grounding with the real @cursor/sdk', () => {
  it("grounds the prompt, the SDK's workspace rules and the deny-hook in the client's environment", async () => {
    const targets = await newTargets('env');
    let probe: Probe | undefined;
    wire = await startWireBridge({ scenario: probeScenario(targets, (found) => (probe = found)) });
    expect(await ask(wire.url, environment)).toBe('probed');
    if (probe === undefined) throw new Error('the scenario did not run');
    const context = requestContextOf(probe.context);

    // The SDK runs in this session's scratch workspace: a 32-hex-char directory under the bridge's root.
    expect(context.env.workspacePaths).toHaveLength(1);
    const workspace = context.env.workspacePaths[0] ?? '';
    expect(dirname(workspace)).toBe(wire.workspacesDir);
    expect(basename(workspace)).toMatch(/^[0-9a-f]{32}$/);

    // (a) The prompt opens with the grounding head and closes with the tail, both naming the host root;
    // the head also names the scratch directory to avoid. The client's request sits between them.
    const { head, body, tail } = splitPrompt(probe.prompt);
    expect(head).toContain(`Use host paths under ${hostRoot}, the user's project root.`);
    expect(head).toContain('(Primary working directory: /home/dev/project; Platform: linux)');
    expect(head).toContain(`That directory (${workspace}) is an empty scratch workspace`);
    expect(tail).toContain(`Use host paths under ${hostRoot}, never the scratch workspace path.`);
    expect(body).toContain('Where is my project?');
    expect(probe.prompt).not.toContain(noRootWording);

    // (b) The rules the SDK loaded (settingSources: project) are exactly the rendered AGENTS.md on disk.
    const agentsMd = await readFile(join(workspace, 'AGENTS.md'), 'utf8');
    expect(agentsMd).toContain("The user's project root on that machine is `/home/dev/project`.");
    expect(agentsMd).toContain('- Primary working directory: /home/dev/project\n- Platform: linux');
    expect(context.rules.map(({ fullPath, content }) => ({ fullPath, content }))).toEqual([
      { fullPath: join(workspace, 'AGENTS.md'), content: agentsMd },
    ]);
    // …and it registered the hooks of the rendered hooks.json.
    const hooksJson = z
      .object({ hooks: z.record(z.string(), z.unknown()) })
      .parse(JSON.parse(await readFile(join(workspace, '.cursor', 'hooks.json'), 'utf8')));
    expect(context.hooksConfig?.configuredSteps).toEqual(Object.keys(hooksJson.hooks));
    expect(context.hooksConfig?.configuredSteps).toEqual([
      'preToolUse',
      'beforeShellExecution',
      'beforeReadFile',
      'subagentStart',
    ]);

    // (c) Built-ins are denied by the hook and NOT executed (the same execs run in agent mode, below).
    const denyMessage = denyMessageIn(
      await readFile(join(workspace, '.cursor', 'hooks', 'deny-builtin.mjs'), 'utf8'),
    );
    expect(denyMessage).toBe(
      "Your tools run on the user's machine (Primary working directory: /home/dev/project; Platform: linux), " +
        'not in this directory. This directory is an empty scratch workspace; never use its path. ' +
        'Use the tools of the `custom-user-tools` MCP server instead. Use host paths under /home/dev/project.',
    );
    // The SDK runs `preToolUse` first (matcher `^(?!MCP:)`), so every built-in is denied there, named by
    // the SDK's tool name; the more specific beforeShellExecution / beforeReadFile hooks are not reached.
    const denied = (tool: string): string =>
      `The Cursor built-in tool "${tool}" is disabled in bridge mode. ${denyMessage}${sdkBlockedNote}`;
    expect(probe.shell).toMatchObject({
      shellResult: { rejected: { command: `touch ${targets.shellMarker}`, reason: denied('Shell') } },
    });
    expect(probe.read).toMatchObject({
      readResult: { rejected: { path: targets.secretFile, reason: denied('Read') } },
    });
    expect(probe.write).toMatchObject({
      writeResult: { error: { path: targets.writeMarker, error: denied('Write') } },
    });
    expect(existsSync(targets.shellMarker)).toBe(false);
    expect(existsSync(targets.writeMarker)).toBe(false);
    expect(JSON.stringify(probe.read)).not.toContain(targets.secret);
  });

  it('never guesses a root when the client reports no environment', async () => {
    const targets = await newTargets('no-env');
    let probe: Probe | undefined;
    wire = await startWireBridge({ scenario: probeScenario(targets, (found) => (probe = found)) });
    expect(await ask(wire.url, undefined)).toBe('probed');
    if (probe === undefined) throw new Error('the scenario did not run');
    const context = requestContextOf(probe.context);
    const workspace = context.env.workspacePaths[0] ?? '';

    const { head, tail } = splitPrompt(probe.prompt);
    expect(head).toContain(noRootWording);
    expect(head).toContain(`That directory (${workspace}) is an empty scratch workspace`);
    expect(tail).toContain(
      'Use only absolute host paths that appear in the conversation, never the scratch workspace path.',
    );
    expect(probe.prompt).not.toContain('Use host paths under');
    expect(probe.prompt).not.toContain('/home/dev');

    const [rule] = context.rules;
    expect(rule?.fullPath).toBe(join(workspace, 'AGENTS.md'));
    expect(rule?.content).toContain(
      "The user's client did not report a project root. Use only absolute host paths that appear in the conversation; never guess a project root.",
    );
    expect(rule?.content).not.toContain('project root on that machine');

    for (const [answer, key, tool] of [
      [probe.shell, 'shellResult', 'Shell'],
      [probe.read, 'readResult', 'Read'],
      [probe.write, 'writeResult', 'Write'],
    ] as const) {
      const refusal = refusalOf(answer, key);
      expect(refusal).toBe(
        `The Cursor built-in tool "${tool}" is disabled in bridge mode. Your tools run on the user's machine, ` +
          'not in this directory. This directory is an empty scratch workspace; never use its path. ' +
          `Use the tools of the \`custom-user-tools\` MCP server instead. ${noRootWording}${sdkBlockedNote}`,
      );
    }
    expect(existsSync(targets.shellMarker)).toBe(false);
    expect(existsSync(targets.writeMarker)).toBe(false);
  });

  it('a workspaces root inside a git work tree (a HOME kept in git) still grounds the SDK in the scratch workspace', async () => {
    // The SDK takes `git rev-parse --show-toplevel` of its cwd as the project whose rules and hooks it
    // loads: without a boundary it would load the enclosing repository's instead of the workspace's.
    const repo = await mkdtemp(join(scratch, 'repo-'));
    execFileSync('git', ['init', '-q', repo], { stdio: 'ignore' });
    await writeFile(join(repo, 'AGENTS.md'), "the enclosing repository's rules\n");
    const targets = await newTargets('in-repo');
    let probe: Probe | undefined;
    wire = await startWireBridge({
      scenario: probeScenario(targets, (found) => (probe = found)),
      config: { cursorWorkspacesDir: join(repo, 'workspaces') },
    });
    expect(await ask(wire.url, environment)).toBe('probed');
    if (probe === undefined) throw new Error('the scenario did not run');
    const context = requestContextOf(probe.context);
    const workspace = context.env.workspacePaths[0] ?? '';
    expect(dirname(workspace)).toBe(join(repo, 'workspaces'));
    expect(context.rules.map(({ fullPath }) => fullPath)).toEqual([join(workspace, 'AGENTS.md')]);
    expect(context.hooksConfig?.configuredSteps).toContain('beforeShellExecution');
    for (const [answer, key] of [
      [probe.shell, 'shellResult'],
      [probe.read, 'readResult'],
      [probe.write, 'writeResult'],
    ] as const)
      expect(refusalOf(answer, key)).toContain('is disabled in bridge mode');
    expect(existsSync(targets.shellMarker)).toBe(false);
    expect(existsSync(targets.writeMarker)).toBe(false);
  });

  // `cursorCwd` sets the SDK's local cwd when `cursorMode` is `agent`; agent mode's grounding tells the
  // agent its own tools run there, not that the client hosts them.
  it('agent mode with cursorCwd: the SDK runs in cursorCwd, and the prompt says its own tools run there', async () => {
    const cursorCwd = await mkdtemp(join(scratch, 'agent-cwd-'));
    let seen: { prompt: string; context: JsonObject } | undefined;
    wire = await startWireBridge({
      scenario: async (run) => {
        seen = { prompt: run.prompt, context: await run.exec('requestContextArgs', {}) };
        run.text('probed');
      },
      config: {
        Providers: [
          {
            name: 'cursor',
            api_base_url: 'https://cursor.com',
            api_key: 'crsr_test',
            models: ['composer-2'],
            transformer: { use: [['cursor-sdk', { cursorMode: 'agent', cursorCwd }]] },
          },
        ],
      },
    });
    expect(await ask(wire.url, environment)).toBe('probed');
    if (seen === undefined) throw new Error('the scenario did not run');
    expect(requestContextOf(seen.context).env.workspacePaths).toEqual([cursorCwd]);
    const { head, tail } = splitPrompt(seen.prompt);
    expect(head).toContain(`in your working directory ${cursorCwd}; use them there.`);
    expect(head).toContain('They are not available to you; do not try to call them.');
    expect(tail).toContain(`your own tools run in ${cursorCwd}`);
    expect(seen.prompt).not.toContain('custom-user-tools');
    expect(seen.prompt).not.toContain('never use its path');
  });

  it('control: in agent mode (no project settings, no deny-hook) the same execs do run', async () => {
    const targets = await newTargets('agent-mode');
    let probe: Probe | undefined;
    wire = await startWireBridge({
      scenario: probeScenario(targets, (found) => (probe = found)),
      config: {
        Providers: [
          {
            name: 'cursor',
            api_base_url: 'https://cursor.com',
            api_key: 'crsr_test',
            models: ['composer-2'],
            transformer: { use: [['cursor-sdk', { cursorMode: 'agent' }]] },
          },
        ],
      },
    });
    expect(await ask(wire.url, environment)).toBe('probed');
    if (probe === undefined) throw new Error('the scenario did not run');
    const context = requestContextOf(probe.context);
    expect(context.rules).toEqual([]);
    expect(context.hooksConfig).toBeUndefined();
    expect(probe.shell).toMatchObject({
      shellResult: { success: { command: `touch ${targets.shellMarker}` } },
    });
    expect(probe.read).toMatchObject({
      readResult: { success: { path: targets.secretFile, content: `${targets.secret}\n` } },
    });
    expect(probe.write).toMatchObject({ writeResult: { success: { path: targets.writeMarker } } });
    expect(existsSync(targets.shellMarker)).toBe(true);
    expect(await readFile(targets.writeMarker, 'utf8')).toBe('x');
  });
});
