/**
 * The bridge's model resolver reads Cursor's live catalog through the upstream (cached there); when the
 * catalog cannot be read it resolves against the provider's `models` and says so once, not per request.
 */
import { describe, expect, it } from 'vitest';
import { engineModelResolver } from '../../src/bridge/create-bridge.js';
import { resolveConfig } from '../../src/config/load-config.js';
import { BridgeError } from '../../src/turn/turn-error.js';
import { request, user } from '../helpers/engine-helpers.js';
import { captureLog } from '../helpers/capture-log.js';

const config = resolveConfig(
  {
    Providers: [{ name: 'cursor', models: ['composer-2', 'gpt-5.4'] }],
    Router: { default: 'cursor,composer-2', think: 'cursor,claude-opus-4-8' },
  },
  { path: '/nonexistent/config.json', env: {}, homedir: '/nonexistent' },
);

const asking = (model: string, reasoning = false) =>
  request([user('hi')], { model, reasoning: { requested: reasoning } });

describe('engineModelResolver', () => {
  it("runs a model of Cursor's live catalog that the config does not list", async () => {
    const resolve = engineModelResolver(config, { catalog: async () => [{ id: 'gpt-5.5' }] });

    expect(await resolve(asking('gpt-5.5'))).toEqual({ model: 'gpt-5.5', route: 'catalog' });
  });

  it("falls back to the provider's models while the catalog cannot be read, and logs it once", async () => {
    const { lines, logger } = captureLog('info');
    let available = false;
    const resolve = engineModelResolver(config, {
      logger,
      catalog: async () => {
        if (!available) throw new Error('catalog down');
        return [{ id: 'gpt-5.5' }];
      },
    });

    expect(await resolve(asking('gpt-5.4'))).toEqual({ model: 'gpt-5.4', route: 'listed' });
    expect(await resolve(asking('gpt-5.5'))).toMatchObject({
      model: 'composer-2',
      route: 'default',
      note: expect.stringContaining('could not be read'),
    });
    available = true;
    expect(await resolve(asking('gpt-5.5'))).toEqual({ model: 'gpt-5.5', route: 'catalog' });

    expect(lines.map((line) => [line['level'], line['msg']])).toEqual([
      [
        40,
        "Cursor's model catalog could not be read; model names resolve against the provider's models only",
      ],
      [30, "Cursor's model catalog is readable again"],
    ]);
  });

  it('refuses a route to another provider with a 404 that says why', async () => {
    const resolve = engineModelResolver(config, { catalog: async () => [] });
    const failure = await Promise.resolve(resolve(asking('openrouter,gpt-4o'))).catch(
      (error: unknown) => error,
    );

    expect(failure).toBeInstanceOf(BridgeError);
    expect((failure as BridgeError).turnError).toMatchObject({ kind: 'not-found', retryable: false });
  });

  describe('Router.longContext', () => {
    const withLongContext = resolveConfig(
      {
        Providers: [{ name: 'cursor', models: ['composer-2', 'gpt-5.4'] }],
        Router: { default: 'cursor,composer-2', longContext: 'cursor,gpt-5.4', longContextThreshold: 100 },
      },
      { path: '/nonexistent/config.json', env: {}, homedir: '/nonexistent' },
    );

    it('counts a request only when a long-context route is set and the Router decides its model', async () => {
      const counted: string[] = [];
      const countTokens = async (turn: { model: string }): Promise<number> => {
        counted.push(turn.model);
        return 101;
      };
      const withCount = engineModelResolver(withLongContext, { catalog: async () => [], countTokens });
      const withoutRoute = engineModelResolver(config, { catalog: async () => [], countTokens });

      expect(await withCount(asking('opus'))).toMatchObject({ model: 'gpt-5.4', route: 'long-context' });
      expect(await withCount(asking('cursor,composer-2'))).toEqual({
        model: 'composer-2',
        route: 'explicit',
      });
      expect(await withCount(asking('gpt-5.4'))).toEqual({ model: 'gpt-5.4', route: 'listed' });
      expect(await withoutRoute(asking('sonnet'))).toMatchObject({ model: 'composer-2', route: 'default' });
      expect(counted).toEqual(['opus']);
    });

    it('routes a request it cannot count as a short one, and says so', async () => {
      const { lines, logger } = captureLog('info');
      const resolve = engineModelResolver(withLongContext, {
        catalog: async () => [],
        countTokens: async () => {
          throw new Error('tokenizer missing');
        },
        logger,
      });

      expect(await resolve(asking('opus'))).toMatchObject({ model: 'composer-2', route: 'default' });
      expect(lines.map((line) => line['msg'])).toEqual([
        'counting a request for Router.longContext failed; it routes as a short one',
      ]);
    });
  });
});
