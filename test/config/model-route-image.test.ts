import { describe, expect, it } from 'vitest';

import type { BridgeConfig } from '../../src/config/load-config.js';
import { mayRouteByTokenCount, resolveModelRoute } from '../../src/config/model-route.js';

type RouteConfig = Pick<BridgeConfig, 'cursor' | 'router' | 'providers'>;

const base: RouteConfig = {
  cursor: { providerName: 'cursor', models: ['composer-2'], mode: 'bridge', sandboxEnabled: false },
  router: {
    default: 'cursor,composer-2',
    think: 'cursor,claude-opus-4-8',
    longContext: 'cursor,gpt-5.4',
    image: 'cursor,vision',
    longContextThreshold: 60000,
  },
  providers: [
    { name: 'cursor', isCursor: true },
    { name: 'openrouter', isCursor: false },
  ],
};
const catalog = [{ id: 'composer-2' }, { id: 'gpt-5.4' }, { id: 'vision-1', aliases: ['vision'] }];

const route = (model: string, images: boolean, config: RouteConfig = base) =>
  resolveModelRoute(config, {
    model,
    reasoningRequested: true,
    ...(images ? { images } : {}),
    catalog,
    tokenCount: 90_000,
  });

describe('Router.image', () => {
  it.each([
    // A request whose latest turn carries an image runs on it, whatever its name (Claude Code Router's rule).
    ['claude-opus-5-5', true, 'vision-1', 'image'],
    ['gpt-5.4', true, 'vision-1', 'image'],
    ['cursor,composer-2', true, 'vision-1', 'image'],
    // Without images: as before (the long-context count wins over think).
    ['claude-opus-5-5', false, 'gpt-5.4', 'long-context'],
    ['gpt-5.4', false, 'gpt-5.4', 'catalog'],
  ] as const)('%s (images: %s) runs %s by %s', (model, images, expected, kind) => {
    const result = route(model, images);
    expect(result.ok && result.value).toMatchObject({ model: expected, route: kind });
  });

  it('says why in the note, and is never taken over by size', () => {
    const result = route('claude-opus-5-5', true);
    expect(result.ok && result.value.note).toBe(
      'a request carrying images runs on Router.image (vision-1), not "claude-opus-5-5"',
    );
    expect(mayRouteByTokenCount(base, 'image')).toBe(false);
  });

  it('leaves requests with images to the other rules when unset', () => {
    const { image: _unset, ...router } = base.router;
    const result = route('composer-2', true, { ...base, router });
    expect(result.ok && result.value).toMatchObject({ model: 'composer-2', route: 'catalog' });
  });

  it('refuses a Router.image on another provider, naming it', () => {
    const result = route('composer-2', true, {
      ...base,
      router: { ...base.router, image: 'openrouter,gpt-4o' },
    });
    expect(result).toEqual({
      ok: false,
      error: expect.stringMatching(
        /^Router\.image routes to provider "openrouter", which is not a Cursor provider/,
      ),
    });
  });
});
