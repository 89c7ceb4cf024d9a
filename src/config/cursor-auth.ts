/**
 * Cursor API key resolution: a concrete provider `api_key` (not an unresolved placeholder) starting
 * with `crsr_`, else `CURSOR_API_KEY` from the environment. Messages never contain the key.
 */
import type { Result } from '../../lib/result.js';
import { containsPlaceholder } from './interpolate.js';
import type { Env } from './interpolate.js';

export const cursorKeyPrefix = 'crsr_';

/** A usable Cursor key and where it came from. */
export type CursorAuth = { apiKey: string; source: 'config' | 'env' };

/** Why no usable key was found; `message` is the user-facing fix (never the key itself). */
export type CursorAuthFailure = { reason: 'not-found' | 'wrong-prefix'; message: string };

export type CursorAuthResult = Result<CursorAuth, CursorAuthFailure>;

const notFoundMessage =
  'Cursor API key not found: Set Providers[].api_key to a key starting with crsr_, or export CURSOR_API_KEY. ' +
  'Placeholders like $CURSOR_API_KEY only work when the env var is actually set.';

/**
 * Resolution order:
 * 1. `configuredKey` (the provider's `api_key` after interpolation) when it starts with `crsr_` and holds
 *    no unresolved `$VAR` / `${VAR}` placeholder;
 * 2. otherwise `env.CURSOR_API_KEY` when it starts with `crsr_`.
 *
 * Failing both: "Wrong key prefix" when a concrete key was given in either place (names where, and
 * says `not sk-` for OpenAI/Anthropic-style keys); otherwise "Cursor API key not found" (nothing set,
 * or only an unresolved placeholder). Surrounding whitespace is ignored.
 */
export const resolveCursorApiKey = (configuredKey: string | undefined, env: Env): CursorAuthResult => {
  const fromConfig = configuredKey?.trim() ?? '';
  const fromEnv = env['CURSOR_API_KEY']?.trim() ?? '';
  const configConcrete = fromConfig !== '' && !containsPlaceholder(fromConfig);
  if (configConcrete && fromConfig.startsWith(cursorKeyPrefix))
    return { ok: true, value: { apiKey: fromConfig, source: 'config' } };
  if (fromEnv.startsWith(cursorKeyPrefix)) return { ok: true, value: { apiKey: fromEnv, source: 'env' } };

  const wrongKeys = [
    ...(configConcrete ? [{ where: 'Providers[].api_key', key: fromConfig }] : []),
    ...(fromEnv === '' ? [] : [{ where: 'CURSOR_API_KEY', key: fromEnv }]),
  ];
  if (wrongKeys.length === 0) return { ok: false, error: { reason: 'not-found', message: notFoundMessage } };
  const notSk = wrongKeys.some(({ key }) => key.startsWith('sk-')) ? ', not sk-' : '';
  const where = wrongKeys.map(({ where }) => where).join(' and ');
  const message =
    `Wrong key prefix: Cursor dashboard keys start with crsr_${notSk}. ` +
    `Replace the key in ${where} with an API key from the Cursor dashboard (it starts with crsr_).`;
  return { ok: false, error: { reason: 'wrong-prefix', message } };
};
