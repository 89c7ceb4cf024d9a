import type { RouterConfig } from '../config/load-config.js';
import { claudeCodeMinAutoCompactWindow } from './client-context-window.js';

type Env = Readonly<Record<string, string | undefined>>;

/** A client's command line and environment for one session on the bridge. */
export type ClientLaunch = {
  /** The executable, looked up on PATH. */
  command: string;
  args: string[];
  env: Record<string, string>;
  /** What the session did to the user's own environment, one line each, for stderr. */
  notes: string[];
};

export type ClientLaunchInput = {
  /** `http://127.0.0.1:<port>` of the bridge. */
  baseUrl: string;
  /** What the client sends as its key: the bridge's APIKEY, or any value when it has none. */
  token: string;
  router: Pick<RouterConfig, 'default' | 'think' | 'background'>;
  /** The user's environment. */
  env: Env;
  /** The client's arguments, passed through untouched. */
  args: readonly string[];
  /**
   * Claude Code: the context window, in tokens, of the Cursor model its conversation runs on (from the
   * bridge's `GET /v1/models`); unset when the bridge could not say.
   */
  contextWindow?: number;
  /** Claude Code: the user's settings set `autoCompactWindow` (it wins over the session's window). */
  autoCompactWindowSetting?: boolean;
};

const copyEnv = (env: Env): Record<string, string> => {
  const copy: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined) copy[name] = value;
  return copy;
};

/**
 * Applies the session's variables to `env`: `owned` ones always (the session does not work without them;
 * a different value of the user's is replaced, and said), `defaults` only where the user set none (a value
 * of the user's wins, and is said); `removed` are taken out (said when they were set).
 */
const applyVariables = (
  env: Record<string, string>,
  variables: { owned: Record<string, string>; defaults: Record<string, string>; removed: string[] },
): string[] => {
  const replaced: string[] = [];
  const kept: string[] = [];
  for (const [name, value] of Object.entries(variables.owned)) {
    if (env[name] !== undefined && env[name] !== value) replaced.push(name);
    env[name] = value;
  }
  for (const name of variables.removed) {
    if (env[name] !== undefined) replaced.push(name);
    delete env[name];
  }
  for (const [name, value] of Object.entries(variables.defaults)) {
    if (env[name] !== undefined && env[name] !== '') {
      if (env[name] !== value) kept.push(`${name}=${env[name]}`);
    } else env[name] = value;
  }
  return [
    ...(replaced.length === 0
      ? []
      : [
          `cursor-bridge: this session replaces ${replaced.join(', ')} of your environment (it talks to the bridge)`,
        ]),
    ...(kept.length === 0 ? [] : [`cursor-bridge: keeping your ${kept.join(', ')}`]),
  ];
};

/** `NO_PROXY` with 127.0.0.1 added when a proxy is configured, so the bridge is not reached through it. */
const noProxy = (env: Env): Record<string, string> => {
  const proxied = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'].some(
    (name) => (env[name] ?? '') !== '',
  );
  if (!proxied) return {};
  const current = env['NO_PROXY'] ?? env['no_proxy'] ?? '';
  const hosts = current.split(',').map((host) => host.trim());
  return hosts.includes('127.0.0.1') ? {} : { NO_PROXY: [current, '127.0.0.1'].filter(Boolean).join(',') };
};

/** Claude Code's window variables for {@link ClientLaunchInput.contextWindow}. */
const contextWindowVariables = (input: ClientLaunchInput): Record<string, string> => {
  const window = input.contextWindow;
  if (window === undefined) return {};
  const compactWindow = window >= claudeCodeMinAutoCompactWindow && input.autoCompactWindowSetting !== true;
  return {
    CLAUDE_CODE_MAX_CONTEXT_TOKENS: String(window),
    ...(compactWindow ? { CLAUDE_CODE_AUTO_COMPACT_WINDOW: String(window) } : {}),
  };
};

/**
 * Claude Code on the bridge. Owned: `ANTHROPIC_BASE_URL`, `ANTHROPIC_AUTH_TOKEN` (sent as
 * `Authorization: Bearer`; unlike `ANTHROPIC_API_KEY` it asks no "use this key?" question), and
 * `ANTHROPIC_API_KEY` removed (a real Anthropic key must not reach the bridge). Defaults, the user's value
 * winning: `ANTHROPIC_MODEL` = `Router.default`, the `/model` picker's `ANTHROPIC_DEFAULT_OPUS_MODEL` =
 * `Router.think`, `..._SONNET_MODEL` = `Router.default`, `..._HAIKU_MODEL` (Claude Code's background
 * calls) = `Router.background` — each as the Router's `provider,model`, so Claude Code names the Cursor
 * model that runs (it notes such a name as an unrecognized model on stderr in `-p` mode) —,
 * `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` (no telemetry or update checks to Anthropic's hosts), and
 * with a known `contextWindow`: `CLAUDE_CODE_MAX_CONTEXT_TOKENS` (the window Claude Code assumes for a model
 * name it does not know; else 1M) and `CLAUDE_CODE_AUTO_COMPACT_WINDOW` (where it compacts, for any
 * name) — the latter only from Claude Code's minimum of 100k up, and not over an `autoCompactWindow` of
 * the user's settings.
 */
export const claudeLaunch = (input: ClientLaunchInput): ClientLaunch => {
  const env = copyEnv(input.env);
  const { router } = input;
  const notes = applyVariables(env, {
    owned: { ANTHROPIC_BASE_URL: input.baseUrl, ANTHROPIC_AUTH_TOKEN: input.token, ...noProxy(input.env) },
    removed: ['ANTHROPIC_API_KEY'],
    defaults: {
      ANTHROPIC_MODEL: router.default,
      ANTHROPIC_DEFAULT_OPUS_MODEL: router.think ?? router.default,
      ANTHROPIC_DEFAULT_SONNET_MODEL: router.default,
      ANTHROPIC_DEFAULT_HAIKU_MODEL: router.background ?? router.default,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      ...contextWindowVariables(input),
    },
  });
  if (input.contextWindow !== undefined && input.autoCompactWindowSetting === true)
    notes.push('cursor-bridge: keeping the autoCompactWindow of your Claude Code settings');
  return { command: 'claude', args: [...input.args], env, notes };
};

/** The environment variable Codex reads the bridge's key from (`env_key` of the session's provider). */
export const codexKeyEnv = 'CURSOR_BRIDGE_CODEX_KEY';

/**
 * Codex on the bridge, through `-c` overrides placed before the user's arguments (a later `-c` or `-m` of
 * the user's wins): the model provider `cursor-bridge` (`base_url` = the bridge's `/v1`, `wire_api =
 * "responses"`, its key from {@link codexKeyEnv}) and `model` = `Router.default`. Nothing in
 * `~/.codex/config.toml` is written.
 */
export const codexLaunch = (input: ClientLaunchInput): ClientLaunch => {
  const env = copyEnv(input.env);
  const notes = applyVariables(env, {
    owned: { [codexKeyEnv]: input.token, ...noProxy(input.env) },
    removed: [],
    defaults: {},
  });
  const provider =
    `{ name = "cursor-bridge", base_url = ${JSON.stringify(`${input.baseUrl}/v1`)}, ` +
    `wire_api = "responses", env_key = "${codexKeyEnv}" }`;
  const args = [
    '-c',
    `model_providers.cursor-bridge=${provider}`,
    '-c',
    'model_provider="cursor-bridge"',
    '-c',
    `model=${JSON.stringify(input.router.default)}`,
    ...input.args,
  ];
  return { command: 'codex', args, env, notes };
};
