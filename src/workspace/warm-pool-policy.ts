/**
 * What the pre-warmed workspace pool decides, as plain functions of its entries, the keys new
 * conversations wanted, the clock and its cap; the pool (`warm-workspace-pool.ts`) applies them.
 *
 * - Matching: an entry serves only a conversation whose files render to the byte-identical key, the oldest
 *   such entry first; otherwise the conversation may wait for the warm-up under way for its key if no
 *   other conversation already does. Anything else is a miss.
 * - Demand: a key is active while a new conversation wanted it within `idleTtlMs`. An active key demands one
 *   entry plus one per miss it had within `demandWindowMs` while already active (its first conversation is
 *   its activation, not a miss), at most `size`.
 * - Sizing: `size` is a cap shared by the active keys. Only the `size` most recently wanted are served;
 *   when their demands add up to more than `size`, a key demanding less than an even share keeps its
 *   demand, the others split the rest evenly, and the remainder goes to the most recently wanted.
 *   Entries above their key's target (inactive keys: 0) are released, the oldest first; the next warm-up
 *   is for the most recently wanted key below its target.
 * - Expiry: an entry is released `idleTtlMs` after it was warmed; an inactive key and a miss older than
 *   the demand window are forgotten. At most {@link maxWantedKeys} keys are remembered.
 * - When: no warm-up while a turn is in flight, before `quietMs` has passed since the last new
 *   conversation, or during a failure back-off; none while the entries and the executors live sessions
 *   hold reach `executorLimit`. With nothing to warm, the next look is due when an entry expires, a key
 *   goes inactive or a miss leaves the demand window.
 */

/** The pool's cap and windows. */
export type WarmPoolLimits = {
  /** The most entries kept, over all keys. */
  size: number;
  /** How long an entry lives after it was warmed, and a key stays active after it was wanted. */
  idleTtlMs: number;
  /** How long a miss counts towards its key's demand. */
  demandWindowMs: number;
};

/** When a new conversation last wanted a key, and when it missed while active (oldest first). */
export type KeyDemand = { lastWantedAt: number; misses: readonly number[] };

/** A ready entry: the key it was warmed for and when it became ready. */
export type ReadyEntry = { renderKey: string; readyAt: number };

/** A warm-up under way: its key, and whether a conversation already waits for its entry. */
export type WarmUpUnderWay = { renderKey: string; claimed: boolean };

/** Distinct keys whose demand is remembered (one per host environment; the least recently wanted forgotten first). */
export const maxWantedKeys = 256;

/** The index of the oldest ready entry for exactly `renderKey`, or -1. */
export const readyEntryIndex = (entries: readonly ReadyEntry[], renderKey: string): number =>
  entries.findIndex((entry) => entry.renderKey === renderKey);

/** Whether a conversation of `renderKey` that found no ready entry waits for the warm-up under way. */
export const joinsWarmUp = (warmUp: WarmUpUnderWay | undefined, renderKey: string): boolean =>
  warmUp !== undefined && warmUp.renderKey === renderKey && !warmUp.claimed;

/**
 * A key's demand after a new conversation wanted it at `now`: wanted now, and one more miss if it was
 * active (`previous` defined) and the conversation got nothing (`hit` false). The misses kept are at most
 * `size`, since the demand is capped there anyway.
 */
export const demandAfterClaim = (
  previous: KeyDemand | undefined,
  hit: boolean,
  now: number,
  size: number,
): KeyDemand => {
  const misses = previous?.misses ?? [];
  if (hit || previous === undefined) return { lastWantedAt: now, misses };
  const counted = [...misses, now];
  return { lastWantedAt: now, misses: counted.length > size ? counted.slice(1) : counted };
};

/**
 * The remembered keys after `renderKey` was wanted: it moves to the end (most recently wanted), and the
 * least recently wanted key is forgotten beyond {@link maxWantedKeys}.
 */
export const rememberWanted = <Demand>(
  wanted: ReadonlyMap<string, Demand>,
  renderKey: string,
  demand: Demand,
): Map<string, Demand> => {
  const next = new Map(wanted);
  next.delete(renderKey);
  next.set(renderKey, demand);
  if (next.size > maxWantedKeys) next.delete(next.keys().next().value as string);
  return next;
};

/** Whether an entry is due for release: warmed `idleTtlMs` ago or longer. */
export const isEntryExpired = (entry: ReadyEntry, now: number, limits: WarmPoolLimits): boolean =>
  now - entry.readyAt >= limits.idleTtlMs;

/** Whether a key is active: a new conversation wanted it less than `idleTtlMs` ago. */
export const isKeyActive = (demand: KeyDemand, now: number, limits: WarmPoolLimits): boolean =>
  now - demand.lastWantedAt < limits.idleTtlMs;

/** The remembered keys without the inactive ones, each keeping only its misses within the demand window. */
export const forgetInactive = <Demand extends KeyDemand>(
  wanted: ReadonlyMap<string, Demand>,
  now: number,
  limits: WarmPoolLimits,
): Map<string, Demand> => {
  const kept = new Map<string, Demand>();
  for (const [renderKey, demand] of wanted) {
    if (!isKeyActive(demand, now, limits)) continue;
    const misses = demand.misses.filter((missedAt) => now - missedAt < limits.demandWindowMs);
    kept.set(renderKey, { ...demand, misses });
  }
  return kept;
};

/** A key's demand: one entry, plus one per miss it remembers, up to `size`. */
export const demandOf = (demand: KeyDemand, size: number): number => Math.min(size, 1 + demand.misses.length);

/**
 * Each active key's target, most recently wanted first (`wanted`: least recently wanted first). Only the
 * `size` most recently wanted active keys get one; their demands share `size` max-min fairly.
 */
export const targets = (
  wanted: ReadonlyMap<string, KeyDemand>,
  now: number,
  limits: WarmPoolLimits,
): Map<string, number> => {
  const active = [...wanted]
    .filter(([, demand]) => isKeyActive(demand, now, limits))
    .reverse()
    .slice(0, limits.size);
  // Smallest demand first; among equal demands the most recently wanted last, so it gets the remainder.
  const byDemand = active
    .map(([renderKey, demand], rank) => ({ renderKey, rank, demand: demandOf(demand, limits.size) }))
    .sort((left, right) => left.demand - right.demand || right.rank - left.rank);
  const shares = new Map<string, number>();
  let remaining = limits.size;
  byDemand.forEach(({ renderKey, demand }, index) => {
    const share = Math.min(demand, Math.floor(remaining / (byDemand.length - index)));
    shares.set(renderKey, share);
    remaining -= share;
  });
  return new Map(active.map(([renderKey]) => [renderKey, shares.get(renderKey) ?? 0]));
};

/**
 * The entries to release (`entries` oldest first): for every key, its oldest entries beyond its target;
 * every entry of a key without a target.
 */
export const surplusEntries = <Entry extends ReadyEntry>(
  entries: readonly Entry[],
  keyTargets: ReadonlyMap<string, number>,
): Entry[] => {
  const kept = new Map<string, number>();
  const surplus: Entry[] = [];
  // Newest first, so that a key's oldest entries are the ones over its target.
  for (const entry of [...entries].reverse()) {
    const count = kept.get(entry.renderKey) ?? 0;
    if (count < (keyTargets.get(entry.renderKey) ?? 0)) kept.set(entry.renderKey, count + 1);
    else surplus.push(entry);
  }
  return surplus;
};

/**
 * The key to warm an entry for next: the first of `keyTargets` (most recently wanted first) holding fewer
 * entries than its target, or undefined. With the surplus released, the targets adding up to at most
 * `size` leave room for it.
 */
export const nextKeyToWarm = (
  entries: readonly ReadyEntry[],
  keyTargets: ReadonlyMap<string, number>,
): string | undefined => {
  const counts = new Map<string, number>();
  for (const entry of entries) counts.set(entry.renderKey, (counts.get(entry.renderKey) ?? 0) + 1);
  for (const [renderKey, target] of keyTargets) if ((counts.get(renderKey) ?? 0) < target) return renderKey;
  return undefined;
};

/** Whether turns in flight hold warm-ups back: any turn does. */
export const turnsHoldWarmUps = (turnsInFlight: number): boolean => turnsInFlight > 0;

/**
 * How long to wait before a warm-up may start: until `quietMs` after the last new conversation and the
 * end of a failure back-off; 0 or less: it may start now.
 */
export const waitBeforeWarmUpMs = (timing: {
  now: number;
  lastDemandAt: number;
  quietMs: number;
  backoffUntil: number;
}): number => Math.max(timing.lastDemandAt + timing.quietMs, timing.backoffUntil) - timing.now;

/**
 * Whether the pool may warm one more executor: its ready entries plus the executors live sessions hold
 * stay below `executorLimit` (no limit: always).
 */
export const belowExecutorLimit = (
  readyEntries: number,
  executorsInUse: number,
  executorLimit: number | undefined,
): boolean => executorLimit === undefined || readyEntries + executorsInUse < executorLimit;

/**
 * With nothing to warm, how long until a target may change on its own: an entry expiring, a key going
 * inactive (which raises the others' shares) or a miss leaving the demand window (which lowers its key's
 * target). Undefined when nothing is held or remembered: only a new conversation or a released executor
 * can change anything then.
 */
export const nextChangeInMs = (
  entries: readonly ReadyEntry[],
  wanted: Iterable<KeyDemand>,
  now: number,
  limits: WarmPoolLimits,
): number | undefined => {
  const changes = [
    ...entries.map((entry) => entry.readyAt + limits.idleTtlMs),
    ...[...wanted].flatMap((demand) => [
      demand.lastWantedAt + limits.idleTtlMs,
      ...demand.misses.map((missedAt) => missedAt + limits.demandWindowMs),
    ]),
  ];
  return changes.length > 0 ? Math.max(0, Math.min(...changes) - now) : undefined;
};
