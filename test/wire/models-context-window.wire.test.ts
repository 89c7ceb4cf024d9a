/**
 * `GET /v1/models` through the whole bridge and the real `@cursor/sdk`: Cursor's catalog as the SDK lists it
 * (the fake backend's), each model with the context window of the variant the bridge runs for it — what a
 * client sizes its context and its compaction from — and the configured models the catalog lacks.
 */

import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { closeWireBackend, startWireBridge, type WireBridge } from '../helpers/wire-bridge.js';

let wire: WireBridge | undefined;
afterEach(async () => {
  await wire?.close();
  wire = undefined;
});
afterAll(closeWireBackend);

type Listed = { id: string; display_name: string; aliases?: string[]; context_window?: number };

const listModels = async (): Promise<Listed[]> => {
  const response = await fetch(`${wire?.url ?? ''}/v1/models`, { headers: { 'x-api-key': 'sk-test' } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: Listed[] }).data;
};

describe('GET /v1/models', () => {
  it("lists Cursor's catalog with each model's context window, then the configured models it lacks", async () => {
    wire = await startWireBridge({
      config: { Providers: [{ name: 'cursor', models: ['composer-2', 'grok-9-listed'] }] },
    });

    expect(await listModels()).toEqual([
      // No context parameter: Cursor's default window.
      expect.objectContaining({
        id: 'composer-2',
        display_name: 'Composer 2',
        aliases: ['composer'],
        context_window: 200_000,
      }),
      expect.objectContaining({ id: 'claude-opus-4-8', context_window: 200_000 }),
      expect.objectContaining({ id: 'claude-haiku-4-5', context_window: 200_000 }),
      // The bridge runs gpt-5.4's 272k variants; its 1M one is never chosen.
      expect.objectContaining({ id: 'gpt-5.4', display_name: 'GPT-5.4', context_window: 272_000 }),
      {
        id: 'grok-9-listed',
        object: 'model',
        type: 'model',
        display_name: 'grok-9-listed',
        created: expect.any(Number),
        created_at: expect.any(String),
        owned_by: 'cursor',
      },
    ]);
  });

  it('lists the configured models, with no window, while the catalog cannot be read', async () => {
    wire = await startWireBridge({ auth: 'reject' });
    expect((await listModels()).map(({ id, context_window }) => ({ id, context_window }))).toEqual([
      { id: 'composer-2', context_window: undefined },
    ]);
  });
});
