/**
 * What a new conversation asks Cursor's backend before its run starts: the real SDK against the fake
 * backend, which logs every request. The SDK waits on everything it requests before it opens the run's
 * stream (`RunSSE`), so those requests are round trips on the conversation's path. The bridge serves what
 * the process already knows: its cached model catalog (the SDK would list it again for each agent), its
 * access token (each new SDK client, the agent client of a warm executor's first run included, would
 * exchange the key again) and, on a pre-warmed executor, the team's settings and the Statsig bootstrap.
 * Nothing is left before the run's own stream.
 */

import Anthropic from '@anthropic-ai/sdk';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SDK_CATALOG_ENV } from '../../src/upstream/cursor/sdk-catalog-env.js';
import { countByPath, until } from '../helpers/until.js';
import { closeWireBackend, startWireBridge, type WireBridge } from '../helpers/wire-bridge.js';

let wire: WireBridge | undefined;
afterEach(async () => {
  await wire?.close();
  wire = undefined;
});
afterAll(closeWireBackend);

const runStream = '/agent.v1.AgentService/RunSSE';
const modelCatalog = '/v1/models';
const keyExchange = '/auth/exchange_user_api_key';
/** Fetched by each new executor (the pool's, off the path, for a conversation that finds one warm). */
const teamSettings = '/aiserver.v1.DashboardService/GetTeamAdminSettingsOrEmptyIfNotInTeam';
const statsigBootstrap = '/aiserver.v1.AnalyticsService/BootstrapStatsig';

/** Starts new conversations on `bridge`, one at a time, and returns each one's backend requests. */
const conversations = (bridge: WireBridge) => {
  const pool = bridge.bridge.warmPool;
  const client = new Anthropic({ baseURL: bridge.url, apiKey: 'sk-test', maxRetries: 0 });
  /** One new conversation; the requests from its start until it and what it set off are done. */
  return async (text: string): Promise<ReadonlyArray<{ path: string }>> => {
    const from = bridge.backend.requests.length;
    await client.messages
      .stream({
        model: 'composer-2',
        max_tokens: 100,
        system: '# Environment\n - Primary working directory: /home/ada/alpha\n',
        messages: [{ role: 'user', content: text }],
      })
      .finalMessage();
    const seen = (): ReadonlyArray<{ path: string }> => bridge.backend.requests.slice(from);
    // Done: the pool refilled after the claim, and the run's billing was read.
    await until(
      () => pool?.state === 'idle' && seen().some(({ path }) => path.endsWith('/usage')),
      "the pool's refill and the billing read",
    );
    return seen();
  };
};

describe("a new conversation's backend requests", { timeout: 90_000 }, () => {
  it('lists the model catalog and exchanges the key once per process, and on a warm executor asks nothing before its run', async () => {
    wire = await startWireBridge();
    const bridge = wire;
    expect(bridge.bridge.warmPool).toBeDefined();
    const converse = conversations(bridge);

    // The first conversation of the process: the bridge lists the catalog for its model, the SDK does not;
    // the key is exchanged once, for every SDK client that asks (the run's, the pool's executor's).
    const first = await converse('the first conversation');
    console.info('backend requests, first new conversation, by path:', countByPath(first));
    expect(countByPath(first)[modelCatalog]).toBe(1);
    expect(countByPath(first)[keyExchange]).toBe(1);
    expect(process.env[SDK_CATALOG_ENV]).toContain('"composer-2"');

    // The next one finds an executor the pool warmed for it.
    const second = await converse('a second conversation');
    const beforeRun = second.slice(
      0,
      second.findIndex(({ path }) => path === runStream),
    );
    console.info('backend requests, next new conversation, by path:', countByPath(second));
    console.info('  of which before its run stream:', countByPath(beforeRun));
    expect((await bridge.bridge.metrics.snapshot()).warmHits).toBe(1);
    expect(countByPath(second)[runStream]).toBe(1);
    expect(countByPath(second)[modelCatalog]).toBeUndefined();
    expect(countByPath(second)[keyExchange]).toBeUndefined();
    expect(countByPath(beforeRun)).toEqual({});
    // Off the path: the pool's next executor fetched them after the conversation's turn.
    expect(second.slice(beforeRun.length).map(({ path }) => path)).toEqual(
      expect.arrayContaining([teamSettings, statsigBootstrap]),
    );

    await bridge.close();
    wire = undefined;
    // The closed bridge took its catalog back: the SDK lists the catalog itself again.
    expect(process.env[SDK_CATALOG_ENV]).toBeUndefined();
  });

  it('exchanges the key with Cursor again once Cursor refused the token a run was given', async () => {
    wire = await startWireBridge();
    const bridge = wire;
    const converse = conversations(bridge);
    expect(countByPath(await converse('the first conversation'))[keyExchange]).toBe(1);

    // Cursor stops accepting the token: the run ends as a refused key, and the bridge drops the token.
    const from = bridge.backend.requests.length;
    bridge.backend.setScenario((run) => run.fail('access token revoked (fake)', 'unauthenticated'));
    const client = new Anthropic({ baseURL: bridge.url, apiKey: 'sk-test', maxRetries: 0 });
    await expect(
      client.messages.create({
        model: 'composer-2',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'a refused conversation' }],
      }),
    ).rejects.toMatchObject({ status: 401 });

    // The next exchange goes to Cursor (the pool's refill or the next run, whichever asks first), once.
    bridge.backend.setScenario((run) => void run.text('ok'));
    const next = await converse('the conversation after');
    expect(countByPath(next)[runStream]).toBe(1);
    expect(countByPath(bridge.backend.requests.slice(from))[keyExchange]).toBe(1);
  });
});
