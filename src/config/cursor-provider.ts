/**
 * Which provider is the Cursor one, and where its transformer options live. Works on raw (unvalidated)
 * values too, so `model get` can use it on a file it edits as text.
 */
import { parseConfigValue } from './config-error.js';
import { cursorOptionsSchema } from './config-schema.js';
import type { ConfigFile, CursorOptions } from './config-schema.js';
import { isRecord } from '../../lib/is-record.js';

/** The transformer name CCR configs use for this bridge. */
export const cursorTransformerName = 'cursor-sdk';

/** The name of a `transformer.use` entry (`"name"` or `["name", options]`), if it has one. */
export const getTransformerEntryName = (entry: unknown): string | undefined => {
  const name: unknown = Array.isArray(entry) ? entry[0] : entry;
  return typeof name === 'string' ? name : undefined;
};

/**
 * A provider is the Cursor provider when its name is `cursor` (any case) or its provider-level
 * `transformer.use` includes `cursor-sdk` (as a string or as `["cursor-sdk", {…}]`).
 */
export const isCursorProvider = (provider: unknown): boolean => {
  if (!isRecord(provider)) return false;
  if (typeof provider['name'] === 'string' && provider['name'].toLowerCase() === 'cursor') return true;
  const transformer = provider['transformer'];
  const use = isRecord(transformer) ? transformer['use'] : undefined;
  return Array.isArray(use) && use.some((entry) => getTransformerEntryName(entry) === cursorTransformerName);
};

/** True for a `transformers[].path` that loads the cursor-sdk transformer (`…/cursor-sdk`, `…/cursor-sdk.js`). */
export const isCursorTransformerPath = (path: string): boolean =>
  path.replace(/\.(?:c|m)?[jt]s$/, '').endsWith(cursorTransformerName);

/**
 * The cursor-sdk options for the provider at `providerIndex`: top-level `transformers[]` entries whose
 * path ends in cursor-sdk first (CCR's way for config-loaded plugins), then the provider's
 * `["cursor-sdk", {…}]` tuple, later sources overriding earlier ones key by key.
 * @throws ConfigError naming the offending field when an option is invalid.
 */
export const resolveCursorOptions = (
  config: ConfigFile,
  providerIndex: number,
  file: string,
): CursorOptions => {
  const sources: Array<{ path: Array<string | number>; options: unknown }> = [];
  config.transformers?.forEach((transformer, index) => {
    if (isCursorTransformerPath(transformer.path) && transformer.options !== undefined) {
      sources.push({ path: ['transformers', index, 'options'], options: transformer.options });
    }
  });
  config.Providers?.[providerIndex]?.transformer?.use?.forEach((entry, index) => {
    if (Array.isArray(entry) && entry[0] === cursorTransformerName && entry[1] !== undefined) {
      sources.push({ path: ['Providers', providerIndex, 'transformer', 'use', index, 1], options: entry[1] });
    }
  });
  let merged: CursorOptions = {};
  for (const source of sources) {
    merged = { ...merged, ...parseCursorOptions(source.options, { file, fieldPath: source.path }) };
  }
  return merged;
};

/**
 * One source of cursor-sdk options, validated.
 * @throws ConfigError naming the offending field (`location.fieldPath` followed by the option's name).
 */
export const parseCursorOptions = (
  options: unknown,
  location: { file: string; fieldPath: ReadonlyArray<PropertyKey> },
): CursorOptions => parseConfigValue(cursorOptionsSchema, options, location, 'invalid cursor-sdk options');
