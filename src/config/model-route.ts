/**
 * Which Cursor model serves a request, per design.md "Model resolution": `provider,model` → that; a
 * model listed in the Cursor provider's `models` → that; otherwise the Router (`background` for a
 * model name containing `haiku`, `think` when reasoning is requested, else `default`).
 */
import type { Result } from '../shared/result.js';
import type { BridgeConfig } from './load-config.js';

/** How the model was chosen: named explicitly, listed in the provider's models, or a Router scenario. */
export type ModelRouteKind = 'explicit' | 'listed' | 'background' | 'think' | 'default';

/** The Cursor model a request runs on, and how it was chosen. */
export type ModelRoute = { provider: string; model: string; route: ModelRouteKind };

/** The route, or the user-facing reason there is none. */
export type ModelRouteResult = Result<ModelRoute, string>;

export type ModelRouteRequest = {
  /** The model string as the client sent it (`provider,model` allowed). */
  model: string;
  /** Whether the request asks for reasoning (`TurnRequest.reasoning.requested`). */
  reasoningRequested: boolean;
};

/**
 * Resolves the request's model to `{provider, model}` on the Cursor provider. A route that lands on
 * another provider (this bridge only serves Cursor) or a malformed `provider,model` is returned as
 * `{ok: false, error: message}`, never thrown. Provider names compare case-insensitively; the returned
 * provider is the configured Cursor provider name.
 */
export const resolveModelRoute = (
  config: Pick<BridgeConfig, 'cursor' | 'router' | 'providers'>,
  request: ModelRouteRequest,
): ModelRouteResult => {
  const requested = request.model.trim();
  if (requested.includes(',')) return routeTo(config, requested, 'explicit', `model "${requested}"`);
  if (requested !== '' && config.cursor.models.includes(requested)) {
    return { ok: true, value: { provider: config.cursor.providerName, model: requested, route: 'listed' } };
  }
  const background = config.router.background;
  if (background !== undefined && requested.toLowerCase().includes('haiku')) {
    return routeTo(config, background, 'background', 'Router.background');
  }
  const think = config.router.think;
  if (think !== undefined && request.reasoningRequested)
    return routeTo(config, think, 'think', 'Router.think');
  return routeTo(config, config.router.default, 'default', 'Router.default');
};

const routeTo = (
  config: Pick<BridgeConfig, 'cursor' | 'providers'>,
  value: string,
  route: ModelRouteKind,
  origin: string,
): ModelRouteResult => {
  const comma = value.indexOf(',');
  const provider = value.slice(0, comma).trim();
  const model = value.slice(comma + 1).trim();
  if (comma < 0 || provider === '' || model === '') {
    return { ok: false, error: `${origin} must be "provider,model" (e.g. "cursor,composer-2")` };
  }
  const cursorName = config.cursor.providerName;
  if (provider.toLowerCase() === cursorName.toLowerCase())
    return { ok: true, value: { provider: cursorName, model, route } };
  const known = config.providers.find((entry) => entry.name.toLowerCase() === provider.toLowerCase());
  const why =
    known === undefined
      ? 'which is not configured'
      : known.isCursor
        ? `a second Cursor provider (only the first, "${cursorName}", is served)`
        : 'which is not a Cursor provider';
  return {
    ok: false,
    error: `${origin} routes to provider "${provider}", ${why}; this bridge only serves Cursor: use "${cursorName},<model>"`,
  };
};
