import type { TurnError } from '../../turn/turn-error.js';

/**
 * OpenAI's rate-limit headers for a rate limit whose upstream said when it resets: no request left, and
 * the reset as OpenAI writes it (`x-ratelimit-reset-requests: 12s`). None otherwise: the limit itself
 * (`x-ratelimit-limit-requests`) is never known, and a reset is not made up.
 * @see https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers
 */
export const createOpenaiRateLimitHeaders = (error: TurnError): Record<string, string> =>
  error.kind !== 'rate-limit' || error.resetSeconds === undefined
    ? {}
    : {
        'x-ratelimit-remaining-requests': '0',
        'x-ratelimit-reset-requests': `${error.resetSeconds}s`,
      };
