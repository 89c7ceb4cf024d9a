import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { emptyTotals, UsageAccounting } from '../../src/engine/usage-accounting.js';
import { BridgeMetrics } from '../../src/metrics/bridge-metrics.js';
import type { UpstreamBilledTurn, UpstreamSession } from '../../src/upstream/upstream-port.js';
import { captureLog } from '../helpers/capture-log.js';

const usage = (input: number, output: number) => ({
  inputTokens: input,
  outputTokens: output,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
});

/** An upstream session whose billing answers from `read` (called once per billing read). */
const billedSession = (
  read: (call: number) => UpstreamBilledTurn[] | Error,
): UpstreamSession & { reads: number } => {
  const session = {
    id: 'session',
    reads: 0,
    startRun: () => Promise.reject(new Error('not used')),
    dispose: () => Promise.resolve(),
    usage: async () => {
      session.reads += 1;
      const turns = read(session.reads);
      if (turns instanceof Error) throw turns;
      return { turns };
    },
  };
  return session;
};

const noPauses = [0, 0, 0, 0];

describe('UsageAccounting', () => {
  it("takes each run's new billing entries only, reading again while a cost is missing", async () => {
    const metrics = new BridgeMetrics();
    const accounting = new UsageAccounting({ metrics, logger: pino({ level: 'silent' }), readsMs: noPauses });
    const first = { id: 'turn-1', usage: usage(100, 10), cost: { rawCents: 1, chargedCents: 0.5 } };
    const second = { id: 'turn-2', usage: usage(300, 30) };
    const priced = { ...second, cost: { rawCents: 3, chargedCents: 2 } };
    const agent = billedSession((call) =>
      call <= 2 ? [first] : call === 3 ? [first, second] : [first, priced],
    );
    const totals = emptyTotals();

    expect(await accounting.account(agent, 'composer-2', usage(1, 1), totals)).toEqual({
      usage: first.usage,
      source: 'billing',
      cost: first.cost,
    });
    // Read 2 finds nothing new; read 3 has the run without a cost yet; read 4 has the cost.
    expect(await accounting.account(agent, 'composer-2', usage(1, 1), totals)).toEqual({
      usage: second.usage,
      source: 'billing',
      cost: priced.cost,
    });
    expect(agent.reads).toBe(4);
    expect(totals).toEqual({
      runs: 2,
      usage: usage(400, 40),
      cost: { rawCents: 4, chargedCents: 2.5 },
      unpricedRuns: 0,
    });
  });

  it("keeps the run's own usage when billing cannot be read, warning once", async () => {
    const { logger, lines } = captureLog();
    const accounting = new UsageAccounting({ metrics: new BridgeMetrics(), logger, readsMs: noPauses });
    const agent = billedSession(() => new Error('billing down'));
    const totals = emptyTotals();
    const streamed = usage(50, 5);
    expect(await accounting.account(agent, 'composer-2', streamed, totals)).toEqual({
      usage: streamed,
      source: 'stream',
    });
    await accounting.account(agent, 'composer-2', streamed, totals);
    expect(lines.filter((line) => line.level === 40)).toHaveLength(1);
    expect(totals).toMatchObject({ runs: 2, unpricedRuns: 2, usage: usage(100, 10) });
  });

  it('stops waiting for a cost at its last read, and counts the run unpriced', async () => {
    const metrics = new BridgeMetrics();
    const accounting = new UsageAccounting({ metrics, logger: pino({ level: 'silent' }), readsMs: noPauses });
    const agent = billedSession(() => [{ id: 'turn-1', usage: usage(10, 1) }]);
    const totals = emptyTotals();
    expect(await accounting.account(agent, 'composer-2', usage(1, 1), totals)).toEqual({
      usage: usage(10, 1),
      source: 'billing',
    });
    expect(agent.reads).toBe(noPauses.length);
    expect(totals.unpricedRuns).toBe(1);
    expect(await metrics.render()).toContain('cursor_bridge_unpriced_runs_total{model="composer-2"} 1');
  });

  it("reads one agent after another: a later run never takes an earlier run's entry", async () => {
    const accounting = new UsageAccounting({
      metrics: new BridgeMetrics(),
      logger: pino({ level: 'silent' }),
      readsMs: [0, 20, 20],
    });
    const entries: UpstreamBilledTurn[] = [];
    const agent = billedSession(() => [...entries]);
    const totals = emptyTotals();
    const first = accounting.account(agent, 'm', usage(1, 1), totals);
    const second = accounting.account(agent, 'm', usage(1, 1), totals);
    entries.push({ id: 'a', usage: usage(5, 5), cost: { rawCents: 1, chargedCents: 1 } });
    expect((await first).usage).toEqual(usage(5, 5));
    // The second run's entry never came: its own report stands.
    expect(await second).toEqual({ usage: usage(1, 1), source: 'stream' });
  });
});
