import { describe, expect, it } from 'vitest';
import {
  belowExecutorLimit,
  demandAfterClaim,
  demandOf,
  forgetInactive,
  isEntryExpired,
  isKeyActive,
  joinsWarmUp,
  maxWantedKeys,
  nextChangeInMs,
  nextKeyToWarm,
  readyEntryIndex,
  rememberWanted,
  surplusEntries,
  targets,
  turnsHoldWarmUps,
  waitBeforeWarmUpMs,
  type KeyDemand,
  type ReadyEntry,
  type WarmPoolLimits,
} from '../../src/workspace/warm-pool-policy.js';

const minute = 60_000;
const now = 100 * minute;
const limits: WarmPoolLimits = { size: 4, idleTtlMs: 10 * minute, demandWindowMs: 5 * minute };
const withSize = (size: number): WarmPoolLimits => ({ ...limits, size });

/** `'a3 b0'` → `[['a', 3], ['b', 0]]`: one-letter keys, each with a count, in that order. */
const counts = (text: string): [string, number][] =>
  text
    .split(' ')
    .filter((item) => item !== '')
    .map((item) => [item.slice(0, 1), Number(item.slice(1))]);

/**
 * `'~a3 b0'`: keys least recently wanted first, as the pool remembers them, each with its misses; each
 * wanted a moment after the one before it, `~` one TTL ago (inactive).
 */
const wantedKeys = (text: string): Map<string, KeyDemand> =>
  new Map(
    text.split(' ').map((item, index, all) => {
      const [[renderKey, misses]] = counts(item.replace('~', '')) as [[string, number]];
      const lastWantedAt = item.startsWith('~') ? now - limits.idleTtlMs : now - (all.length - index);
      return [renderKey, { lastWantedAt, misses: Array.from({ length: misses }, () => lastWantedAt) }];
    }),
  );

/** `'a1 b1 a2'`: ready entries oldest first, each named by its key and an ordinal. */
const readyEntries = (text: string): (ReadyEntry & { name: string })[] =>
  text
    .split(' ')
    .filter((name) => name !== '')
    .map((name, index) => ({ name, renderKey: name.slice(0, 1), readyAt: now - minute + index }));

describe('warm pool policy', () => {
  describe('matching: only the byte-identical key, the oldest entry first', () => {
    it.each([
      ['the only entry of the key', 'a1', 'a', 0],
      ['the oldest of the key, past another key', 'b1 a1 a2', 'a', 1],
      ['no entry of the key', 'b1 b2', 'a', -1],
      ['no entry at all', '', 'a', -1],
    ])('%s', (_label, names, renderKey, expected) => {
      expect(readyEntryIndex(readyEntries(names), renderKey)).toBe(expected);
    });

    it.each([
      ['another case', 'agents', 'AGENTS'],
      ['a trailing newline', 'agents', 'agents\n'],
      ['another Unicode normalisation', 'caf\u00e9', 'cafe\u0301'],
      ['a prefix', 'agents', 'agent'],
    ])('a key differing only by %s is a miss', (_label, entryKey, renderKey) => {
      expect(readyEntryIndex([{ renderKey: entryKey, readyAt: now }], renderKey)).toBe(-1);
    });

    it.each([
      ['no warm-up under way', undefined, false],
      ['a warm-up for another key', { renderKey: 'b', claimed: false }, false],
      ['a warm-up for its key nobody waits for', { renderKey: 'a', claimed: false }, true],
      ['a warm-up for its key another conversation waits for', { renderKey: 'a', claimed: true }, false],
    ])('a conversation with no ready entry and %s: joins %s', (_label, warmUp, expected) => {
      expect(joinsWarmUp(warmUp, 'a')).toBe(expected);
    });
  });

  describe('demand: one entry plus one per miss while active, at most the cap', () => {
    const active = (misses: number[]): KeyDemand => ({ lastWantedAt: now - minute, misses });
    it.each([
      ["a key's first conversation (a miss) is its activation, not a counted miss", undefined, false, 4, []],
      ["a key's first conversation that joined a warm-up", undefined, true, 4, []],
      ['a hit keeps the misses', active([1, 2]), true, 4, [1, 2]],
      ['a miss of an active key counts', active([1]), false, 4, [1, now]],
      ['a miss beyond the cap drops the oldest', active([1, 2, 3, 4]), false, 4, [2, 3, 4, now]],
      ['with a cap of 1, only the last miss', active([1]), false, 1, [now]],
    ])('%s', (_label, previous, hit, size, misses) => {
      expect(demandAfterClaim(previous, hit, now, size)).toEqual({ lastWantedAt: now, misses });
    });

    it.each([
      [0, 4, 1],
      [2, 4, 3],
      [3, 4, 4],
      [9, 4, 4],
      [5, 2, 2],
    ])('%i misses with a cap of %i: demand %i', (misses, size, expected) => {
      expect(demandOf({ lastWantedAt: now, misses: Array.from({ length: misses }, () => now) }, size)).toBe(
        expected,
      );
    });
  });

  describe('remembering keys: the wanted key moves last, the least recently wanted is forgotten beyond the limit', () => {
    const keys = (count: number) => Array.from({ length: count }, (_, index) => `k${index}`);
    const full = keys(maxWantedKeys);
    it.each([
      ['a new key goes last', ['a'], 'b', ['a', 'b']],
      ['a known key moves last', ['a', 'b'], 'a', ['b', 'a']],
      ['a new key over the limit forgets the least recently wanted', full, 'new', [...full.slice(1), 'new']],
      ['a known key at the limit forgets none', full, 'k0', [...full.slice(1), 'k0']],
    ])('%s', (_label, known, renderKey, order) => {
      const wanted = new Map(known.map((key) => [key, 0]));
      const next = rememberWanted(wanted, renderKey, 99);
      expect([...next.keys()]).toEqual(order);
      expect(next.get(renderKey)).toBe(99);
      expect(wanted.get(renderKey)).not.toBe(99); // the input is left as it was
    });
  });

  describe('expiry: entries live one TTL, keys stay active one TTL, misses count one demand window', () => {
    it.each([
      [0, false],
      [limits.idleTtlMs - 1, false],
      [limits.idleTtlMs, true],
      [limits.idleTtlMs + 1, true],
    ])('an entry warmed %i ms ago expired: %s', (age, expected) => {
      expect(isEntryExpired({ renderKey: 'a', readyAt: now - age }, now, limits)).toBe(expected);
    });

    it.each([
      [0, true],
      [limits.idleTtlMs - 1, true],
      [limits.idleTtlMs, false],
    ])('a key wanted %i ms ago is active: %s', (ago, expected) => {
      expect(isKeyActive({ lastWantedAt: now - ago, misses: [] }, now, limits)).toBe(expected);
    });

    // When the key was wanted, when it missed, and the misses it keeps (undefined: the key is forgotten).
    const { idleTtlMs: ttl, demandWindowMs: demandWindow } = limits;
    it.each<[string, number, number[], number[] | undefined]>([
      ['an active key keeps its misses within the window', minute, [demandWindow - 1], [demandWindow - 1]],
      ['a miss one window old is forgotten', minute, [demandWindow, minute], [minute]],
      ['an inactive key is forgotten', ttl, [], undefined],
    ])('%s', (_label, wantedAgo, missesAgo, keptAgo) => {
      const key = (ago: number[]) => ({
        facts: 'alpha',
        lastWantedAt: now - wantedAgo,
        misses: ago.map((missed) => now - missed),
      });
      const other = { facts: 'beta', lastWantedAt: now, misses: [] };
      const after = forgetInactive(new Map(Object.entries({ a: key(missesAgo), b: other })), now, limits);
      const kept = keptAgo === undefined ? { b: other } : { a: key(keptAgo), b: other };
      expect([...after]).toEqual(Object.entries(kept)); // in order, with the host facts
    });
  });

  describe('sizing: the cap shared max-min fairly, most recently wanted first', () => {
    // Keys least recently wanted first, with their misses; targets most recently wanted first.
    it.each([
      ['a first conversation targets one entry, not the cap', 4, 'a0', 'a1'],
      ['each miss raises the target by one', 4, 'a2', 'a3'],
      ['the target stops at the cap', 4, 'a9', 'a4'],
      ['keys under an even share keep their demand', 4, 'a0 b0', 'b1 a1'],
      ['less than an even share keeps its demand, the other gets the rest', 4, 'a3 b0', 'b1 a3'],
      ['equal demands above the share split evenly', 4, 'a3 b3', 'b2 a2'],
      ['the remainder goes to the most recently wanted', 4, 'a3 b3 c3', 'c2 b1 a1'],
      ['a remainder of two goes to the two most recently wanted', 5, 'a4 b4 c4', 'c2 b2 a1'],
      [
        'the smallest demand is met first, the next gets no more than an even share of the rest',
        6,
        'a5 b0 c5 d1',
        'd1 c2 b1 a2',
      ],
      ['with more active keys than the cap, only the cap most recently wanted', 2, 'a0 b0 c0', 'c1 b1'],
      ['an inactive key targets nothing and leaves its share to the others', 4, '~a3 b3', 'b4'],
      ['a cap of 0 targets nothing', 0, 'a0', ''],
    ])('%s (cap %i: %s → %s)', (_label, size, wanted, expected) => {
      expect([...targets(wantedKeys(wanted), now, withSize(size))]).toEqual(counts(expected));
    });

    // Entries oldest first; targets per key; the entries released.
    it.each([
      ['entries within their target are kept', 'a1 b1', 'a1 b1', ''],
      ["a key's oldest entries above its target are released", 'a1 b1 a2 a3', 'a1 b1', 'a1 a2'],
      ['every entry of a key without a target is released', 'a1 b1 a2', 'b1', 'a1 a2'],
      ['a target of 0 releases every entry of its key', 'a1', 'a0', 'a1'],
    ])('%s (%s, targets %s → release %s)', (_label, entries, keyTargets, released) => {
      const surplus = surplusEntries(readyEntries(entries), new Map(counts(keyTargets)));
      expect(surplus.map((entry) => entry.name).sort()).toEqual(
        readyEntries(released).map(({ name }) => name),
      );
    });

    // Entries oldest first; targets most recently wanted first; the key warmed next.
    it.each([
      ['the most recently wanted key below its target', '', 'b1 a1', 'b'],
      ['the next key when the first is at its target', 'b1', 'b1 a2', 'a'],
      ['a key below its target after others at theirs', 'b1 a1', 'b1 a2', 'a'],
      ['nothing when every key is at its target', 'b1 a1', 'b1 a1', undefined],
      ['nothing for a key with a target of 0', '', 'a0', undefined],
      ['nothing without active keys', 'a1', '', undefined],
    ])('warms next: %s (%s, targets %s → %s)', (_label, entries, keyTargets, expected) => {
      expect(nextKeyToWarm(readyEntries(entries), new Map(counts(keyTargets)))).toBe(expected);
    });
  });

  describe('when: between turns, after a quiet period and the back-off, below the executor limit', () => {
    it.each([
      [0, false],
      [1, true],
      [3, true],
    ])('%i turns in flight hold warm-ups back: %s', (turns, expected) => {
      expect(turnsHoldWarmUps(turns)).toBe(expected);
    });

    it.each([
      ['a new conversation just now: the quiet period', 0, 0, 50],
      ['quiet for part of the period', 30, 0, 20],
      ['quiet long enough', 50, 0, 0],
      ['quiet long enough, but backing off', 1_000, now + 500, 500],
      ['a back-off already over', 1_000, now - 1, -1],
    ])('%s', (_label, quietFor, backoffUntil, expected) => {
      expect(waitBeforeWarmUpMs({ now, lastDemandAt: now - quietFor, quietMs: 50, backoffUntil })).toBe(
        expected,
      );
    });

    it.each([
      [3, 10, undefined, true],
      [0, 3, 4, true],
      [1, 3, 4, false],
      [4, 0, 4, false],
      [0, 5, 4, false],
    ])('%i entries and %i executors in use, limit %s: may warm %s', (entries, inUse, limit, expected) => {
      expect(belowExecutorLimit(entries, inUse, limit)).toBe(expected);
    });

    it.each([
      ['nothing held or remembered: only a claim changes anything', [], [], undefined],
      ['an entry expiring', [now - minute], [], limits.idleTtlMs - minute],
      [
        'a key going inactive',
        [],
        [{ lastWantedAt: now - 2 * minute, misses: [] }],
        limits.idleTtlMs - 2 * minute,
      ],
      [
        'a miss leaving the demand window, the soonest change',
        [now - minute],
        [{ lastWantedAt: now, misses: [now - 4 * minute] }],
        limits.demandWindowMs - 4 * minute,
      ],
      ['a change already due: look now', [now - limits.idleTtlMs - 1], [], 0],
    ])('next look with nothing to warm: %s', (_label, readyAt, wanted, expected) => {
      const entries = readyAt.map((at) => ({ renderKey: 'a', readyAt: at }));
      expect(nextChangeInMs(entries, wanted, now, limits)).toBe(expected);
    });
  });
});
