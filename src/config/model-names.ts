/**
 * How a client's model name compares with Cursor's: Claude Code's own names, catalog lookups and the
 * catalog names "near" a name that is not one of them. Pure; the catalog entries are structurally the
 * SDK's `ModelListItem` (only `id` and `aliases` are read).
 */

import type { CatalogEntry } from './find-catalog-entry.js';

/** Claude Code's suffix for a model's 1M-token context window (`claude-opus-4-8[1m]`, `sonnet[1m]`). */
const oneMillionSuffix = /\[1m\]$/i;

/** The name without Claude Code's `[1m]` suffix, trimmed. */
export const stripContextSuffix = (name: string): string => name.trim().replace(oneMillionSuffix, '').trim();

/** Claude Code's model aliases (`--model`, `/model`); it may send them as they are. */
const claudeCodeAliases: ReadonlySet<string> = new Set([
  'opus',
  'sonnet',
  'haiku',
  'opusplan',
  'default',
  'best',
]);

/**
 * Anthropic's model ids as Claude Code sends them: family first since Claude 4 (`claude-opus-4-8`,
 * `claude-sonnet-4-5-20250929`), version first and dated before (`claude-3-5-haiku-20241022`,
 * `claude-3-7-sonnet-latest`). Cursor's own names for Claude models (`claude-4.5-sonnet`) match neither.
 */
const anthropicIds = [
  /^claude-(?:opus|sonnet|haiku)(?:-\d+)+$/i,
  /^claude-\d+(?:-\d+)?-(?:opus|sonnet|haiku)-(?:\d{8}|latest)$/i,
];

/**
 * Whether `name` (suffix stripped) is one of Claude Code's own model names: an alias or an Anthropic id.
 * Claude Code sends one on every request, picked or not (its default is `claude-opus-4-8[1m]`), so these
 * names say which tier the client wants, not which Cursor model.
 */
export const isClaudeCodeModelName = (name: string): boolean =>
  claudeCodeAliases.has(name.toLowerCase()) || anthropicIds.some((pattern) => pattern.test(name));

const tokens = (name: string): string[] =>
  name
    .toLowerCase()
    .split(/[-._/\s]+/)
    .filter(Boolean);

/** At most this many near names are reported. */
const maxNear = 5;

/**
 * Catalog ids near `name`, which is none of them: the same family and major version — the first two
 * name tokens (split at `-`, `.`, `_`) are equal, or the first one when `name` has only one (`gpt-5` →
 * `gpt-5.4`, `gpt-5-codex`; `gemini` → `gemini-3-pro`). A family must start with a letter. Not near:
 * another major version (`gpt-6.2-sol` when Cursor serves `gpt-5.x`). Catalog order, at most five.
 */
export const nearCatalogIds = (catalog: readonly CatalogEntry[], name: string): string[] => {
  const wanted = tokens(name).slice(0, 2);
  if (wanted.length === 0 || !/^[a-z]/.test(wanted[0] ?? '')) return [];
  const isNear = (candidate: string): boolean => {
    const have = tokens(candidate);
    return wanted.every((token, index) => have[index] === token);
  };
  return catalog
    .filter((entry) => isNear(entry.id) || (entry.aliases ?? []).some(isNear))
    .map((entry) => entry.id)
    .slice(0, maxNear);
};
