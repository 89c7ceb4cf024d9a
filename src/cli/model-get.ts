/**
 * The pure part of `cursor-bridge model get cursor`: merge the SDK catalog's model ids into the Cursor
 * provider's `models` by splicing the config text, so everything else in the user's file (key order,
 * values, comments, formatting) stays byte-for-byte as it was.
 */
import { cursorTransformerName, isCursorProvider } from '../config/cursor-provider.js';
import {
  defaultApiKey,
  defaultModels,
  defaultTransformerOptions,
  placeholderBaseUrl,
} from '../hosts/ccr/install/ccr-install-plan.js';
import { convertJsonNodeToValue, findJsonProperty, parseJson5 } from '../config/parse-json5.js';
import type { JsonNode } from '../config/parse-json5.js';

export type ApplyModelListResult =
  { ok: true; text: string; added: string[]; providerName: string } | { ok: false; error: string };

const noCursorProvider =
  'no Cursor provider in the config: add a provider named "cursor", or one with "cursor-sdk" in transformer.use';

/**
 * Adds the ids of `catalogIds` missing from the Cursor provider's `models` (catalog order, no
 * duplicates). The Cursor provider is the first one named `cursor` or using `cursor-sdk`; with
 * `options.providerName` (the CLI argument) it must also have that name. Layout of the splice:
 * a multi-line `models` array gets one new line per id at the last item's indentation; an empty or
 * single-line array is rewritten multi-line with a 2-space indent (tabs if the file indents with
 * tabs); a missing `models` key is added after the provider's last key. Nothing to add → the text is
 * returned unchanged.
 */
export const applyModelList = (
  configText: string,
  catalogIds: readonly string[],
  options: { providerName?: string } = {},
): ApplyModelListResult => {
  const parsed = parseJson5(configText);
  if (!parsed.ok) {
    const { line, column, message } = parsed.error;
    return { ok: false, error: `the config is not valid JSON5 (line ${line}, column ${column}): ${message}` };
  }
  const providers = findJsonProperty(parsed.value, 'Providers')?.value;
  if (providers?.type !== 'array') return { ok: false, error: noCursorProvider };

  const wantedName = options.providerName?.toLowerCase();
  let provider: { node: JsonNode; name: string; index: number } | undefined;
  for (const [index, node] of providers.items.entries()) {
    const nameNode = findJsonProperty(node, 'name')?.value;
    const name = nameNode?.type === 'literal' && typeof nameNode.value === 'string' ? nameNode.value : '';
    if (wantedName !== undefined && name.toLowerCase() !== wantedName) continue;
    if (isCursorProvider(convertJsonNodeToValue(node))) {
      provider = { node, name, index };
      break;
    }
    if (wantedName !== undefined) {
      return {
        ok: false,
        error: `provider "${name}" is not a Cursor provider: name it "cursor" or add "cursor-sdk" to its transformer.use`,
      };
    }
  }
  if (provider === undefined) {
    return {
      ok: false,
      error:
        wantedName === undefined
          ? noCursorProvider
          : `no provider named "${options.providerName}" in the config`,
    };
  }

  const models = findJsonProperty(provider.node, 'models')?.value;
  if (models !== undefined && models.type !== 'array') {
    return { ok: false, error: `Providers[${provider.index}].models must be an array of model ids` };
  }
  const existing = new Set(models?.items.map(convertJsonNodeToValue) ?? []);
  const added = [...new Set(catalogIds)].filter((id) => !existing.has(id));
  if (added.length === 0) return { ok: true, text: configText, added, providerName: provider.name };

  const layout = { text: configText, eol: configText.includes('\r\n') ? '\r\n' : '\n' };
  const text =
    models === undefined
      ? addModelsProperty(layout, provider.node, added)
      : extendModelsArray(layout, models, added);
  return { ok: true, text, added, providerName: provider.name };
};

type Layout = { text: string; eol: string };

const splice = (text: string, start: number, end: number, insert: string): string =>
  text.slice(0, start) + insert + text.slice(end);

/** The leading whitespace of the line holding `offset`. */
const lineIndent = (text: string, offset: number): string => {
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
  return /^[ \t]*/.exec(text.slice(lineStart))?.[0] ?? '';
};

const formatArray = (layout: Layout, baseIndent: string, items: string[]): string => {
  const itemIndent = baseIndent + (baseIndent.includes('\t') || /^\t/m.test(layout.text) ? '\t' : '  ');
  const lines = items.map((item) => `${itemIndent}${item}`).join(`,${layout.eol}`);
  return `[${layout.eol}${lines}${layout.eol}${baseIndent}]`;
};

const extendModelsArray = (layout: Layout, models: JsonNode & { type: 'array' }, added: string[]): string => {
  const { text, eol } = layout;
  const quoted = added.map((id) => JSON.stringify(id));
  const last = models.items.at(-1);
  if (last !== undefined && text.slice(models.start, last.start).includes('\n')) {
    const indent = lineIndent(text, last.start);
    return splice(text, last.end, last.end, quoted.map((item) => `,${eol}${indent}${item}`).join(''));
  }
  const kept = models.items.map((item) => text.slice(item.start, item.end));
  return splice(
    text,
    models.start,
    models.end,
    formatArray(layout, lineIndent(text, models.start), [...kept, ...quoted]),
  );
};

const addModelsProperty = (layout: Layout, provider: JsonNode, added: string[]): string => {
  const last = provider.type === 'object' ? provider.properties.at(-1) : undefined;
  if (last === undefined) return layout.text;
  const indent = lineIndent(layout.text, last.start);
  const property = `"models": ${formatArray(
    layout,
    indent,
    added.map((id) => JSON.stringify(id)),
  )}`;
  return splice(layout.text, last.value.end, last.value.end, `,${layout.eol}${indent}${property}`);
};

/**
 * A fresh config.json for `model get` when the file does not exist yet: what `cursor-bridge ccr install`
 * writes (the transformers entry for `transformerPath`, the `cursor` provider with the placeholder URL and
 * the key from `$CURSOR_API_KEY`), with the catalog's ids, routed by default to composer-2 when the
 * catalog has it, else to its first model. Without `transformerPath` (the transformer is not installed
 * where it can be resolved) there is no transformers entry: `serve` needs none, CCR does.
 */
export const createDefaultConfigText = (catalogIds: readonly string[], transformerPath?: string): string => {
  const models = catalogIds.length > 0 ? [...new Set(catalogIds)] : [...defaultModels];
  const defaultModel = models.includes('composer-2') ? 'composer-2' : models[0];
  const config = {
    ...(transformerPath === undefined
      ? {}
      : { transformers: [{ path: transformerPath, options: defaultTransformerOptions }] }),
    Providers: [
      {
        name: 'cursor',
        api_base_url: placeholderBaseUrl,
        api_key: defaultApiKey,
        models,
        transformer: { use: [cursorTransformerName] },
      },
    ],
    Router: { default: `cursor,${defaultModel}` },
  };
  return `${JSON.stringify(config, null, 2)}\n`;
};
