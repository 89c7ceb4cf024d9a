/**
 * CCR's environment interpolation for config values (v1/v2 `interpolateEnvVars`): `${ANY}` takes any
 * name, bare `$VAR` only upper-case letters, digits and `_`. An unset or empty variable leaves the
 * literal in place (CCR uses `process.env[name] || match`), which is how an unresolved placeholder is
 * detected later (see {@link containsPlaceholder}).
 */

/** Environment variables as passed in by the CLI; only `cli/` reads `process.env`. */
export type Env = Readonly<Record<string, string | undefined>>;

const placeholderPattern = /\$\{([^}]+)\}|\$([A-Z_][A-Z0-9_]*)/g;

/** Replaces every `$VAR` / `${VAR}` in one string; unset or empty variables stay literal. */
export const interpolateString = (text: string, env: Env): string =>
  text.replace(placeholderPattern, (match, braced: string | undefined, bare: string | undefined) => {
    const value = env[braced ?? bare ?? ''];
    return value === undefined || value === '' ? match : value;
  });

/**
 * Interpolates every string inside arrays and plain objects (keys are left alone). Returns a new
 * structure; the input is not modified. Non-string leaves are returned as they are.
 */
export const interpolateEnv = (value: unknown, env: Env): unknown => {
  if (typeof value === 'string') return interpolateString(value, env);
  if (Array.isArray(value)) return value.map((item) => interpolateEnv(item, env));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, interpolateEnv(item, env)]));
  }
  return value;
};

/** True when `text` still holds a `$VAR` / `${VAR}` placeholder, i.e. interpolation left it unresolved. */
export const containsPlaceholder = (text: string): boolean =>
  new RegExp(placeholderPattern.source).test(text);
