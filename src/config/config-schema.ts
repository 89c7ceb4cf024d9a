/**
 * The CCR-style `config.json` (CCR v1/v2 keys plus the bridge's own), validated once at startup after
 * env interpolation. Loose: unknown keys are kept, so a full CCR config with keys the bridge does not
 * use (`PROXY_URL`, `StatusLine`, …) is accepted as it is.
 * The CCR keys it reads: `HOST`, `PORT`, `APIKEY`, `LOG_LEVEL`, `Providers[]` (`name`, `api_base_url`,
 * `api_key`, `models`, `transformer.use`) and `Router` (`default`, `background`, `think`, `longContext`,
 * `webSearch`, `image`: `"provider,model"`), as Claude Code Router 1.x / 2.x spells them.
 */
import ipaddr from 'ipaddr.js';
import { z } from 'zod';

/** Integers may arrive as strings after `$PORT`-style interpolation. */
const integerSchema = z.union([z.number().int(), z.string().regex(/^\d+$/).transform(Number)], {
  error: 'expected an integer',
});
const countSchema = integerSchema.refine((n) => n >= 0, { error: 'expected a non-negative integer' });

const optionsSchema = z.record(z.string(), z.unknown(), { error: 'expected an options object' });

/** One `transformer.use` entry: `"name"` or `["name", {options}]`. */
export const transformerUseEntrySchema = z.union(
  [z.string().min(1), z.tuple([z.string().min(1), optionsSchema.optional()])],
  {
    error: 'expected a transformer name or ["name", {options}]',
  },
);
export type TransformerUseEntry = z.infer<typeof transformerUseEntrySchema>;

const transformerUseSchema = z.looseObject({ use: z.array(transformerUseEntrySchema).optional() });

/** Provider-level `use` plus per-model `"<model>": { use }` overrides. */
export const providerTransformerSchema = transformerUseSchema.catchall(transformerUseSchema);

export const providerSchema = z.looseObject({
  name: z.string().min(1),
  api_base_url: z.string().optional(),
  api_key: z.string().optional(),
  models: z.array(z.string().min(1)).default([]),
  transformer: providerTransformerSchema.optional(),
});
export type Provider = z.infer<typeof providerSchema>;

/** A Router value: `"provider,model"` (empty means unset). */
const routeSchema = z
  .string()
  .regex(/^\s*$|^[^,]+,.+$/, { error: 'expected "provider,model", e.g. "cursor,composer-2"' });

export const routerSchema = z.looseObject({
  default: routeSchema.optional(),
  background: routeSchema.optional(),
  think: routeSchema.optional(),
  longContext: routeSchema.optional(),
  longContextThreshold: integerSchema.optional(),
  webSearch: routeSchema.optional(),
  image: routeSchema.optional(),
});
export type Router = z.infer<typeof routerSchema>;

export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
/** pino's level names. */
export type LogLevel = (typeof logLevels)[number];

/** `mcpHost`: the standalone tool host (`cursor-bridge mcp-host`). */
export const mcpHostConfigSchema = z.looseObject({
  /** Bearer token agents (`/mcp`) and tool hosts (`/host`) must present; `CURSOR_BRIDGE_MCP_TOKEN` wins. */
  token: z.string().optional(),
  host: z.string().min(1).optional(),
  port: integerSchema
    .refine((port) => port >= 0 && port <= 65535, { error: 'expected a port number 0-65535' })
    .optional(),
  /** Per-call deadline in ms (default 600000, 10 min). */
  callDeadlineMs: integerSchema
    .refine((ms) => ms > 0, { error: 'expected a positive number of milliseconds' })
    .optional(),
  /** `notifications/progress` interval in ms while a call is parked (default 10000; 0 = off). */
  progressIntervalMs: integerSchema.optional(),
  /** Host header names accepted besides the bound address (DNS-rebinding allow-list). */
  allowedHosts: z.array(z.string().min(1)).optional(),
});
export type McpHostConfigFile = z.infer<typeof mcpHostConfigSchema>;

/** `cursorImages`: images a client sends by URL, and how the bridge fetches them. */
export const imagesConfigSchema = z.looseObject({
  /** Fetch images given by URL (default true); off, each becomes a note to the model. */
  fetchUrls: z.boolean().optional(),
  /** Largest image fetched, in bytes (default 10 MiB). */
  maxFetchBytes: integerSchema
    .refine((n) => n >= 1, { error: 'expected a positive number of bytes' })
    .optional(),
  /** Bound on one image's fetch, redirects included (ms, default 20000). */
  fetchTimeoutMs: integerSchema
    .refine((ms) => ms >= 1, { error: 'expected a positive number of milliseconds' })
    .optional(),
  /**
   * Networks (CIDR) the bridge may fetch images from although they are not public: loopback, private,
   * link-local and the like are refused unless listed here (default none).
   */
  allowNetworks: z
    .array(
      z.string().refine((cidr) => ipaddr.isValidCIDR(cidr), { error: 'expected a CIDR, e.g. "10.0.0.0/8"' }),
    )
    .optional(),
  /**
   * Cursor model ids that take no images: a request's images become notes to such a model (Cursor's
   * catalog does not say which models see images). Default none.
   */
  textOnlyModels: z.array(z.string().min(1)).optional(),
});
export type ImagesConfigFile = z.infer<typeof imagesConfigSchema>;

export const configFileSchema = z.looseObject({
  HOST: z.string().min(1).optional(),
  PORT: integerSchema
    .refine((port) => port >= 0 && port <= 65535, { error: 'expected a port number 0-65535' })
    .optional(),
  APIKEY: z.string().optional(),
  LOG_LEVEL: z
    .preprocess((level) => (typeof level === 'string' ? level.toLowerCase() : level), z.enum(logLevels))
    .optional(),
  LOG: z.boolean().optional(),
  Providers: z.array(providerSchema).optional(),
  Router: routerSchema.optional(),
  transformers: z
    .array(z.looseObject({ path: z.string().min(1), options: optionsSchema.optional() }))
    .optional(),
  /** Directory whose files override the packaged `workspace-templates/`. */
  cursorTemplatesDir: z.string().min(1).optional(),
  /** Where scratch workspaces live (default `~/.claude-code-router/cursor-sdk-workspaces`). */
  cursorWorkspacesDir: z.string().min(1).optional(),
  mcpHost: mcpHostConfigSchema.optional(),
  /** Live conversations kept (LRU cap, default 32); `CURSOR_BRIDGE_MAX_SESSIONS` wins. */
  cursorMaxSessions: integerSchema.refine((n) => n >= 1, { error: 'expected a positive integer' }).optional(),
  /**
   * How long a streaming response may stay blocked on a client that does not read before its run is
   * cancelled (ms, default 30000); `CURSOR_BRIDGE_STALL_TIMEOUT_MS` wins.
   */
  cursorStallTimeoutMs: integerSchema
    .refine((ms) => ms >= 1, { error: 'expected a positive number of milliseconds' })
    .optional(),
  /**
   * The most pre-warmed scratch workspaces (each with its Cursor executor) kept for new conversations,
   * default the session cap (at most 32); 0 disables; `CURSOR_BRIDGE_WARM_WORKSPACES` wins.
   */
  cursorWarmWorkspaces: countSchema.optional(),
  /**
   * Pre-warmed workspaces the bridge still builds when its sessions fill the cap (the pool's warm-ups
   * stop at `cursorMaxSessions` + this many executors), default 4; `CURSOR_BRIDGE_WARM_WORKSPACES_AT_CAP`
   * wins.
   */
  cursorWarmWorkspacesAtCap: countSchema.optional(),
  cursorImages: imagesConfigSchema.optional(),
});
export type ConfigFile = z.infer<typeof configFileSchema>;

export const cursorModes = ['bridge', 'plan', 'agent'] as const;
/** `bridge`: the client hosts tools; `plan`: text only; `agent`: Cursor's own tools. */
export type CursorMode = (typeof cursorModes)[number];

/** Options of the `cursor-sdk` transformer (`["cursor-sdk", {…}]` or `transformers[].options`). */
export const cursorOptionsSchema = z.looseObject({
  cursorMode: z.enum(cursorModes).optional(),
  cursorCwd: z.string().min(1).optional(),
  sandboxEnabled: z.boolean().optional(),
  /** Longest wait (ms) for a run's first upstream event; 0 disables. */
  firstEventTimeoutMs: z.number().int().nonnegative().optional(),
  /** Longest silence (ms) between upstream events while no tool call is parked; 0 disables. */
  idleTimeoutMs: z.number().int().nonnegative().optional(),
});
export type CursorOptions = z.infer<typeof cursorOptionsSchema>;
