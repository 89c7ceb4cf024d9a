/**
 * The engine runs the model its resolver chose, hands the route to the server on the turn's events
 * (`modelRoute`), and logs it: once per distinct route at info (warn for a name near catalog models), and on
 * every turn line at debug.
 */
import { describe, expect, it } from 'vitest';
import type { ResolvedModel } from '../../src/engine/engine.js';
import type { ScriptSource } from '../../src/upstream/scripted/scripted-upstream.js';
import { collect, createTestEngine, never, request, user } from '../helpers/engine-helpers.js';
import { captureLog } from '../helpers/capture-log.js';

const answer: ScriptSource = () => [
  { type: 'text-delta', text: 'hi' },
  { type: 'end', status: 'finished' },
];

const routes: Record<string, ResolvedModel> = {
  'gpt-5.4': { model: 'gpt-5.4', route: 'catalog' },
  sonnet: { model: 'composer-2', route: 'default', note: `Claude Code's "sonnet" follows Router.default` },
  'gpt-5': {
    model: 'composer-2',
    route: 'unmatched',
    note: '"gpt-5" is not in Cursor\'s catalog, which has "gpt-5.4"',
  },
};

const start = () => {
  const { lines, logger } = captureLog('debug');
  const { engine, upstream } = createTestEngine(answer, {
    logger,
    // Asynchronous, as the bridge's resolver is (it reads the catalog).
    resolveModel: async (turn) => routes[turn.model] ?? { model: turn.model, route: 'explicit' },
  });
  return { engine, upstream, lines };
};

describe("the engine's model route", () => {
  it('runs the resolved model and puts the route on the events', async () => {
    const { engine, upstream } = start();
    const events = await engine.handleTurn(request([user('hello')], { model: 'sonnet' }), never);
    await collect(events);
    await engine.close();

    expect(events.modelRoute).toEqual({
      requested: 'sonnet',
      model: 'composer-2',
      route: 'default',
      note: `Claude Code's "sonnet" follows Router.default`,
    });
    expect(upstream.calls.map((call) => call.input.model)).toEqual(['composer-2']);
  });

  it('logs a route once at info, a near miss at warn, and the model and route on every turn line', async () => {
    const { engine, lines } = start();
    for (const [model, text] of [
      ['gpt-5.4', 'one'],
      ['gpt-5.4', 'two'],
      ['gpt-5', 'three'],
    ] as const) {
      await collect(await engine.handleTurn(request([user(text)], { model }), never));
    }
    await engine.close();

    const routeLines = lines.filter((line) => (line['level'] as number) >= 30);
    expect(routeLines).toEqual([
      expect.objectContaining({
        level: 30,
        msg: 'model route',
        requested: 'gpt-5.4',
        model: 'gpt-5.4',
        route: 'catalog',
      }),
      expect.objectContaining({
        level: 40,
        requested: 'gpt-5',
        model: 'composer-2',
        route: 'unmatched',
        note: routes['gpt-5']?.note,
      }),
    ]);
    const planned = lines.filter((line) => line['msg'] === 'planned turn');
    expect(planned.map((line) => [line['model'], line['route']])).toEqual([
      ['gpt-5.4', 'catalog'],
      ['gpt-5.4', 'catalog'],
      ['composer-2', 'unmatched'],
    ]);
  });
});
