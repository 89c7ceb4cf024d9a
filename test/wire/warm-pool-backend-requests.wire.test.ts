/**
 * What one conversation costs at Cursor's backend on a fresh bridge with the default warm pool: the real
 * SDK against the fake backend, which logs every request. A pre-warmed executor talks to the backend (its
 * own token exchange, the team's admin settings, a startup event), so the pool warms for the demand it
 * saw — one entry after one conversation — not up to its cap.
 */

import Anthropic from '@anthropic-ai/sdk';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { countByPath, until } from '../helpers/until.js';
import { closeWireBackend, startWireBridge, type WireBridge } from '../helpers/wire-bridge.js';

let wire: WireBridge | undefined;
afterEach(async () => {
  await wire?.close();
  wire = undefined;
});
afterAll(closeWireBackend);

/** Every new executor fetches the team's admin settings once: the count of executors the SDK built. */
const executorStartup = '/aiserver.v1.DashboardService/GetTeamAdminSettingsOrEmptyIfNotInTeam';

describe('one conversation on a fresh bridge with the default warm pool', { timeout: 60_000 }, () => {
  it('builds one pre-warmed executor after it, not one per slot of the cap', async () => {
    // The fixture's small pool replaced by the default (the session cap, at most 32).
    wire = await startWireBridge({ config: { cursorWarmWorkspaces: undefined } });
    const bridge = wire;
    const pool = bridge.bridge.warmPool;
    expect(pool).toBeDefined();
    const first = bridge.backend.requests.length;

    const client = new Anthropic({ baseURL: bridge.url, apiKey: 'sk-test', maxRetries: 0 });
    await client.messages
      .stream({
        model: 'composer-2',
        max_tokens: 100,
        system: '# Environment\n - Primary working directory: /home/ada/alpha\n',
        messages: [{ role: 'user', content: 'one conversation' }],
      })
      .finalMessage();
    // The conversation's claim left the pool with work: it is idle once that is done.
    await until(() => pool?.state === 'idle', 'the warm pool to be idle');

    const snapshot = await bridge.bridge.metrics.snapshot();
    const counts = countByPath(bridge.backend.requests.slice(first));
    console.info('backend requests for one conversation, by path:', counts);
    expect(snapshot).toMatchObject({ warmMisses: 1, warmHits: 0, warmWorkspaces: 1 });
    // The conversation's own executor and the one pre-warmed after it.
    expect(counts[executorStartup]).toBe(2);
    expect(counts['/agent.v1.AgentService/RunSSE']).toBe(1);
  });
});
