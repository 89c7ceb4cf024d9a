import type { Result } from '../../lib/result.js';
import type { Env } from './interpolate.js';
import { logLevels, type LogLevel } from './config-schema.js';

/**
 * The log level in effect: `LOG_LEVEL` from the environment (case-insensitive) over the config's. An
 * unset or empty variable means the config's level; any other value must be one of {@link logLevels},
 * and the error names the variable, the allowed levels and what was given.
 */
export const resolveLogLevel = (env: Env, configured: LogLevel): Result<LogLevel, string> => {
  const given = env['LOG_LEVEL']?.trim().toLowerCase();
  if (given === undefined || given === '') return { ok: true, value: configured };
  const level = logLevels.find((name) => name === given);
  return level === undefined
    ? { ok: false, error: `LOG_LEVEL must be one of ${logLevels.join(', ')}, got "${given}"` }
    : { ok: true, value: level };
};
