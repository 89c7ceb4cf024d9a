/**
 * The context window Claude Code is told for a session on the bridge: that of the Cursor model its
 * conversation runs on, as the bridge's `GET /v1/models` states it (`context_window`, from Cursor's
 * catalog), so its `/context` and its auto-compact threshold measure Cursor's window, not the 1M it
 * assumes for a model name it does not know.
 */

import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { BridgeConfig } from '../config/load-config.js';
import { resolveModelRoute } from '../config/model-route.js';
import { findCatalogEntry } from '../config/find-catalog-entry.js';

type Env = Readonly<Record<string, string | undefined>>;

/** Claude Code's smallest auto-compact window: it raises a smaller `CLAUDE_CODE_AUTO_COMPACT_WINDOW` to this, with a warning. */
export const claudeCodeMinAutoCompactWindow = 100_000;

/** The `--model` value among Claude Code's arguments (`--model X` or `--model=X`; the last one wins). */
const modelArgument = (args: readonly string[]): string | undefined => {
  let model: string | undefined;
  for (const [index, arg] of args.entries()) {
    if (arg === '--model') model = args[index + 1] ?? model;
    else if (arg.startsWith('--model=')) model = arg.slice('--model='.length);
  }
  return model;
};

/** Claude Code's aliases and the variable that names the model each one runs. */
const aliasVariables: Readonly<Record<string, string>> = {
  opus: 'ANTHROPIC_DEFAULT_OPUS_MODEL',
  sonnet: 'ANTHROPIC_DEFAULT_SONNET_MODEL',
  haiku: 'ANTHROPIC_DEFAULT_HAIKU_MODEL',
};

/**
 * The model name Claude Code sends for its conversation, given its launch environment: `--model` (an
 * alias `opus` / `sonnet` / `haiku` as the launch's `ANTHROPIC_DEFAULT_*_MODEL` names it), else
 * `ANTHROPIC_MODEL`.
 */
export const claudeModelName = (args: readonly string[], env: Env): string | undefined => {
  const named = modelArgument(args);
  if (named === undefined) return env['ANTHROPIC_MODEL'];
  const variable = aliasVariables[named.toLowerCase()];
  return (variable === undefined ? undefined : env[variable]) ?? named;
};

/** One `GET /v1/models` entry, as far as it is read here. */
type ModelsEntry = { id: string; aliases?: string[]; context_window?: number };

const readModels = async (baseUrl: string, token: string): Promise<ModelsEntry[] | undefined> => {
  try {
    const response = await fetch(`${baseUrl}/v1/models`, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) {
      await response.body?.cancel();
      return undefined;
    }
    const body = (await response.json()) as { data?: unknown };
    if (!Array.isArray(body.data)) return undefined;
    return body.data.filter(
      (entry): entry is ModelsEntry =>
        typeof entry === 'object' && entry !== null && typeof (entry as ModelsEntry).id === 'string',
    );
  } catch {
    return undefined;
  }
};

/**
 * The context window of the Cursor model `name` runs on: routed as the bridge routes a Claude Code request
 * (which asks for reasoning), against the models the bridge at `baseUrl` lists. `undefined` when the bridge
 * cannot say (not reachable, the model unknown to it, no window stated).
 */
export const readContextWindow = async (input: {
  baseUrl: string;
  token: string;
  config: Pick<BridgeConfig, 'cursor' | 'router' | 'providers'>;
  name: string;
}): Promise<number | undefined> => {
  const models = await readModels(input.baseUrl, input.token);
  if (models === undefined) return undefined;
  const route = resolveModelRoute(input.config, {
    model: input.name,
    reasoningRequested: true,
    catalog: models,
  });
  if (!route.ok) return undefined;
  const window = findCatalogEntry(models, route.value.model)?.context_window;
  return typeof window === 'number' && Number.isSafeInteger(window) && window > 0 ? window : undefined;
};

/**
 * Whether one of Claude Code's settings files sets `autoCompactWindow` (the user's, the project's, the
 * project's local one): a window the user chose there wins over the one the session would set.
 */
export const settingsSetAutoCompactWindow = async (env: Env, cwd: string): Promise<boolean> => {
  const configDir = env['CLAUDE_CONFIG_DIR'] ?? join(env['HOME'] ?? homedir(), '.claude');
  const files = [
    join(configDir, 'settings.json'),
    join(cwd, '.claude', 'settings.json'),
    join(cwd, '.claude', 'settings.local.json'),
  ];
  const found = await Promise.all(
    files.map(async (file) => {
      try {
        const settings: unknown = JSON.parse(await readFile(file, 'utf8'));
        return typeof settings === 'object' && settings !== null && 'autoCompactWindow' in settings;
      } catch {
        return false;
      }
    }),
  );
  return found.includes(true);
};
