/**
 * Acceptance: Claude Code's WebSearch through `cursor-bridge claude -p … --allowedTools WebSearch`, the real
 * Claude Code (pinned, from npm) and the real launcher of this checkout, offline in a network namespace,
 * against a recorded `cursor-bridge serve` whose SDK talks to the fake Cursor backend. The fake plays
 * Cursor's hosted search as the SDK's protocol defines it. The main conversation loads WebSearch with
 * ToolSearch and calls it; Claude Code runs it by sending its side request, which the bridge answers from
 * Cursor's search; the tool result Claude Code hands the model lists the references as Links.
 */

import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, onTestFailed, onTestFinished } from 'vitest';
import { repoRoot } from '../helpers/repo-root.js';
import { claudeCodeDriver, claudeCodeResult } from '../helpers/e2e/claude-code-driver.js';
import { clientTimeoutMs, installTimeoutMs, prepareE2e } from '../helpers/e2e/e2e-harness.js';
import { ensureClient, type InstalledClient } from '../helpers/e2e/install-clients.js';
import type { ModelScenario } from '../helpers/e2e/model-scenario.js';
import { openClientEndpoint } from '../helpers/e2e/network-isolation.js';
import { clientPath, createClientSandbox, runClient, type ClientRun } from '../helpers/e2e/run-client.js';
import { startServeBridge, type ServeBridge } from '../helpers/e2e/serve-bridge.js';
import {
  nodeRelease,
  nodeSchedule,
  webSearchPrompt,
  webSearchQuery,
  webSearchScenario,
  webSearchToolResults,
} from '../helpers/e2e/web-search-scenario.js';

let claude: InstalledClient;
beforeAll(async () => {
  await prepareE2e('claude-code');
  claude = await ensureClient('claude-code');
}, installTimeoutMs);

const query = webSearchQuery;
const scenario = webSearchScenario;

/** `cursor-bridge claude -p <prompt> --output-format stream-json --verbose --allowedTools WebSearch`. */
const runLauncher = async (bridge: ServeBridge): Promise<ClientRun> => {
  const endpoint = await openClientEndpoint(bridge.socketPath);
  const sandbox = await createClientSandbox('claude-web-search');
  await mkdir(join(sandbox.home, 'tmp'), { recursive: true });
  onTestFinished(async () => {
    await endpoint.close();
    await sandbox.remove();
  });
  // On the host's network (no namespaces) the launcher finds the serve through its config's port.
  const port = Number(new URL(endpoint.baseUrl).port);
  const result = await runClient({
    binaryPath: process.execPath,
    args: [
      join(repoRoot, 'bin', 'cursor-bridge.js'),
      '--port',
      String(port),
      'claude',
      '-p',
      webSearchPrompt,
      '--output-format',
      'stream-json',
      '--verbose',
      '--allowedTools',
      'WebSearch',
    ],
    sandbox,
    endpoint,
    env: {
      PATH: [join(claude.prefix, 'node_modules', '.bin'), clientPath].join(':'),
      TMPDIR: join(sandbox.home, 'tmp'),
      DISABLE_TELEMETRY: '1',
      DISABLE_AUTOUPDATER: '1',
    },
    timeoutMs: 2 * clientTimeoutMs,
  });
  onTestFailed(() =>
    console.error(
      `exit ${String(result.exitCode)}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}\n${bridge.describe()}`,
    ),
  );
  return result;
};

const webSearchResults = webSearchToolResults;

const startBridge = async (model: ModelScenario): Promise<ServeBridge> => {
  const bridge = await startServeBridge({ scenario: model, shell: claudeCodeDriver.shell });
  onTestFinished(() => bridge.close());
  return bridge;
};

/** The allowed-tools header of each agent run the fake backend received. */
const allowedTools = (bridge: ServeBridge): string[] =>
  bridge.backend.requests
    .filter((entry) => entry.path.endsWith('/RunSSE'))
    .map((entry) => entry.headers['x-cursor-agent-allowed-tools'] ?? '');

describe("Claude Code's WebSearch through cursor-bridge claude", { timeout: 3 * clientTimeoutMs }, () => {
  it('searches on Cursor: the model gets the references as Links, and Claude Code counts the search', async () => {
    const bridge = await startBridge(scenario({ references: [nodeRelease, nodeSchedule] }));
    const result = await runLauncher(bridge);

    expect(result.exitCode).toBe(0);
    const answer = claudeCodeResult(result.stdout)?.result ?? '';
    // What Claude Code handed its model as WebSearch's result: the query, the references as Links, and
    // the search's answer text.
    expect(answer).toContain(`Web search results for query: "${query}"`);
    expect(answer).toContain('Links:');
    expect(answer).toContain(JSON.stringify({ title: nodeRelease.title, url: nodeRelease.url }));
    expect(answer).toContain(nodeSchedule.url);
    expect(answer).toContain('Node 22 was released on April 24, 2024');
    // Claude Code's own record of the tool call (stream-json) counts one search, with its sources.
    expect(webSearchResults(result.stdout)).toEqual([
      expect.objectContaining({
        query,
        searchCount: 1,
        results: [
          {
            tool_use_id: expect.stringMatching(/^srvtoolu_/),
            content: [
              { title: nodeRelease.title, url: nodeRelease.url },
              { title: nodeSchedule.title, url: nodeSchedule.url },
            ],
          },
          expect.stringContaining('Node 22 was released on April 24, 2024'),
        ],
      }),
    ]);

    // The side request went to a run that could search and do nothing else; the SDK approved the search.
    const side = bridge.played.filter((run) => run.searchSideCall === true);
    expect(side).toHaveLength(1);
    expect(side[0]?.webSearches).toEqual([
      { approval: { status: 'approved' }, result: 'success', callId: expect.any(String) },
    ]);
    expect(side[0]?.request.mcpTools).toEqual([]);
    const headers = allowedTools(bridge);
    expect(headers.filter((header) => header === 'web_search_tool_call')).toHaveLength(1);
    // Every run of the main conversation was denied Cursor's search: Claude Code's permission check on
    // its WebSearch tool stays the gate.
    const mainHeaders = headers.filter((header) => header !== 'web_search_tool_call');
    expect(mainHeaders.length).toBeGreaterThanOrEqual(2);
    for (const header of mainHeaders) {
      expect(header).toContain('mcp_tool_call');
      expect(header).not.toContain('web_search_tool_call');
    }
  });

  it.each([
    ['Cursor refuses the search', { rejected: 'Web search is disabled for your team' }],
    ['the search fails', { error: 'search backend unavailable' }],
  ] as const)('%s: Claude Code shows a failed search, not results', async (_label, outcome) => {
    const bridge = await startBridge(scenario(outcome));
    const result = await runLauncher(bridge);

    expect(result.exitCode).toBe(0);
    const answer = claudeCodeResult(result.stdout)?.result ?? '';
    expect(answer).toContain('TOOL RESULT BEGIN');
    expect(answer).not.toContain('Links:');
    expect(answer).not.toContain(nodeRelease.url);
    expect(answer).toMatch(/error|unavailable|fail/i);
    // Claude Code's record shows the search without results.
    const [recorded] = webSearchResults(result.stdout);
    expect(JSON.stringify(recorded?.['results'] ?? [])).not.toContain(nodeRelease.url);
  });
});
