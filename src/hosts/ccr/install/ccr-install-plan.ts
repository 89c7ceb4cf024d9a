/**
 * The pure part of `cursor-bridge ccr install`: bring a CCR `config.json` (as text) to a state where
 * CCR loads the cursor-sdk transformer and routes to it, changing only what is missing or outdated.
 * Each step splices the text and re-parses, so later steps see earlier ones.
 */
import {
  cursorTransformerName,
  getTransformerEntryName,
  isCursorProvider,
  isCursorTransformerPath,
} from '../../../config/cursor-provider.js';
import { convertJsonNodeToValue, findJsonProperty, parseJson5 } from '../../../config/parse-json5.js';
import type { JsonNode, JsonProperty } from '../../../config/parse-json5.js';
import { appendItem, inferLayout, insertProperty, replaceValue } from './ccr-install-edit.js';
import type { TextLayout } from './ccr-install-edit.js';

/** Options written for a new transformers entry (the user's own options are never replaced). */
export const defaultTransformerOptions = { cursorMode: 'bridge' } as const;

/**
 * CCR skips a provider whose `api_base_url` or `api_key` is empty, and always `fetch`es a URL even
 * though the transformer answers in-process. `.invalid` (RFC 2606) can never resolve, so a
 * misconfigured route fails locally instead of sending the key anywhere.
 */
export const placeholderBaseUrl = 'https://cursor.invalid/v1/chat/completions';
export const defaultApiKey = '$CURSOR_API_KEY';
export const defaultModels = ['composer-2'] as const;

export type CcrInstallPlan =
  | { ok: true; text: string; changes: string[]; notes: string[] }
  | { ok: false; error: string; line?: number; column?: number };

type ObjectNode = Extract<JsonNode, { type: 'object' }>;
type State = { text: string; root: ObjectNode; changes: string[]; notes: string[]; layout: TextLayout };

const isString = (node: JsonNode | undefined): node is JsonNode & { type: 'literal' } =>
  node?.type === 'literal' && typeof node.value === 'string';

const nonEmptyString = (node: JsonNode | undefined): boolean =>
  isString(node) && String(node.value).trim() !== '';

class PlanFailure extends Error {}

/** Re-parses after a splice; the splices only ever produce valid JSON5, so failure is a bug. */
const reparse = (state: State, text: string, change: string): void => {
  const parsed = parseJson5(text);
  if (!parsed.ok || parsed.value.type !== 'object')
    throw new Error(`ccr install produced invalid JSON5 (${change}); please report this`);
  state.text = text;
  state.root = parsed.value;
  state.changes.push(change);
};

const property = (node: JsonNode | undefined, key: string): JsonProperty | undefined =>
  node === undefined ? undefined : findJsonProperty(node, key);

/**
 * Plans the edit of `text` (undefined or blank: no file yet). `transformerPath` is the absolute path
 * of the transformer CCR should `require`.
 */
export const planCcrInstall = (text: string | undefined, transformerPath: string): CcrInstallPlan => {
  const source = text === undefined || text.trim() === '' ? '{}\n' : text;
  const parsed = parseJson5(source);
  if (!parsed.ok) {
    const { line, column, message } = parsed.error;
    return { ok: false, error: `invalid JSON5: ${message}`, line, column };
  }
  if (parsed.value.type !== 'object') return { ok: false, error: 'the config must be a JSON object' };
  const state: State = {
    text: source,
    root: parsed.value,
    changes: [],
    notes: [],
    layout: inferLayout(source),
  };
  try {
    ensureTransformerEntry(state, transformerPath);
    const route = ensureCursorProvider(state);
    ensureDefaultRoute(state, route);
  } catch (error) {
    if (error instanceof PlanFailure) return { ok: false, error: error.message };
    throw error;
  }
  return { ok: true, text: state.text, changes: state.changes, notes: state.notes };
};

const ensureTransformerEntry = (state: State, transformerPath: string): void => {
  const desired = { path: transformerPath, options: defaultTransformerOptions };
  const transformers = property(state.root, 'transformers')?.value;
  if (transformers === undefined) {
    reparse(
      state,
      insertProperty(state.text, state.root, 'transformers', [desired], state.layout),
      `added transformers entry ${transformerPath}`,
    );
    return;
  }
  if (transformers.type !== 'array') throw new PlanFailure('"transformers" must be an array');
  const ours = transformers.items.flatMap((entry, index) => {
    const path = property(entry, 'path')?.value;
    if (!isString(path)) return [];
    const value = String(path.value);
    return value === transformerPath || isCursorTransformerPath(value) ? [{ entry, index, value }] : [];
  });
  const first = ours[0];
  if (first === undefined) {
    reparse(
      state,
      appendItem(state.text, transformers, desired, state.layout),
      `added transformers entry ${transformerPath}`,
    );
    return;
  }
  for (const other of ours.slice(1)) {
    state.notes.push(
      `transformers[${other.index}] (${other.value}) also loads ${cursorTransformerName}; CCR keeps only the last one registered, so remove one of them`,
    );
  }
  if (first.value !== transformerPath) {
    const pathNode = property(first.entry, 'path')?.value;
    if (pathNode !== undefined) {
      reparse(
        state,
        replaceValue(state.text, pathNode, transformerPath),
        `updated transformers[${first.index}].path from ${first.value} to ${transformerPath}`,
      );
    }
  }
  const entry = (property(state.root, 'transformers')?.value as Extract<JsonNode, { type: 'array' }>).items[
    first.index
  ];
  if (entry?.type === 'object' && property(entry, 'options') === undefined) {
    reparse(
      state,
      insertProperty(state.text, entry, 'options', defaultTransformerOptions, state.layout),
      `added transformers[${first.index}].options ${JSON.stringify(defaultTransformerOptions)}`,
    );
  }
};

/** Ensures a Cursor provider CCR will register; returns its name and first model for the default route. */
const ensureCursorProvider = (state: State): { provider: string; model: string } => {
  // CCR v1/v2 read `Providers || providers`.
  const key =
    property(state.root, 'Providers') === undefined && property(state.root, 'providers') !== undefined
      ? 'providers'
      : 'Providers';
  const fresh = {
    name: 'cursor',
    api_base_url: placeholderBaseUrl,
    api_key: defaultApiKey,
    models: [...defaultModels],
    transformer: { use: [cursorTransformerName] },
  };
  const providers = property(state.root, key)?.value;
  if (providers === undefined) {
    reparse(
      state,
      insertProperty(state.text, state.root, key, [fresh], state.layout),
      `added provider "cursor"`,
    );
    return { provider: fresh.name, model: defaultModels[0] };
  }
  if (providers.type !== 'array') throw new PlanFailure(`"${key}" must be an array`);
  const index = providers.items.findIndex((node) => isCursorProvider(convertJsonNodeToValue(node)));
  if (index < 0) {
    reparse(state, appendItem(state.text, providers, fresh, state.layout), `added provider "cursor"`);
    return { provider: fresh.name, model: defaultModels[0] };
  }
  const at = `${key}[${index}]`;
  const current = (): ObjectNode => {
    const list = property(state.root, key)?.value;
    const node = list?.type === 'array' ? list.items[index] : undefined;
    if (node?.type !== 'object') throw new PlanFailure(`${at} must be an object`);
    return node;
  };
  const ensureString = (field: string, value: string): void => {
    const existing = property(current(), field)?.value;
    if (nonEmptyString(existing)) return;
    const text =
      existing === undefined
        ? insertProperty(state.text, current(), field, value, state.layout)
        : replaceValue(state.text, existing, value);
    reparse(state, text, `set ${at}.${field} to ${JSON.stringify(value)}`);
  };
  ensureString('api_base_url', placeholderBaseUrl);
  ensureString('api_key', defaultApiKey);

  const models = property(current(), 'models')?.value;
  if (models !== undefined && models.type !== 'array') throw new PlanFailure(`${at}.models must be an array`);
  if (models === undefined || models.items.length === 0) {
    const text =
      models === undefined
        ? insertProperty(state.text, current(), 'models', [...defaultModels], state.layout)
        : appendItem(state.text, models, defaultModels[0], state.layout);
    reparse(state, text, `set ${at}.models to ${JSON.stringify(defaultModels)}`);
  }

  const transformer = property(current(), 'transformer')?.value;
  if (transformer === undefined) {
    reparse(
      state,
      insertProperty(state.text, current(), 'transformer', { use: [cursorTransformerName] }, state.layout),
      `added ${at}.transformer.use ["${cursorTransformerName}"]`,
    );
  } else {
    if (transformer.type !== 'object') throw new PlanFailure(`${at}.transformer must be an object`);
    const use = property(transformer, 'use')?.value;
    if (use === undefined) {
      reparse(
        state,
        insertProperty(state.text, transformer, 'use', [cursorTransformerName], state.layout),
        `added ${at}.transformer.use ["${cursorTransformerName}"]`,
      );
    } else {
      if (use.type !== 'array') throw new PlanFailure(`${at}.transformer.use must be an array`);
      const names = use.items.map((entry) => getTransformerEntryName(convertJsonNodeToValue(entry)));
      if (!names.includes(cursorTransformerName)) {
        reparse(
          state,
          appendItem(state.text, use, cursorTransformerName, state.layout),
          `added "${cursorTransformerName}" to ${at}.transformer.use`,
        );
      }
    }
  }
  const node = current();
  const name = property(node, 'name')?.value;
  const firstModel = (() => {
    const list = property(node, 'models')?.value;
    const item = list?.type === 'array' ? list.items[0] : undefined;
    return isString(item) ? String(item.value) : defaultModels[0];
  })();
  return { provider: isString(name) ? String(name.value) : 'cursor', model: firstModel };
};

const ensureDefaultRoute = (state: State, route: { provider: string; model: string }): void => {
  const value = `${route.provider},${route.model}`;
  const router = property(state.root, 'Router')?.value;
  if (router === undefined) {
    reparse(
      state,
      insertProperty(state.text, state.root, 'Router', { default: value }, state.layout),
      `added Router.default ${JSON.stringify(value)}`,
    );
    return;
  }
  if (router.type !== 'object') throw new PlanFailure('"Router" must be an object');
  const current = property(router, 'default')?.value;
  if (nonEmptyString(current)) {
    const provider = String((current as JsonNode & { type: 'literal' }).value)
      .split(',')[0]
      ?.trim();
    if (provider?.toLowerCase() !== route.provider.toLowerCase()) {
      state.notes.push(
        `Router.default stays ${JSON.stringify(String((current as JsonNode & { type: 'literal' }).value))}; use Cursor with /model ${value} in Claude Code, or set Router.default to "${value}"`,
      );
    }
    return;
  }
  const text =
    current === undefined
      ? insertProperty(state.text, router, 'default', value, state.layout)
      : replaceValue(state.text, current, value);
  reparse(state, text, `set Router.default to ${JSON.stringify(value)}`);
};
