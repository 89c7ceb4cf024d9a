/**
 * Which Cursor model serves a request (docs/configuration.md, "Picking the model"). In
 * order, for the name with Claude Code's `[1m]` suffix stripped:
 *
 * 1. `provider,model` → that model (`explicit`; a catalog alias becomes its id);
 * 2. one of Claude Code's own names (`opus`, `sonnet`, `haiku`, Anthropic ids such as `claude-opus-4-8`)
 *    → the Router, even when Cursor serves a model of that name: Claude Code sends its default on every
 *    request, so the name says which tier, not which Cursor model (`cursor,claude-opus-4-8` runs that);
 * 3. a name in Cursor's live catalog (id or alias, any case) → that model (`catalog`);
 * 4. a name in the Cursor provider's `models` → that model (`listed`; the catalog lacks it or is unknown);
 * 5. anything else → the Router: `longContext` for a request whose token count is above
 *    `longContextThreshold` (Claude Code Router's rule: strictly above, 60000 by default), `webSearch` for a
 *    request that offers hosted web search, `background` for a name containing `haiku`, `think` when the
 *    request asks for reasoning, else `default`.
 *
 * A request whose latest turn carries an image (a new user message with one, or a tool result with one)
 * runs on `Router.image` when it is set, whatever its name, as in Claude Code Router.
 *
 * A search side call (a request whose only job is a hosted web search) runs on `Router.webSearch` when
 * it is set, whatever its name: the name is its conversation's, not a choice for the search. A name near catalog models (`gpt-5` when Cursor serves
 *    `gpt-5.4`) is `unmatched`: it runs the same Router scenario and the note names the near models —
 *    a near model is never run in its place, since it is another model with another price.
 *
 * Every route but `explicit`, `catalog` and `listed` carries a `note` saying why the name did not run.
 */
import type { Result } from '../../lib/result.js';
import { findCatalogEntry, type CatalogEntry } from './find-catalog-entry.js';
import type { TurnModelRouteKind } from '../turn/turn-model-route.js';
import type { BridgeConfig } from './load-config.js';
import { isClaudeCodeModelName, nearCatalogIds, stripContextSuffix } from './model-names.js';

/** How the model was chosen; see {@link TurnModelRouteKind}. */
export type ModelRouteKind = TurnModelRouteKind;

/** The Cursor model a request runs on, and how it was chosen. */
export type ModelRoute = { provider: string; model: string; route: ModelRouteKind; note?: string };

/** The route, or the user-facing reason there is none. */
export type ModelRouteResult = Result<ModelRoute, string>;

export type ModelRouteRequest = {
  /** The model string as the client sent it (`provider,model` allowed). */
  model: string;
  /** Whether the request asks for reasoning (`TurnRequest.reasoning.requested`). */
  reasoningRequested: boolean;
  /**
   * The request offers hosted web search: `call` when searching is its only job (a search side call,
   * whose model name is the conversation's and says nothing about the search), `offered` when a turn
   * may search.
   */
  webSearch?: 'call' | 'offered';
  /** The request's latest turn (what follows the last assistant message) carries an image. */
  images?: boolean;
  /** Cursor's live model catalog; `undefined` when it could not be read (then only `models` is known). */
  catalog?: readonly CatalogEntry[] | undefined;
  /**
   * The request's input tokens as `count_tokens` counts them (system, messages, tools), for
   * `Router.longContext`; `undefined` when not counted (no long-context route applies then).
   */
  tokenCount?: number;
};

/**
 * Whether `Router.longContext` may take over a request that resolved to `kind` without its token count:
 * the routes the Router decided. A caller counts the request's tokens only then (counting is CPU work).
 */
export const mayRouteByTokenCount = (config: Pick<BridgeConfig, 'router'>, kind: ModelRouteKind): boolean => {
  if (config.router.longContext === undefined) return false;
  switch (kind) {
    case 'default':
    case 'think':
    case 'background':
    case 'web-search':
    case 'unmatched':
      return true;
    case 'explicit':
    case 'catalog':
    case 'listed':
    case 'long-context':
    case 'image':
      return false;
    default: {
      const _exhaustive: never = kind;
      return _exhaustive;
    }
  }
};

type RouteConfig = Pick<BridgeConfig, 'cursor' | 'router' | 'providers'>;

/**
 * Resolves the request's model to `{provider, model}` on the Cursor provider. A route that lands on
 * another provider (this bridge only serves Cursor) or a malformed `provider,model` is returned as
 * `{ok: false, error: message}`, never thrown. Provider names compare case-insensitively; the returned
 * provider is the configured Cursor provider name.
 */
export const resolveModelRoute = (config: RouteConfig, request: ModelRouteRequest): ModelRouteResult => {
  const name = stripContextSuffix(request.model);
  const catalog = request.catalog;
  const webSearchRoute = config.router.webSearch;
  if (request.webSearch === 'call' && webSearchRoute !== undefined)
    return overridingRoute(
      config,
      catalog,
      webSearchRoute,
      'web-search',
      (model) => `a web search call runs on Router.webSearch (${model}), not "${name}"`,
    );
  const imageRoute = config.router.image;
  if (request.images === true && imageRoute !== undefined)
    return overridingRoute(
      config,
      catalog,
      imageRoute,
      'image',
      (model) => `a request carrying images runs on Router.image (${model}), not "${name}"`,
    );
  if (name.includes(',')) {
    const route = routeTo(config, name, 'explicit', `model "${name}"`);
    const entry =
      route.ok && catalog !== undefined ? findCatalogEntry(catalog, route.value.model) : undefined;
    return entry === undefined || !route.ok
      ? route
      : { ok: true, value: { ...route.value, model: entry.id } };
  }
  if (name !== '' && isClaudeCodeModelName(name)) {
    const served = catalog === undefined ? undefined : findCatalogEntry(catalog, name);
    const also =
      served === undefined
        ? ''
        : `; Cursor also serves "${served.id}": ask for "${config.cursor.providerName},${served.id}" to run it`;
    return routerRoute(config, name, request, (slot) => `Claude Code's "${name}" follows ${slot}${also}`);
  }
  const entry = name === '' || catalog === undefined ? undefined : findCatalogEntry(catalog, name);
  if (entry !== undefined) return cursorRoute(config, entry.id, 'catalog');
  const lower = name.toLowerCase();
  const listed = config.cursor.models.find((model) => model.toLowerCase() === lower);
  if (name !== '' && listed !== undefined) return cursorRoute(config, listed, 'listed');
  if (name === '') return routerRoute(config, name, request, (slot) => `no model named; ${slot}`);
  const where =
    catalog === undefined ? "the provider's models (Cursor's catalog could not be read)" : "Cursor's catalog";
  const near = catalog === undefined ? [] : nearCatalogIds(catalog, name);
  const route = routerRoute(config, name, request, (slot) =>
    near.length === 0
      ? `"${name}" is not in ${where}; ${slot} runs`
      : `"${name}" is not in ${where}, which has ${near.map((id) => `"${id}"`).join(', ')}; ${slot} runs instead — ask for one of those to run it`,
  );
  return near.length > 0 && route.ok ? { ok: true, value: { ...route.value, route: 'unmatched' } } : route;
};

/** A Router scenario that takes a request whatever model it names (a search side call, images), alias resolved. */
const overridingRoute = (
  config: RouteConfig,
  catalog: readonly CatalogEntry[] | undefined,
  value: string,
  route: 'web-search' | 'image',
  note: (model: string) => string,
): ModelRouteResult => {
  const result = routeTo(config, value, route, `Router.${routerKeys[route]}`);
  if (!result.ok) return result;
  const model = (catalog === undefined ? undefined : findCatalogEntry(catalog, result.value.model))?.id;
  const id = model ?? result.value.model;
  return { ok: true, value: { ...result.value, model: id, note: note(id) } };
};

const cursorRoute = (config: RouteConfig, model: string, route: ModelRouteKind): ModelRouteResult => ({
  ok: true,
  value: { provider: config.cursor.providerName, model, route },
});

/** The `Router` key of each scenario. */
const routerKeys = {
  'long-context': 'longContext',
  'web-search': 'webSearch',
  image: 'image',
  background: 'background',
  think: 'think',
  default: 'default',
} as const;

/**
 * The Router's scenario for `name`: long context for a request counted above the threshold, web search
 * when offered, background for a haiku name, think for reasoning, else default (Claude Code Router's order).
 */
const routerRoute = (
  config: RouteConfig,
  name: string,
  request: Pick<ModelRouteRequest, 'reasoningRequested' | 'webSearch' | 'tokenCount'>,
  note: (slot: string) => string,
): ModelRouteResult => {
  const { reasoningRequested, tokenCount } = request;
  const webSearchOffered = request.webSearch !== undefined;
  const { background, think, webSearch, longContext, longContextThreshold } = config.router;
  const [value, route] =
    longContext !== undefined && tokenCount !== undefined && tokenCount > longContextThreshold
      ? [longContext, 'long-context' as const]
      : webSearch !== undefined && webSearchOffered
        ? [webSearch, 'web-search' as const]
        : background !== undefined && name.toLowerCase().includes('haiku')
          ? [background, 'background' as const]
          : think !== undefined && reasoningRequested
            ? [think, 'think' as const]
            : [config.router.default, 'default' as const];
  const origin = `Router.${routerKeys[route]}`;
  const result = routeTo(config, value, route, origin);
  if (!result.ok) return result;
  const why =
    route === 'long-context'
      ? `; ${String(tokenCount)} tokens > longContextThreshold ${longContextThreshold}`
      : '';
  return { ok: true, value: { ...result.value, note: note(`${origin} (${result.value.model}${why})`) } };
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
