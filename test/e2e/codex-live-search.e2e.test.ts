/**
 * Acceptance: the real Codex 0.171 with web search on (`web_search = "live"`), configured as the README says,
 * against `cursor-bridge serve` whose SDK talks to the fake Cursor backend. The model's turn runs Cursor's
 * hosted search; Codex shows it as a `web_search` item, sends it back in the next turn's history, and the
 * conversation goes on on the same agent. With Codex's default (cached) search the agent may not search.
 */

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ClientDriver } from '../helpers/e2e/client-driver.js';
import { parseJsonLines } from '../helpers/e2e/client-driver.js';
import { codexAgentMessages, codexReadmeDriver } from '../helpers/e2e/codex-driver.js';
import { installTimeoutMs, prepareE2e, scenarioTimeoutMs, startE2e } from '../helpers/e2e/e2e-harness.js';
import type { ModelScenario } from '../helpers/e2e/model-scenario.js';
import { startServeBridge, type ServeBridge } from '../helpers/e2e/serve-bridge.js';
import { nodeRelease, webSearchQuery } from '../helpers/e2e/web-search-scenario.js';

beforeAll(() => prepareE2e('codex'), installTimeoutMs);

/** The README's Codex config with `web_search = "<mode>"` (a top-level key, so first in the file). */
const withWebSearch = (mode: 'live' | 'cached'): ClientDriver => ({
  ...codexReadmeDriver,
  configure: async (sandbox, endpoint) => {
    await codexReadmeDriver.configure(sandbox, endpoint);
    const path = join(sandbox.home, '.codex', 'config.toml');
    await writeFile(path, `web_search = "${mode}"\n${await readFile(path, 'utf8')}`);
  },
});

/** `codex exec --json`'s web search items: `{type: "web_search", query, action, …}`. */
const webSearchItems = (stdout: string): Array<Record<string, unknown>> =>
  parseJsonLines(stdout).flatMap((event) => {
    const item = event['item'] as Record<string, unknown> | undefined;
    return event['type'] === 'item.completed' && item?.['type'] === 'web_search' ? [item] : [];
  });

const start = async (driver: ClientDriver, scenario: ModelScenario) => {
  let served: ServeBridge | undefined;
  const e2e = await startE2e(driver, scenario, {
    startBridge: async (options) => (served = await startServeBridge(options)),
  });
  /** The allowed-tools header of each agent run the fake backend received. */
  const allowedTools = (): string[] =>
    (served?.backend.requests ?? [])
      .filter((entry) => entry.path.endsWith('/RunSSE'))
      .map((entry) => entry.headers['x-cursor-agent-allowed-tools'] ?? '');
  return { e2e, allowedTools, played: () => served?.played ?? [] };
};

describe('Codex web search on Cursor', { timeout: 2 * scenarioTimeoutMs }, () => {
  it('live: a web_search round trip, sent back in the next turn, on the same agent', async () => {
    const { e2e, allowedTools, played } = await start(withWebSearch('live'), {
      turns: [
        {
          steps: [
            {
              webSearches: [{ query: webSearchQuery, outcome: { references: [nodeRelease] } }],
              text: 'Node 22 was released on April 24, 2024.',
            },
          ],
        },
        { steps: [{ text: 'Second answer.' }] },
      ],
    });
    const first = await e2e.turn('When was Node 22 released? Search the web.');

    expect(first.exitCode).toBe(0);
    expect(webSearchItems(first.stdout)).toEqual([
      expect.objectContaining({ query: webSearchQuery, action: { type: 'search', query: webSearchQuery } }),
    ]);
    expect(codexAgentMessages(first.stdout).at(-1)).toBe('Node 22 was released on April 24, 2024.');
    // The run was allowed Cursor's search (and fetch, for Codex's page opens) besides the host's tools.
    expect(allowedTools()[0]).toContain('web_search_tool_call');
    expect(allowedTools()[0]).toContain('web_fetch_tool_call');
    expect(played()[0]?.webSearches).toEqual([
      { approval: { status: 'approved' }, result: 'success', callId: expect.any(String) },
    ]);

    const second = await e2e.turn('Thanks. Anything else?', { resume: true });
    expect(second.exitCode).toBe(0);
    expect(codexAgentMessages(second.stdout).at(-1)).toBe('Second answer.');
    // Codex sent the search back as history; the agent that ran it held it: a slim follow-up.
    const input = JSON.stringify((e2e.bridge.mainExchanges().at(-1)?.body as { input?: unknown }).input);
    expect(input).toContain('"type":"web_search_call"');
    const runs = e2e.bridge.mainRuns();
    expect(runs).toHaveLength(2);
    expect(runs[1]?.agentId).toBe(runs[0]?.agentId);
    expect(runs[1]?.prompt).not.toContain('When was Node 22 released?');
  });

  it('cached (the default): the agent may not search, and the answer still arrives', async () => {
    const { e2e, allowedTools } = await start(withWebSearch('cached'), {
      turns: [{ steps: [{ text: 'Answered without a search.' }] }],
    });
    const run = await e2e.turn('When was Node 22 released?');

    expect(run.exitCode).toBe(0);
    expect(codexAgentMessages(run.stdout).at(-1)).toBe('Answered without a search.');
    expect(allowedTools()).toHaveLength(1);
    expect(allowedTools()[0]).not.toContain('web_search_tool_call');
    expect(webSearchItems(run.stdout)).toEqual([]);
  });

  it('a failed search shows as a failed web_search item, and the answer still arrives', async () => {
    const { e2e } = await start(withWebSearch('live'), {
      turns: [
        {
          steps: [
            {
              webSearches: [{ query: webSearchQuery, outcome: { error: 'search backend unavailable' } }],
              text: 'The search failed.',
            },
          ],
        },
      ],
    });
    const run = await e2e.turn('When was Node 22 released? Search the web.');

    expect(run.exitCode).toBe(0);
    expect(codexAgentMessages(run.stdout).at(-1)).toBe('The search failed.');
    const items = webSearchItems(run.stdout);
    expect(items).toHaveLength(1);
    expect(JSON.stringify(items[0])).toContain(webSearchQuery);
    // What Codex received for it: the item's final status.
    const frames = e2e.bridge.mainExchanges()[0]?.frames ?? [];
    const done = frames
      .flatMap((frame) => ('data' in frame ? [frame.data] : []))
      .find((data) => data.includes('"response.output_item.done"') && data.includes('web_search_call'));
    expect(done).toContain('"status":"failed"');
  });
});
