import type { ModelListItem, ModelSelection, ModelVariant } from '@cursor/sdk';
import { describe, expect, it } from 'vitest';

import { DEFAULT_FAKE_MODELS } from '../../fakes/cursor-backend/default-models.js';
import { findCatalogEntry } from '../../../src/config/find-catalog-entry.js';
import {
  contextWindowOf,
  createModelCatalog,
  selectModel,
} from '../../../src/upstream/cursor/model-selection.js';
import type { CatalogModel, ReasoningRequest } from '../../../src/upstream/cursor/model-selection.js';

// Catalog fixtures shaped like `Cursor.models.list()` items (typed against the SDK's own ModelListItem,
// so the structural CatalogModel types are checked to accept what the SDK returns).

type Params = Record<string, string>;
const parameter = (id: string, displayName: string, values: string[]) => ({
  id,
  displayName,
  values: values.map((value) => ({ value, displayName: value })),
});
/** Every combination of the parameters' values, as Cursor lists preset variants. */
const allVariants = (parameters: ReturnType<typeof parameter>[], defaults: Params): ModelVariant[] =>
  parameters
    .reduce<Params[]>(
      (combos, { id, values }) =>
        combos.flatMap((combo) => values.map(({ value }) => ({ ...combo, [id]: value }))),
      [{}],
    )
    .map((combo) =>
      variant(
        combo,
        Object.entries(defaults).every(([id, value]) => combo[id] === value),
      ),
    );
const variant = (params: Params, isDefault = false): ModelVariant => ({
  params: Object.entries(params).map(([id, value]) => ({ id, value })),
  displayName: Object.values(params).join(' / '),
  ...(isDefault ? { isDefault } : {}),
});

const claudeParameters = [
  parameter('thinking', 'Thinking', ['false', 'true']),
  parameter('effort', 'Effort', ['low', 'medium', 'high', 'max']),
  parameter('context', 'Context window', ['200k', '1m']),
  parameter('fast', 'Fast mode', ['false', 'true']),
];
const gptParameters = [
  parameter('reasoning', 'Reasoning', ['none', 'low', 'medium', 'high', 'extra-high']),
  parameter('fast', 'Fast', ['false', 'true']),
];
const grokParameters = [
  parameter('context', 'Context', ['256k', '2m']),
  parameter('effort', 'Reasoning effort', ['low', 'medium', 'high']),
  parameter('fast', 'Fast', ['false', 'true']),
];

const catalog: ModelListItem[] = [
  { id: 'composer-2', displayName: 'Composer 2' },
  {
    id: 'claude-opus-4-8',
    displayName: 'Claude Opus 4.8',
    aliases: ['claude-4.8-opus', 'opus-4.8'],
    parameters: claudeParameters,
    variants: allVariants(claudeParameters, {
      thinking: 'true',
      effort: 'high',
      context: '200k',
      fast: 'false',
    }),
  },
  {
    id: 'gpt-5.4',
    displayName: 'GPT-5.4',
    aliases: ['gpt-5.4-latest'],
    parameters: gptParameters,
    variants: allVariants(gptParameters, { reasoning: 'medium', fast: 'false' }),
  },
  {
    id: 'grok-4.7',
    displayName: 'Grok 4.7',
    parameters: grokParameters,
    variants: allVariants(grokParameters, { context: '256k', effort: 'high', fast: 'false' }),
  },
];

const catalogAsBridgeSees: readonly CatalogModel[] = catalog;

const paramsOf = (
  modelId: string,
  reasoning: ReasoningRequest,
  models: readonly CatalogModel[] = catalog,
) => {
  const result = selectModel(models, modelId, reasoning);
  if (!result.ok) throw new Error(result.error);
  const selection: ModelSelection = result.selection;
  return {
    id: selection.id,
    params: Object.fromEntries((selection.params ?? []).map(({ id, value }) => [id, value])),
    warnings: result.warnings,
  };
};

const none: ReasoningRequest = { requested: false };
const adaptive: ReasoningRequest = { requested: true };
const effort = (level: NonNullable<ReasoningRequest['effort']>): ReasoningRequest => ({
  requested: true,
  effort: level,
});

describe('selectModel', () => {
  it('sends a parameterless model as its bare id, whatever the reasoning', () => {
    for (const reasoning of [none, adaptive, effort('max')]) {
      expect(selectModel(catalogAsBridgeSees, 'composer-2', reasoning)).toEqual({
        ok: true,
        selection: { id: 'composer-2' },
        warnings: [],
      });
    }
  });

  describe('no reasoning requested: each parameter’s first value, smallest context, never fast', () => {
    it.each([
      ['claude-opus-4-8', { thinking: 'false', effort: 'low', context: '200k', fast: 'false' }],
      ['gpt-5.4', { reasoning: 'none', fast: 'false' }],
      ['grok-4.7', { context: '256k', effort: 'low', fast: 'false' }],
    ])('%s → %j', (model, params) => {
      expect(paramsOf(model, none)).toEqual({ id: model, params, warnings: [] });
    });
  });

  describe('reasoning with an effort: thinking=true and the nearest allowed level (tie → lower)', () => {
    it.each([
      ['claude-opus-4-8', 'minimal', 'low', true],
      ['claude-opus-4-8', 'low', 'low', false],
      ['claude-opus-4-8', 'medium', 'medium', false],
      ['claude-opus-4-8', 'high', 'high', false],
      // xhigh sits between high and max: a tie, so the lower level wins
      ['claude-opus-4-8', 'xhigh', 'high', true],
      ['claude-opus-4-8', 'max', 'max', false],
      // `none` is never chosen for a reasoning request: minimal → low, not the equally near none
      ['gpt-5.4', 'minimal', 'low', true],
      ['gpt-5.4', 'low', 'low', false],
      ['gpt-5.4', 'high', 'high', false],
      ['gpt-5.4', 'xhigh', 'extra-high', false],
      ['gpt-5.4', 'max', 'extra-high', true],
      ['grok-4.7', 'minimal', 'low', true],
      ['grok-4.7', 'medium', 'medium', false],
      ['grok-4.7', 'xhigh', 'high', true],
      ['grok-4.7', 'max', 'high', true],
    ] as const)('%s with effort %s → %s', (model, level, expected, adjusted) => {
      const { params, warnings } = paramsOf(model, effort(level));
      if (model === 'claude-opus-4-8') {
        expect(params).toEqual({ thinking: 'true', effort: expected, context: '200k', fast: 'false' });
      } else if (model === 'gpt-5.4') {
        expect(params).toEqual({ reasoning: expected, fast: 'false' });
      } else {
        expect(params).toEqual({ context: '256k', effort: expected, fast: 'false' });
      }
      expect(warnings).toEqual(
        adjusted ? [`effort "${level}" is not offered by ${model}; using "${expected}"`] : [],
      );
    });
  });

  describe('reasoning without an effort: the default variant’s effort', () => {
    it.each([
      ['claude-opus-4-8', { thinking: 'true', effort: 'high', context: '200k', fast: 'false' }],
      ['gpt-5.4', { reasoning: 'medium', fast: 'false' }],
      ['grok-4.7', { context: '256k', effort: 'high', fast: 'false' }],
    ])('%s → %j', (model, params) => {
      expect(paramsOf(model, adaptive)).toEqual({ id: model, params, warnings: [] });
    });

    it('takes only the effort from the default variant, never its context or fast mode', () => {
      const grok = catalog.find((model) => model.id === 'grok-4.7');
      const fastDefault: CatalogModel = {
        ...grok!,
        variants: allVariants(grokParameters, { context: '2m', effort: 'medium', fast: 'true' }),
      };
      expect(paramsOf('grok-4.7', adaptive, [fastDefault]).params).toEqual({
        context: '256k',
        effort: 'medium',
        fast: 'false',
      });
    });

    it('falls back to the level nearest high when no variant is the default', () => {
      const noDefault: CatalogModel = {
        id: 'm',
        displayName: 'M',
        parameters: [parameter('reasoning_effort', 'Effort', ['low', 'medium', 'max'])],
      };
      expect(paramsOf('m', adaptive, [noDefault]).params).toEqual({ reasoning_effort: 'medium' });
    });
  });

  it('always returns exactly one catalog variant’s params for every rule', () => {
    for (const model of ['claude-opus-4-8', 'gpt-5.4', 'grok-4.7']) {
      const entry = catalog.find((item) => item.id === model);
      for (const reasoning of [
        none,
        adaptive,
        effort('minimal'),
        effort('medium'),
        effort('xhigh'),
        effort('max'),
      ]) {
        const result = selectModel(catalog, model, reasoning);
        if (!result.ok) throw new Error(result.error);
        expect(entry?.variants?.map((item) => item.params)).toContainEqual(result.selection.params);
      }
    }
  });

  describe('closest variant when none matches exactly', () => {
    const sparse: CatalogModel = {
      id: 'sparse',
      displayName: 'Sparse',
      parameters: claudeParameters,
      variants: [
        variant({ thinking: 'false', context: '1m', fast: 'false' }),
        variant({ thinking: 'true', effort: 'medium', context: '1m', fast: 'false' }),
        variant({ thinking: 'true', effort: 'max', context: '1m', fast: 'true' }, true),
        variant({ thinking: 'true', effort: 'high', context: '200k', fast: 'true' }),
        variant({ thinking: 'true', effort: 'low', context: '200k', fast: 'false' }),
      ],
    };

    it.each([
      // a variant that omits effort counts as its first value (low): thinking=false beats the 200k variant
      ['no reasoning', none, 'false / 1m / false', false],
      // never fast: the exact high/200k variant is fast, so the nearest non-fast effort wins
      ['effort high', effort('high'), 'true / medium / 1m / false', false],
      ['effort max', effort('max'), 'true / medium / 1m / false', false],
      ['effort low', effort('low'), 'true / low / 200k / false', true],
      // the default variant's effort (max) is wanted, but it is fast
      ['adaptive', adaptive, 'true / medium / 1m / false', false],
    ])('%s → %s', (_label, reasoning, displayName, exact) => {
      const result = selectModel([sparse], 'sparse', reasoning);
      if (!result.ok) throw new Error(result.error);
      const chosen = sparse.variants?.find((item) => item.displayName === displayName);
      expect(result.selection).toEqual({ id: 'sparse', params: chosen?.params });
      const closest = result.warnings.filter((warning) => warning.startsWith('sparse has no variant'));
      expect(closest).toEqual(
        exact ? [] : [expect.stringMatching(new RegExp(`; using the closest, "${displayName}"$`))],
      );
    });

    it('breaks an effort-distance tie towards the lower level, then the smaller context', () => {
      const tied: CatalogModel = {
        id: 'tied',
        displayName: 'Tied',
        parameters: claudeParameters,
        variants: [
          variant({ thinking: 'true', effort: 'max', context: '200k', fast: 'false' }),
          variant({ thinking: 'true', effort: 'medium', context: '1m', fast: 'false' }),
          variant({ thinking: 'true', effort: 'medium', context: '200k', fast: 'false' }),
        ],
      };
      expect(paramsOf('tied', effort('high'), [tied]).params).toEqual({
        thinking: 'true',
        effort: 'medium',
        context: '200k',
        fast: 'false',
      });
    });
  });

  it('sends every parameter when the model has parameters but no variants', () => {
    const bare: CatalogModel = {
      id: 'bare',
      displayName: 'Bare',
      parameters: [...claudeParameters, parameter('verbosity', 'Verbosity', ['low', 'medium', 'high'])],
    };
    expect(paramsOf('bare', effort('medium'), [bare]).params).toEqual({
      thinking: 'true',
      effort: 'medium',
      context: '200k',
      fast: 'false',
      // not an effort parameter: first value
      verbosity: 'low',
    });
  });

  it('derives the parameters from the variants when the catalog lists none', () => {
    const grok = catalog.find((model) => model.id === 'grok-4.7');
    const derived: CatalogModel = { id: 'grok-4.7', displayName: 'Grok 4.7', variants: grok?.variants ?? [] };
    expect(paramsOf('grok-4.7', none, [derived]).params).toEqual({
      context: '256k',
      effort: 'low',
      fast: 'false',
    });
    expect(paramsOf('grok-4.7', effort('max'), [derived]).params).toEqual({
      context: '256k',
      effort: 'high',
      fast: 'false',
    });
  });

  it.each([
    ['claude-4.8-opus', 'claude-opus-4-8'],
    ['opus-4.8', 'claude-opus-4-8'],
    ['GPT-5.4-LATEST', 'gpt-5.4'],
    ['Composer-2', 'composer-2'],
  ])('resolves alias %s to the canonical id %s', (alias, id) => {
    expect(paramsOf(alias, none).id).toBe(id);
    expect(findCatalogEntry(catalog, alias)?.id).toBe(id);
  });

  it('reports an unknown model with the available ids', () => {
    expect(selectModel(catalog, 'gpt-9', none)).toEqual({
      ok: false,
      error:
        'Unknown Cursor model "gpt-9". Available models: composer-2, claude-opus-4-8, gpt-5.4, grok-4.7.',
    });
    expect(selectModel([], 'x', none)).toEqual({
      ok: false,
      error: 'Unknown Cursor model "x". Available models: (none).',
    });
  });
});

describe('createModelCatalog', () => {
  const setup = (options: { ttlMs: number; retryMs?: number } = { ttlMs: 1000 }) => {
    let time = 0;
    const calls: Array<{ resolve: (models: CatalogModel[]) => void; reject: (error: Error) => void }> = [];
    const list = () =>
      new Promise<CatalogModel[]>((resolve, reject) => {
        calls.push({ resolve, reject });
      });
    const catalog = createModelCatalog(list, { ...options, now: () => time });
    return {
      catalog,
      calls,
      advance: (ms: number) => {
        time += ms;
      },
    };
  };
  const v1 = [{ id: 'composer-2', displayName: 'Composer 2' }];
  const v2 = [...v1, { id: 'gpt-5.4', displayName: 'GPT-5.4' }];

  it('shares one list call between concurrent readers and caches within the TTL', async () => {
    const { catalog, calls, advance } = setup();
    const first = catalog.get();
    const second = catalog.get();
    expect(calls).toHaveLength(1);
    calls[0]?.resolve(v1);
    await expect(first).resolves.toEqual({ models: v1, fetchedAt: 0 });
    await expect(second).resolves.toEqual({ models: v1, fetchedAt: 0 });
    advance(999);
    await expect(catalog.get()).resolves.toEqual({ models: v1, fetchedAt: 0 });
    expect(calls).toHaveLength(1);
  });

  it('refreshes after the TTL', async () => {
    const { catalog, calls, advance } = setup();
    const first = catalog.get();
    calls[0]?.resolve(v1);
    await first;
    advance(1000);
    const refreshed = catalog.get();
    expect(calls).toHaveLength(2);
    calls[1]?.resolve(v2);
    await expect(refreshed).resolves.toEqual({ models: v2, fetchedAt: 1000 });
  });

  it('keeps the last catalog when a refresh fails, reports the failure, and retries after retryMs', async () => {
    const { catalog, calls, advance } = setup({ ttlMs: 1000, retryMs: 100 });
    const first = catalog.get();
    calls[0]?.resolve(v1);
    await first;
    advance(1000);
    const failing = catalog.get();
    const failure = new Error('Network request failed');
    calls[1]?.reject(failure);
    await expect(failing).resolves.toEqual({ models: v1, fetchedAt: 0, refreshError: failure });
    advance(50);
    await expect(catalog.get()).resolves.toEqual({ models: v1, fetchedAt: 0, refreshError: failure });
    expect(calls).toHaveLength(2);
    advance(50);
    const retried = catalog.get();
    expect(calls).toHaveLength(3);
    calls[2]?.resolve(v2);
    await expect(retried).resolves.toEqual({ models: v2, fetchedAt: 1100 });
  });

  it('rejects when no catalog was ever read, and tries again on the next call', async () => {
    const { catalog, calls } = setup();
    const first = catalog.get();
    const second = catalog.get();
    calls[0]?.reject(new Error('Invalid API key'));
    await expect(first).rejects.toThrow('Invalid API key');
    await expect(second).rejects.toThrow('Invalid API key');
    const third = catalog.get();
    expect(calls).toHaveLength(2);
    calls[1]?.resolve(v1);
    await expect(third).resolves.toEqual({ models: v1, fetchedAt: 0 });
  });
});

describe('contextWindowOf: the window of the variants the bridge runs', () => {
  const withContext = (values: string[], variants?: CatalogModel['variants']): CatalogModel => ({
    id: 'm',
    displayName: 'M',
    parameters: [
      { id: 'reasoning', values: [{ value: 'low' }, { value: 'high' }] },
      { id: 'context', displayName: 'Context', values: values.map((value) => ({ value })) },
    ],
    ...(variants === undefined ? {} : { variants }),
  });

  it.each<[string, CatalogModel, number | undefined]>([
    // The fake catalog, as the SDK lists it.
    [
      'gpt-5.4: its variants run 272k (the 1M one only on request)',
      DEFAULT_FAKE_MODELS[3] as CatalogModel,
      272_000,
    ],
    ['composer-2: no context parameter', DEFAULT_FAKE_MODELS[0] as CatalogModel, undefined],
    ['claude-opus-4-8: thinking and effort only', DEFAULT_FAKE_MODELS[1] as CatalogModel, undefined],
    ['parameters without variants: the smallest value', withContext(['1m', '200k']), 200_000],
    ['sizes in any case, with decimals', withContext(['1.5M', '400K']), 400_000],
    [
      'a variant list whose high effort exists only at 1M: the smallest window any request runs',
      withContext(
        ['128k', '1m'],
        [
          {
            displayName: 'low 128k',
            params: [
              { id: 'reasoning', value: 'low' },
              { id: 'context', value: '128k' },
            ],
          },
          {
            displayName: 'high 1m',
            params: [
              { id: 'reasoning', value: 'high' },
              { id: 'context', value: '1m' },
            ],
          },
        ],
      ),
      128_000,
    ],
  ])('%s', (_label, model, window) => {
    expect(contextWindowOf(model)).toBe(window);
  });
});
