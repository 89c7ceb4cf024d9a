/**
 * Settings a host holds besides the config file: the `cursor-sdk` options and the Cursor key CCR 1/2 hands its
 * transformer instance, the CCR 3 plugin's own config. {@link resolveConfig} applies them where it applies the
 * file's, so every rule (the environment winning, `~` and relative paths, validation) is written once.
 */
import type { CursorOptions } from './config-schema.js';
import { parseCursorOptions } from './cursor-provider.js';
import { interpolateEnv, interpolateString, type Env } from './interpolate.js';

export type ConfigOverrides = {
  /**
   * Where an invalid option is reported: the field path its name follows (`['transformer options']` →
   * `transformer options.cursorMode`; `[]` → `cursorMode`), in the config's file.
   */
  fieldPath: ReadonlyArray<PropertyKey>;
  /**
   * `$VAR` / `${VAR}` interpolation as for the file's values. Off for what CCR 1/2 passes: it interpolated
   * its whole config already.
   */
  interpolate: boolean;
  /**
   * `cursor-sdk` options over the file's, key by key (the environment still wins for the run silence bounds),
   * except `sandboxEnabled`, which can only turn the sandbox on.
   */
  cursorOptions?: unknown;
  /** The Cursor key, over the Cursor provider's `api_key`; empty means none. */
  cursorApiKey?: string;
};

/** {@link ConfigOverrides} as the resolver applies them: interpolated when asked, options validated. */
export type ResolvedOverrides = { cursorOptions: CursorOptions; cursorApiKey?: string };

/**
 * Interpolates (when the overrides ask for it) and validates the overrides.
 * @throws ConfigError naming the invalid option under `overrides.fieldPath`.
 */
export const resolveConfigOverrides = (
  overrides: ConfigOverrides | undefined,
  file: string,
  env: Env,
): ResolvedOverrides => {
  if (overrides === undefined) return { cursorOptions: {} };
  const { interpolate, cursorApiKey } = overrides;
  const options = overrides.cursorOptions ?? {};
  const cursorOptions = parseCursorOptions(interpolate ? interpolateEnv(options, env) : options, {
    file,
    fieldPath: overrides.fieldPath,
  });
  if (cursorApiKey === undefined || cursorApiKey === '') return { cursorOptions };
  return { cursorOptions, cursorApiKey: interpolate ? interpolateString(cursorApiKey, env) : cursorApiKey };
};
