/**
 * The pure part of `cursor-bridge ccr install` under CCR 3: bring the config `getConfig` returned to one
 * where CCR loads the cursor-bridge plugin and routes Claude Code's models to it, changing only what is
 * missing or different, and saying what changed.
 *
 * - provider `cursor`: `anthropic_messages` at the plugin's loopback backend, `api_key` = the plugin's
 *   secret, `models` (kept ones plus the desired ones); CCR's `id` and any other field are kept;
 * - plugin `cursor-bridge`: the entry CCR 3 needs (explicit permissions, gateway surface), its `config`
 *   keeping the user's own keys;
 * - a `model-prefix` rule `claude` → `cursor/<model>`, only when no enabled rule routes `claude-*` yet.
 */
import { isDeepStrictEqual } from 'node:util';
import { isRecord } from '../../../../lib/is-record.js';
import { ccr3PluginId } from '../ccr3-plugin-id.js';

export const ccr3ProviderName = 'cursor';

export type Ccr3InstallTarget = {
  /** Absolute path of the installed `cursor-bridge/ccr3` entry. */
  modulePath: string;
  port: number;
  /** The secret the provider sends and the plugin checks. */
  secret: string;
  /** Models the provider offers; the first is the rule's target unless composer-2 is among them. */
  models: readonly string[];
};

export type Ccr3InstallPlan = { config: Record<string, unknown>; changes: string[] };

type Json = Record<string, unknown>;

const records = (value: unknown): Json[] => (Array.isArray(value) ? value.filter(isRecord) : []);

/** The plugin entry cursor-bridge writes (what the existing one is compared with). */
export const ccr3PluginEntry = (target: Ccr3InstallTarget, existing: Json | undefined): Json => ({
  ...existing,
  id: ccr3PluginId,
  enabled: true,
  module: target.modulePath,
  surfaces: { gateway: true, apps: false, provider: false },
  permissions: ['trusted-code', 'http-backends'],
  config: {
    ...(isRecord(existing?.['config']) ? existing['config'] : {}),
    port: target.port,
    apiKey: target.secret,
    models: [...target.models],
  },
});

/** True when an enabled rule sends models named `claude…` somewhere (as a prefix or a condition). */
export const routesClaude = (rule: Json): boolean => {
  if (rule['enabled'] === false) return false;
  const condition = isRecord(rule['condition']) ? rule['condition'] : undefined;
  const patterns = [
    rule['pattern'],
    condition?.['left'] === 'request.body.model' ? condition['right'] : undefined,
  ];
  return patterns.some(
    (pattern) =>
      typeof pattern === 'string' &&
      pattern.trim() !== '' &&
      (pattern.trim().startsWith('claude') || 'claude'.startsWith(pattern.trim())),
  );
};

/** The secret an earlier install left (the plugin entry's, else a cursor provider's at our backend). */
export const existingCcr3Secret = (config: Json): string | undefined => {
  const plugin = records(config['plugins']).find((entry) => entry['id'] === ccr3PluginId);
  const fromPlugin = isRecord(plugin?.['config']) ? plugin['config']['apiKey'] : undefined;
  return typeof fromPlugin === 'string' && fromPlugin !== '' ? fromPlugin : undefined;
};

/** The port an earlier install chose (kept, so a user's edit survives a re-run). */
export const existingCcr3Port = (config: Json): number | undefined => {
  const plugin = records(config['plugins']).find((entry) => entry['id'] === ccr3PluginId);
  const port = isRecord(plugin?.['config']) ? plugin['config']['port'] : undefined;
  return typeof port === 'number' && Number.isInteger(port) ? port : undefined;
};

export const planCcr3Install = (config: Json, target: Ccr3InstallTarget): Ccr3InstallPlan => {
  const changes: string[] = [];
  const next: Json = { ...config };
  const baseUrl = `http://127.0.0.1:${target.port}`;

  // Provider.
  const providers = records(config['Providers']);
  const index = providers.findIndex((provider) => provider['name'] === ccr3ProviderName);
  const existing = index === -1 ? undefined : providers[index];
  const keptModels = Array.isArray(existing?.['models'])
    ? existing['models'].filter((model): model is string => typeof model === 'string')
    : [];
  const models = [...keptModels, ...target.models.filter((model) => !keptModels.includes(model))];
  const provider: Json = {
    ...existing,
    name: ccr3ProviderName,
    type: 'anthropic_messages',
    api_base_url: baseUrl,
    api_key: target.secret,
    models,
  };
  // A cursor provider of the CCR 1/2 era (imported from config.json) carries the transformer CCR 3 ignores.
  if (isRecord(provider['transformer'])) delete provider['transformer'];
  if (existing === undefined) {
    next['Providers'] = [...providers, provider];
    changes.push(
      `provider "${ccr3ProviderName}": added (anthropic_messages at ${baseUrl}, models ${models.join(', ')})`,
    );
  } else if (!isDeepStrictEqual(existing, provider)) {
    const changed = Object.keys(provider).filter((key) => !isDeepStrictEqual(existing[key], provider[key]));
    const dropped = Object.keys(existing).filter((key) => !(key in provider));
    next['Providers'] = providers.map((entry, at) => (at === index ? provider : entry));
    changes.push(
      `provider "${ccr3ProviderName}": updated ${[...changed, ...dropped.map((key) => `-${key}`)].join(', ')}`,
    );
  }

  // Plugin entry.
  const plugins = records(config['plugins']);
  const pluginIndex = plugins.findIndex((entry) => entry['id'] === ccr3PluginId);
  const oldEntry = pluginIndex === -1 ? undefined : plugins[pluginIndex];
  // The engine serves a model it does not know as its default one: give it every model the provider offers.
  const entry = ccr3PluginEntry({ ...target, models }, oldEntry);
  if (oldEntry === undefined) {
    next['plugins'] = [...plugins, entry];
    changes.push(`plugin "${ccr3PluginId}": added (module ${target.modulePath}, port ${target.port})`);
  } else if (!isDeepStrictEqual(oldEntry, entry)) {
    const changed = Object.keys(entry).filter((key) => !isDeepStrictEqual(oldEntry[key], entry[key]));
    next['plugins'] = plugins.map((item, at) => (at === pluginIndex ? entry : item));
    changes.push(`plugin "${ccr3PluginId}": updated ${changed.join(', ')}`);
  }

  // Routing rule.
  const router = isRecord(config['Router']) ? config['Router'] : {};
  const rules = records(router['rules']);
  if (!rules.some(routesClaude)) {
    const model = models.includes('composer-2') ? 'composer-2' : (models[0] ?? 'composer-2');
    const rule = { type: 'model-prefix', pattern: 'claude', target: `${ccr3ProviderName}/${model}` };
    next['Router'] = { ...router, rules: [rule, ...rules] };
    changes.push(`rule: models starting with "claude" → ${rule.target}`);
  }
  return { config: next, changes };
};
