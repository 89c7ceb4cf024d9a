/**
 * Acceptance: `cursor-bridge templates live` shows what the agent of a conversation started by the real
 * Claude Code was given — the AGENTS.md in its workspace, the deny message, the prompt head and tail of its
 * latest turn, and the host facts they were rendered from — and nothing of what the user or the model said.
 *
 * Claude Code (pinned, from npm) runs offline in its own network namespace with a fresh HOME, stdin from
 * /dev/null, against `cursor-bridge serve` (the real `@cursor/sdk`) and the fake Cursor backend, as the
 * other Claude Code acceptance tests do. The command then runs as a user would, in a process of its own
 * on the bridge's machine, against the bridge's port.
 *
 * Host environment grounding: bridge mode extracts the host's <env> block (project root, platform, OS
 * version, and any other reported facts) from each incoming request and states the real topology in three
 * places: AGENTS.md inside the workspace, the head and the tail of the prompt sent to the agent, the message
 * returned when a Cursor built-in is denied.
 */

import { beforeAll, describe, expect, it } from 'vitest';
import { formatSection } from '../../src/cli/templates-format.js';
import type { GroundingPreview } from '../../src/workspace/template-preview.js';
import { createChildEnv, runCli } from '../helpers/cli/cli-process.js';
import { claudeCodeDriver, claudeCodeResult } from '../helpers/e2e/claude-code-driver.js';
import { installTimeoutMs, prepareE2e, scenarioTimeoutMs, startE2e } from '../helpers/e2e/e2e-harness.js';
import { startServeBridge, type ServeBridge } from '../helpers/e2e/serve-bridge.js';

const promptMarker = 'user-says-7c41e0';
const answerMarker = 'model-says-3ad92b';

const headOf = (prompt: string): string =>
  /^<bridge_environment>\n[\s\S]*?\n<\/bridge_environment>/.exec(prompt)?.[0] ?? `(no head in ${prompt})`;
const tailOf = (prompt: string): string =>
  /<bridge_reminder>\n[\s\S]*?\n<\/bridge_reminder>$/.exec(prompt)?.[0] ?? `(no tail in ${prompt})`;

describe('the live grounding preview of a Claude Code conversation', { timeout: scenarioTimeoutMs }, () => {
  beforeAll(() => prepareE2e('claude-code'), installTimeoutMs);

  it('`templates live` shows what its agent was given, and nothing of what was said', async () => {
    let serve: ServeBridge | undefined;
    const e2e = await startE2e(
      claudeCodeDriver,
      { turns: [{ steps: [{ text: `Answered: ${answerMarker}.` }] }] },
      { startBridge: async (options) => (serve = await startServeBridge(options)) },
    );
    if (serve === undefined) throw new Error('e2e: serve did not start');
    const run = await e2e.turn(`Where is my project? ${promptMarker}`);
    expect(run.exitCode).toBe(0);
    expect(claudeCodeResult(run.stdout)?.result).toContain(answerMarker);
    const [agentRun] = e2e.bridge.mainRuns();
    if (agentRun === undefined) throw new Error('e2e: no main run');
    expect(agentRun.prompt).toContain(promptMarker);

    const url = `http://127.0.0.1:${serve.port}`;
    const live = await runCli(['templates', 'live', '--url', url], {
      env: createChildEnv(serve.home),
      cwd: serve.home,
    });
    expect(live.stderr).toBe('');
    expect(live.code).toBe(0);
    expect(live.stdout).toContain(`Live grounding at ${url} (cursorMode bridge): 1 live conversation(s)`);
    expect(live.stdout).toContain(`Workspace: ${agentRun.workspaceDir}\n`);
    // The host facts Claude Code reported.
    expect(live.stdout).toContain(
      `Host facts (Claude Code "# Environment"):\n  root: ${e2e.sandbox.project}\n`,
    );
    expect(live.stdout).toContain(`    Primary working directory: ${e2e.sandbox.project}\n`);
    // AGENTS.md exactly as it is in the agent's workspace.
    const agentsMd = await e2e.bridge.readWorkspaceFile(agentRun, 'AGENTS.md');
    expect(agentsMd).toContain(`\`${e2e.sandbox.project}\``);
    expect(live.stdout).toContain(formatSection('AGENTS.md (default), in the workspace', agentsMd));
    // The deny message, and the prompt head and tail exactly as the agent's run received them.
    expect(live.stdout).toContain(
      '==> deny message from deny-message.md (default), baked into the hook script <==\n',
    );
    expect(live.stdout).toContain(
      formatSection(
        'prompt head from prompt-head.md (default), as sent with the latest turn',
        headOf(agentRun.prompt),
      ),
    );
    expect(live.stdout).toContain(
      formatSection(
        'prompt tail from prompt-tail.md (default), as sent with the latest turn',
        tailOf(agentRun.prompt),
      ),
    );

    // The same as JSON, for scripts; the conversation's key is the bridge's own, not Claude Code's session id.
    const response = await fetch(`${url}/debug/grounding`);
    expect(response.status).toBe(200);
    const body = await response.text();
    const preview = JSON.parse(body) as GroundingPreview;
    expect(preview.sessions).toHaveLength(1);
    expect(preview.sessions[0]?.facts?.root).toBe(e2e.sandbox.project);
    expect(preview.sessions[0]?.facts?.platform).toBe('linux');
    const clientSession = String(e2e.bridge.mainExchanges()[0]?.headers['x-claude-code-session-id'] ?? '');
    expect(clientSession).not.toBe('');

    // Nothing of the conversation: neither the user's words nor the model's, nor Claude Code's session id.
    for (const output of [live.stdout, body]) {
      expect(output).not.toContain(promptMarker);
      expect(output).not.toContain(answerMarker);
      expect(output).not.toContain(clientSession);
    }
  });
});
