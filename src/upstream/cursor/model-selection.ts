/**
 * Maps a request's reasoning onto a Cursor model selection, and caches the model catalog. Pure: the
 * catalog types below mirror `@cursor/sdk`'s `ModelListItem` / `ModelSelection` structurally (the SDK's
 * values are assignable to them), so this module needs no SDK import.
 *
 * For parameterized models the selection is always a full catalog preset variant, with the smallest
 * context window and never fast mode:
 * - no reasoning requested: each parameter's first allowed value (what Cursor runs for an omitted
 *   parameter, and the least reasoning the model offers: Claude thinking=false, GPT reasoning=none,
 *   Grok 4.7 256k / low / fast=false);
 * - reasoning with an effort: thinking=true where the model has it, and the nearest allowed effort
 *   level on none < minimal < low < medium < high < xhigh (= extra-high) < max; on a tie the lower
 *   level wins, and `none` is never chosen for a reasoning request when the model offers another level;
 * - reasoning without an effort (Anthropic adaptive thinking, a Chat or Responses `reasoning` object
 *   without an effort such as Codex's `{summary: "auto"}`): thinking=true and the catalog default
 *   variant's effort (Grok 4.7: 256k / high / fast=false); with no default variant, the level nearest
 *   `high` (Anthropic's own default effort).
 *
 * Parameters are recognised by id/displayName and values, since Cursor's ids are not documented:
 * effort = a parameter named like effort/reasoning/thinking whose values are all effort levels;
 * thinking = a true/false parameter named like thinking/reasoning; fast = a true/false parameter named
 * like fast; context = named like context, or all values are sizes (`200k`, `1m`). Any other parameter
 * gets its first allowed value.
 *
 * When the model lists variants, the returned params are exactly one variant's params. The variant is
 * the one closest to the wanted values, compared in this order: fewest fast=true, thinking as wanted,
 * smallest effort distance, then the lower effort, smallest context, fewest other differences, then
 * catalog order. A variant that omits a parameter counts as that parameter's first allowed value.
 */
import { findCatalogEntry } from '../../config/find-catalog-entry.js';
import type { TurnReasoningEffort } from '../../turn/turn-request.js';

export type CatalogParameterValue = { id: string; value: string };
export type CatalogParameter = {
  id: string;
  displayName?: string;
  values: ReadonlyArray<{ value: string; displayName?: string }>;
};
export type CatalogVariant = {
  params: readonly CatalogParameterValue[];
  displayName: string;
  description?: string;
  isDefault?: boolean;
};
/** Structurally `@cursor/sdk`'s `ModelListItem`. */
export type CatalogModel = {
  id: string;
  displayName: string;
  description?: string;
  aliases?: readonly string[];
  parameters?: readonly CatalogParameter[];
  variants?: readonly CatalogVariant[];
};
/** Structurally `@cursor/sdk`'s `ModelSelection`. */
export type CatalogModelSelection = { id: string; params?: CatalogParameterValue[] };

export type ReasoningRequest = { requested: boolean; effort?: TurnReasoningEffort };

export type SelectModelResult =
  { ok: true; selection: CatalogModelSelection; warnings: string[] } | { ok: false; error: string };

type Role = 'thinking' | 'effort' | 'context' | 'fast' | 'other';
type Plan = { id: string; role: Role; values: string[]; wanted: string };

const effortRanks: Readonly<Record<string, number>> = {
  none: 0,
  minimal: 1,
  low: 2,
  medium: 3,
  high: 4,
  xhigh: 5,
  extrahigh: 5,
  max: 6,
};
const effortRank = (value: string): number | undefined =>
  effortRanks[value.toLowerCase().replace(/[-_\s]/g, '')];
const parseFlag = (value: string): boolean | undefined =>
  ({ true: true, on: true, enabled: true, false: false, off: false, disabled: false })[value.toLowerCase()];
const parseContextSize = (value: string): number | undefined => {
  const match = /^(\d+(?:\.\d+)?)\s*([km]?)$/i.exec(value.trim());
  if (match === null) return undefined;
  const unit = match[2]?.toLowerCase();
  return Number(match[1]) * (unit === 'm' ? 1_000_000 : unit === 'k' ? 1_000 : 1);
};

/** Chooses the selection for `modelId` (aliases resolved to the canonical id); see the module comment for the rules. */
export const selectModel = (
  catalog: readonly CatalogModel[],
  modelId: string,
  reasoning: ReasoningRequest,
): SelectModelResult => {
  const model = findCatalogEntry(catalog, modelId);
  if (model === undefined) {
    const available = catalog.map((entry) => entry.id).join(', ') || '(none)';
    return { ok: false, error: `Unknown Cursor model "${modelId}". Available models: ${available}.` };
  }
  const warnings: string[] = [];
  const plans = planParameters(model, reasoning, warnings);
  if (plans.length === 0) return { ok: true, selection: { id: model.id }, warnings };
  const variants = model.variants ?? [];
  if (variants.length === 0) {
    return {
      ok: true,
      selection: { id: model.id, params: plans.map(({ id, wanted }) => ({ id, value: wanted })) },
      warnings,
    };
  }
  const scored = variants.map((variant) => ({ variant, score: scoreVariant(variant, plans) }));
  const best = scored.reduce((winner, candidate) =>
    compareScores(candidate.score, winner.score) < 0 ? candidate : winner,
  );
  if (plans.some((plan) => valueIn(best.variant, plan) !== plan.wanted)) {
    const wanted = plans.map((plan) => `${plan.id}=${plan.wanted}`).join(', ');
    warnings.push(
      `${model.id} has no variant with ${wanted}; using the closest, "${best.variant.displayName}"`,
    );
  }
  return {
    ok: true,
    selection: { id: model.id, params: best.variant.params.map(({ id, value }) => ({ id, value })) },
    warnings,
  };
};

const collectParameters = (
  model: CatalogModel,
): Array<{ id: string; displayName: string; values: string[] }> => {
  if (model.parameters !== undefined && model.parameters.length > 0) {
    return model.parameters.map((parameter) => ({
      id: parameter.id,
      displayName: parameter.displayName ?? '',
      values: parameter.values.map(({ value }) => value),
    }));
  }
  const byId = new Map<string, string[]>();
  for (const { id, value } of (model.variants ?? []).flatMap((variant) => variant.params)) {
    const values = byId.get(id) ?? [];
    if (!values.includes(value)) values.push(value);
    byId.set(id, values);
  }
  return [...byId].map(([id, values]) => ({ id, displayName: '', values }));
};

const classify = (name: string, values: string[]): Role => {
  const flags = values.every((value) => parseFlag(value) !== undefined);
  if (flags && /fast/i.test(name)) return 'fast';
  if (flags && /think|reason/i.test(name)) return 'thinking';
  if (/effort|reason|think/i.test(name) && values.every((value) => effortRank(value) !== undefined))
    return 'effort';
  if (/context/i.test(name) || values.every((value) => parseContextSize(value) !== undefined))
    return 'context';
  return 'other';
};

const planParameters = (model: CatalogModel, reasoning: ReasoningRequest, warnings: string[]): Plan[] =>
  collectParameters(model).flatMap(({ id, displayName, values }) => {
    const first = values[0];
    if (first === undefined) return [];
    const role = classify(`${id} ${displayName}`, values);
    return [{ id, role, values, wanted: wantedValue(model, role, id, values, reasoning, warnings) ?? first }];
  });

const wantedValue = (
  model: CatalogModel,
  role: Role,
  id: string,
  values: string[],
  reasoning: ReasoningRequest,
  warnings: string[],
): string | undefined => {
  switch (role) {
    case 'fast':
      return values.find((value) => parseFlag(value) === false);
    case 'context':
      return values.reduce((smallest, value) =>
        (parseContextSize(value) ?? Infinity) < (parseContextSize(smallest) ?? Infinity) ? value : smallest,
      );
    case 'thinking':
      return reasoning.requested ? values.find((value) => parseFlag(value) === true) : values[0];
    case 'effort': {
      if (!reasoning.requested) return values[0];
      const candidates = values.some((value) => effortRank(value) !== 0)
        ? values.filter((value) => effortRank(value) !== 0)
        : values;
      const defaultEffort = model.variants
        ?.find((variant) => variant.isDefault)
        ?.params.find((param) => param.id === id);
      if (reasoning.effort === undefined && defaultEffort !== undefined) return defaultEffort.value;
      const target = effortRank(reasoning.effort ?? 'high') ?? 4;
      const nearest = nearestEffort(candidates, target);
      if (reasoning.effort !== undefined && nearest !== undefined && effortRank(nearest) !== target) {
        warnings.push(`effort "${reasoning.effort}" is not offered by ${model.id}; using "${nearest}"`);
      }
      return nearest;
    }
    case 'other':
      return values[0];
    default: {
      const _exhaustive: never = role;
      return _exhaustive;
    }
  }
};

/** The value nearest `target` on the effort scale; on a tie the lower level wins. */
const nearestEffort = (values: string[], target: number): string | undefined =>
  values.reduce<string | undefined>((best, value) => {
    const rank = effortRank(value) ?? Infinity;
    if (best === undefined) return value;
    const bestRank = effortRank(best) ?? Infinity;
    const distance = Math.abs(rank - target);
    const bestDistance = Math.abs(bestRank - target);
    return distance < bestDistance || (distance === bestDistance && rank < bestRank) ? value : best;
  }, undefined);

const valueIn = (variant: CatalogVariant, plan: Plan): string =>
  variant.params.find((param) => param.id === plan.id)?.value ?? plan.values[0] ?? '';

/** [fast=true count, thinking mismatches, effort distance, effort rank, context size, other mismatches]. */
const scoreVariant = (variant: CatalogVariant, plans: Plan[]): number[] => {
  const score = [0, 0, 0, 0, 0, 0];
  const add = (index: number, amount: number): void => {
    score[index] = (score[index] ?? 0) + amount;
  };
  for (const plan of plans) {
    const value = valueIn(variant, plan);
    if (plan.role === 'fast') add(0, parseFlag(value) === true ? 1 : 0);
    else if (plan.role === 'thinking') add(1, value === plan.wanted ? 0 : 1);
    else if (plan.role === 'effort') {
      const rank = effortRank(value) ?? 100;
      add(2, Math.abs(rank - (effortRank(plan.wanted) ?? 0)));
      add(3, rank);
    } else if (plan.role === 'context') add(4, parseContextSize(value) ?? plan.values.indexOf(value));
    else add(5, value === plan.wanted ? 0 : 1);
  }
  return score;
};

const compareScores = (left: number[], right: number[]): number => {
  for (const [index, value] of left.entries()) {
    const difference = value - (right[index] ?? 0);
    if (difference !== 0) return difference;
  }
  return 0;
};

/** A catalog read; `refreshError` is set when the latest refresh failed and an older catalog is served. */
export type ModelCatalogSnapshot = {
  models: readonly CatalogModel[];
  fetchedAt: number;
  refreshError?: unknown;
};

export interface ModelCatalog {
  /**
   * The catalog, refreshed through `list` when older than `ttlMs`. Concurrent callers share one `list`
   * call. A failed refresh keeps serving the last catalog (with `refreshError`) and is retried after
   * `retryMs`; it rejects only when no catalog was ever read.
   */
  get(): Promise<ModelCatalogSnapshot>;
}

export type ModelCatalogOptions = {
  ttlMs: number;
  /** Wait before retrying a failed refresh while a stale catalog is served. Default: min(ttlMs, 30 s). */
  retryMs?: number;
  now?: () => number;
};

/** A cached model catalog over `list` (in production `Cursor.models.list`). */
export const createModelCatalog = (
  list: () => Promise<readonly CatalogModel[]>,
  options: ModelCatalogOptions,
): ModelCatalog => {
  const now = options.now ?? Date.now;
  const retryMs = options.retryMs ?? Math.min(options.ttlMs, 30_000);
  let cached: ModelCatalogSnapshot | undefined;
  let failure: { at: number; error: unknown } | undefined;
  let inflight: Promise<ModelCatalogSnapshot> | undefined;

  const refresh = async (): Promise<ModelCatalogSnapshot> => {
    try {
      const models = await list();
      cached = { models, fetchedAt: now() };
      failure = undefined;
      return cached;
    } catch (error) {
      if (cached === undefined) throw error;
      failure = { at: now(), error };
      return { ...cached, refreshError: error };
    }
  };

  return {
    get: async () => {
      const time = now();
      if (cached !== undefined && time - cached.fetchedAt < options.ttlMs) return cached;
      if (cached !== undefined && failure !== undefined && time - failure.at < retryMs) {
        return { ...cached, refreshError: failure.error };
      }
      inflight ??= refresh().finally(() => {
        inflight = undefined;
      });
      return inflight;
    },
  };
};

/**
 * The window of a Cursor model whose catalog entry has no context parameter: Cursor runs it at its default
 * (non-Max) context, 200k tokens (Cursor's model docs); the SDK's runs never ask for Max Mode.
 */
export const cursorDefaultContextWindow = 200_000;

/** The reasoning requests a client can make: none, adaptive (no effort), and each effort level. */
const reasoningRequests: readonly ReasoningRequest[] = [
  { requested: false },
  { requested: true },
  ...(['minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const).map((effort) => ({
    requested: true,
    effort,
  })),
];

/**
 * The context window, in tokens, of the variants {@link selectModel} runs for `model`: the smallest
 * context value among the selections for every reasoning request (each selection takes the smallest
 * context its other parameters allow, so this is the window of the conversation's runs whatever a
 * request's reasoning). `undefined` when the model has no context parameter: its catalog entry states none.
 */
export const contextWindowOf = (model: CatalogModel): number | undefined => {
  const context = collectParameters(model).find(
    ({ id, displayName, values }) => classify(`${id} ${displayName}`, values) === 'context',
  );
  if (context === undefined) return undefined;
  const windows = reasoningRequests.flatMap((reasoning) => {
    const result = selectModel([model], model.id, reasoning);
    const value = result.ok
      ? result.selection.params?.find((param) => param.id === context.id)?.value
      : undefined;
    const size = value === undefined ? undefined : parseContextSize(value);
    return size === undefined ? [] : [size];
  });
  return windows.length === 0 ? undefined : Math.min(...windows);
};
