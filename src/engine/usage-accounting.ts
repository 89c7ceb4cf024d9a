/**
 * Each finished run's usage and cost, from Cursor's billing (`agent.getUsage()`), into the bridge's metrics
 * and the conversation's totals. Billing is eventually consistent: a run's entry, and then its cost, appear
 * some time after the run ended, so it is read again after growing pauses (a bounded wait, off every
 * client's path). Reads of one agent run one after another, so each run takes only the entries that are
 * new since the previous one.
 *
 * When billing cannot be read (no usage API, the backend refused) or shows no new entry in time, the run's
 * own reported usage stands, without a cost; an entry still without a cost when the wait ends is counted
 * without one (the SDK leaves `cost` out while the backend has not reported it).
 */

import type { Logger } from 'pino';
import type { BridgeMetrics } from '../metrics/bridge-metrics.js';
import type { TurnAccount, TurnCost } from '../turn/turn-account.js';
import { addUsage, emptyUsage, type TurnUsage } from '../turn/turn-usage.js';
import type { UpstreamBilledTurn, UpstreamSession } from '../upstream/upstream-port.js';
import { sleep } from '../../lib/sleep.js';

/** The pauses before each read of billing: the first read is at once. */
export const DEFAULT_BILLING_READS_MS: readonly number[] = [0, 250, 500, 1_000, 2_000];

/** A conversation's usage and cost so far, over every run it finished (every agent it had). */
export type ConversationTotals = {
  /** Runs accounted. */
  runs: number;
  usage: TurnUsage;
  /** The sum of the runs whose cost is known; {@link unpricedRuns} says how many are not in it. */
  cost: TurnCost;
  unpricedRuns: number;
};

export const emptyTotals = (): ConversationTotals => ({
  runs: 0,
  usage: emptyUsage(),
  cost: { rawCents: 0, chargedCents: 0 },
  unpricedRuns: 0,
});

const sumCosts = (turns: readonly UpstreamBilledTurn[]): TurnCost | undefined => {
  let rawCents = 0;
  let chargedCents = 0;
  for (const turn of turns) {
    if (turn.cost === undefined) return undefined;
    rawCents += turn.cost.rawCents;
    chargedCents += turn.cost.chargedCents;
  }
  return { rawCents, chargedCents };
};

export type UsageAccountingOptions = {
  metrics: BridgeMetrics;
  logger: Logger;
  /** Pauses before each billing read (see {@link DEFAULT_BILLING_READS_MS}). */
  readsMs?: readonly number[];
};

export class UsageAccounting {
  readonly #options: UsageAccountingOptions;
  readonly #readsMs: readonly number[];
  /** Billing entries already accounted, per agent. */
  readonly #seen = new WeakMap<UpstreamSession, Set<string>>();
  /** Each agent's latest accounting: the next one waits for it. */
  readonly #last = new WeakMap<UpstreamSession, Promise<unknown>>();
  /** Aborted at close: pending reads stop waiting and settle with what they have. */
  readonly #closing = new AbortController();
  #billingWarned = false;

  constructor(options: UsageAccountingOptions) {
    this.#options = options;
    this.#readsMs = options.readsMs ?? DEFAULT_BILLING_READS_MS;
  }

  /**
   * Account the run `agent` just finished on `model` (it reported `streamed`): into the metrics and
   * `totals`. Resolves with the account once billing answered or the wait ended; never rejects.
   */
  account(
    agent: UpstreamSession,
    model: string,
    streamed: TurnUsage,
    totals: ConversationTotals,
  ): Promise<TurnAccount> {
    const previous = this.#last.get(agent) ?? Promise.resolve();
    const accounted = previous
      .then(() => this.#read(agent, streamed))
      .then((account) => {
        this.#record(model, account, totals);
        return account;
      });
    this.#last.set(agent, accounted);
    return accounted;
  }

  /** Stop waiting: accountings in progress settle with what billing said so far. */
  close(): void {
    this.#closing.abort();
  }

  async #read(agent: UpstreamSession, streamed: TurnUsage): Promise<TurnAccount> {
    const streamedAccount: TurnAccount = { usage: streamed, source: 'stream' };
    if (agent.usage === undefined) return streamedAccount;
    const seen = this.#seen.get(agent) ?? new Set<string>();
    this.#seen.set(agent, seen);
    let fresh: UpstreamBilledTurn[] = [];
    for (const [index, pause] of this.#readsMs.entries()) {
      if (pause > 0) await sleep(pause, { signal: this.#closing.signal, unref: true });
      // Closing: one read at most, none waited for.
      if (index > 0 && this.#closing.signal.aborted) break;
      try {
        fresh = (await agent.usage()).turns.filter((turn) => !seen.has(turn.id));
      } catch (error) {
        // Once at `warn` (a backend without the billing API would say so on every run), then `debug`.
        const level = this.#billingWarned ? 'debug' : 'warn';
        this.#billingWarned = true;
        this.#options.logger[level](
          { err: error },
          "Cursor's billing could not be read; the run's own usage is counted, without a cost",
        );
        return streamedAccount;
      }
      if (fresh.length > 0 && sumCosts(fresh) !== undefined) break;
    }
    if (fresh.length === 0) return streamedAccount;
    for (const turn of fresh) seen.add(turn.id);
    const usage = fresh.reduce((total, turn) => addUsage(total, turn.usage), emptyUsage());
    const cost = sumCosts(fresh);
    return { usage, source: 'billing', ...(cost === undefined ? {} : { cost }) };
  }

  #record(model: string, account: TurnAccount, totals: ConversationTotals): void {
    this.#options.metrics.runAccounted(model, account.usage, account.cost);
    totals.runs += 1;
    totals.usage = addUsage(totals.usage, account.usage);
    if (account.cost === undefined) totals.unpricedRuns += 1;
    else {
      totals.cost.rawCents += account.cost.rawCents;
      totals.cost.chargedCents += account.cost.chargedCents;
    }
  }
}
