/**
 * The search side calls as a unit, apart from the engine: when a side call counts as in flight, how each
 * run's end reaches the turn metrics, what goes into the side calls' totals, and the coalescing key the
 * engine's replay is asked about. What the client gets from one call is in the engine's side-call tests.
 */
import { describe, expect, it, vi } from 'vitest';
import { createStaticWorkspace, type WorkspacePort } from '../../src/engine/engine-deps.js';
import { TurnCoalescer } from '../../src/engine/turn-coalescer.js';
import { UsageAccounting } from '../../src/engine/usage-accounting.js';
import { WebSearchSideCalls, type WebSearchSideCallsDeps } from '../../src/engine/web-search-side-calls.js';
import { BridgeMetrics } from '../../src/metrics/bridge-metrics.js';
import { BridgeError, createTurnError } from '../../src/turn/turn-error.js';
import type { TurnEvent } from '../../src/turn/turn-event.js';
import type { TurnRequest, TurnWebSearch } from '../../src/turn/turn-request.js';
import {
  ScriptedUpstream,
  type ScriptSource,
  type ScriptStep,
} from '../../src/upstream/scripted/scripted-upstream.js';
import { captureLog } from '../helpers/capture-log.js';
import { collect, never, request, silentLogger, user } from '../helpers/engine-helpers.js';
import { createGate } from '../helpers/gate.js';

type SideRequest = TurnRequest & { webSearch: TurnWebSearch };

const sideCall = (query = 'node 22', webSearch: Partial<TurnWebSearch> = {}): SideRequest =>
  ({
    ...request([user(`Perform a web search for the query: ${query}`)], { tools: [] }),
    webSearch: { name: 'web_search', ...webSearch },
  }) as SideRequest;

const found: ScriptStep[] = [
  {
    type: 'web-call',
    call: {
      id: 's1',
      kind: 'search',
      query: 'node 22',
      result: { status: 'success', references: [{ title: 'a', url: 'https://a.example/', chunk: '' }] },
    },
  },
  { type: 'text-delta', text: 'April.' },
  { type: 'usage', usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 } },
  { type: 'end', status: 'finished' },
];

const createSideCalls = (source: ScriptSource, deps: Partial<WebSearchSideCallsDeps> = {}) => {
  const metrics = new BridgeMetrics();
  const turnEnded = vi.spyOn(metrics, 'turnEnded');
  const accounting = new UsageAccounting({ metrics, logger: silentLogger, readsMs: [0] });
  const replayKeys: string[] = [];
  const upstream = new ScriptedUpstream(source);
  const sideCalls = new WebSearchSideCalls({
    upstream,
    workspace: createStaticWorkspace('/tmp/scratch', { head: 'HEAD', tail: 'TAIL' }),
    logger: silentLogger,
    metrics,
    accounting,
    coalescer: new TurnCoalescer<TurnEvent>({
      isTerminal: (event) => event.type === 'turn-end' || event.type === 'error',
    }),
    refuses: () => false,
    route: async (sent) => ({
      model: sent.model,
      modelRoute: { requested: sent.model, model: sent.model, route: 'explicit' },
    }),
    replaysOf: (turnKey) => {
      replayKeys.push(turnKey);
      return () => false;
    },
    ...deps,
  });
  return { sideCalls, upstream, turnEnded, replayKeys };
};

describe('search side calls in flight', () => {
  it('counts a side call from its admission, while its route resolves, until its response ends', async () => {
    const routed = createGate();
    const { sideCalls } = createSideCalls(found, {
      route: async (sent) => {
        await routed.opened;
        return {
          model: sent.model,
          modelRoute: { requested: sent.model, model: sent.model, route: 'explicit' },
        };
      },
    });
    const handled = sideCalls.handle(sideCall(), never);
    expect(sideCalls.inFlight).toBe(1);
    routed.open();
    const events = await handled;
    expect(sideCalls.inFlight).toBe(1);
    expect((await collect(events)).at(-1)).toMatchObject({ type: 'turn-end' });
    expect(sideCalls.inFlight).toBe(0);
  });

  it('a refused side call is never counted and never routed', async () => {
    const route = vi.fn();
    const { sideCalls } = createSideCalls(found, { refuses: () => true, route });
    const refusal = await sideCalls.handle(sideCall(), never).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect((refusal as BridgeError).turnError).toMatchObject({ kind: 'unavailable', retryAfterSeconds: 2 });
    expect(route).not.toHaveBeenCalled();
    expect(sideCalls.inFlight).toBe(0);
  });

  it('a side call that fails before its stream (route, replayed failure) is released once', async () => {
    const unusable = new BridgeError(createTurnError('invalid-request', 'no such model'));
    const { sideCalls } = createSideCalls(found, {
      route: async () => {
        throw unusable;
      },
    });
    await expect(sideCalls.handle(sideCall(), never)).rejects.toBe(unusable);
    expect(sideCalls.inFlight).toBe(0);

    const retained = new BridgeError(createTurnError('rate-limit', 'slow down'));
    const replaying = createSideCalls(found, {
      replaysOf: () => {
        throw retained;
      },
    });
    await expect(replaying.sideCalls.handle(sideCall(), never)).rejects.toBe(retained);
    expect(replaying.sideCalls.inFlight).toBe(0);
  });
});

describe("a side call's end in the turn metrics", () => {
  it('a finished run ends finished', async () => {
    const { sideCalls, turnEnded } = createSideCalls(found);
    await collect(await sideCalls.handle(sideCall(), never));
    // The run's end is counted once it released its agent: after the client got its last event.
    await vi.waitFor(() => expect(turnEnded).toHaveBeenCalledTimes(1));
    expect(turnEnded.mock.calls[0]).toEqual([
      'anthropic',
      'finished',
      expect.any(Number),
      expect.any(Number),
      undefined,
    ]);
  });

  it('an error event ends failed, with its kind', async () => {
    const { sideCalls, turnEnded } = createSideCalls([
      { type: 'error', error: createTurnError('overloaded', 'busy') },
    ]);
    const events = await collect(await sideCalls.handle(sideCall(), never));
    expect(events.at(-1)).toMatchObject({ type: 'error', error: { kind: 'overloaded' } });
    await vi.waitFor(() => expect(turnEnded).toHaveBeenCalledTimes(1));
    expect(turnEnded.mock.calls[0]?.slice(0, 2)).toEqual(['anthropic', 'failed']);
    expect(turnEnded.mock.calls[0]?.[4]).toBe('overloaded');
  });

  it('a run that throws is logged and answered with an error event; it ends failed, with its kind', async () => {
    const { lines, logger } = captureLog('warn');
    const workspace: WorkspacePort = {
      prepare: async () => ({ workspaceDir: '/unused', grounding: { head: '', tail: '' } }),
      remove: async () => undefined,
      scratch: async () => {
        throw new BridgeError(createTurnError('api', 'no scratch directory'));
      },
    };
    const { sideCalls, turnEnded } = createSideCalls(found, { workspace, logger });
    const events = await collect(await sideCalls.handle(sideCall(), never));
    expect(events).toEqual([{ type: 'error', error: expect.objectContaining({ kind: 'api' }) }]);
    await vi.waitFor(() => expect(turnEnded).toHaveBeenCalledTimes(1));
    expect(lines.map((line) => line['msg'])).toEqual(['web search call failed']);
    expect(lines[0]).toMatchObject({ model: 'composer-2' });
    expect(turnEnded.mock.calls[0]?.slice(0, 2)).toEqual(['anthropic', 'failed']);
    expect(turnEnded.mock.calls[0]?.[4]).toBe('api');
    expect(sideCalls.inFlight).toBe(0);
  });

  it('a run its client left ends cancelled, with no error kind', async () => {
    const gate = createGate();
    const { sideCalls, upstream, turnEnded } = createSideCalls([
      { type: 'wait', until: gate.opened },
      ...found,
    ]);
    const abort = new AbortController();
    const events = await sideCalls.handle(sideCall(), abort.signal);
    const read = collect(events);
    await vi.waitFor(() => expect(upstream.calls).toHaveLength(1));
    abort.abort();
    await read;
    await vi.waitFor(() => expect(turnEnded).toHaveBeenCalledTimes(1));
    expect(upstream.calls[0]?.cancelled).toBe(true);
    expect(turnEnded.mock.calls[0]?.slice(0, 2)).toEqual(['anthropic', 'cancelled']);
    expect(turnEnded.mock.calls[0]?.[4]).toBeUndefined();
    await vi.waitFor(() => expect(sideCalls.inFlight).toBe(0));
  });
});

describe("the side calls' totals", () => {
  it('sum what finished runs used, and are handed out as a copy', async () => {
    const { sideCalls } = createSideCalls(found);
    expect(sideCalls.totals()).toMatchObject({ runs: 0 });
    await collect(await sideCalls.handle(sideCall('first'), never));
    await collect(await sideCalls.handle(sideCall('second'), never));
    await vi.waitFor(() => expect(sideCalls.totals().runs).toBe(2));
    const totals = sideCalls.totals();
    expect(totals).toMatchObject({ usage: { inputTokens: 20, outputTokens: 10 }, unpricedRuns: 2 });
    totals.runs = 99;
    expect(sideCalls.totals().runs).toBe(2);
  });

  it('a run that did not finish adds nothing', async () => {
    const { sideCalls, turnEnded } = createSideCalls([
      { type: 'error', error: createTurnError('api', 'down') },
    ]);
    await collect(await sideCalls.handle(sideCall(), never));
    await vi.waitFor(() => expect(turnEnded).toHaveBeenCalledTimes(1));
    expect(sideCalls.totals()).toMatchObject({ runs: 0, unpricedRuns: 0 });
  });
});

describe("a side call's coalescing key", () => {
  it('is the same for the same request, and differs by query, search rules and model', async () => {
    const { sideCalls, replayKeys } = createSideCalls(found);
    const keyOf = async (sent: SideRequest): Promise<string> => {
      await collect(await sideCalls.handle(sent, never));
      return replayKeys.at(-1) ?? '';
    };
    const first = await keyOf(sideCall('node 22'));
    expect(first.startsWith('web-search\0')).toBe(true);
    expect(await keyOf(sideCall('node 22'))).toBe(first);
    expect(await keyOf(sideCall('node 24'))).not.toBe(first);
    expect(await keyOf(sideCall('node 22', { allowedDomains: ['nodejs.org'] }))).not.toBe(first);
    expect(await keyOf({ ...sideCall('node 22'), model: 'other-model' })).not.toBe(first);
  });
});
