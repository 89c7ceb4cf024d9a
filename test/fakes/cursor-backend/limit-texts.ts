/**
 * What the fake says for each of Cursor's limits (see `RunContext.failLimit`). Cursor's own texts where
 * its users have reported them: the usage limit ("You've hit your usage limit" / "Get Cursor Pro for more
 * Agent usage, unlimited Tab, and more."), the user API key's rate limit ("User API Key Rate limit
 * exceeded") and the abuse block ("Too many free trial accounts used on this machine. … to prevent
 * abuse."; which code carries it is not known). The others are written from each limit's name, which is
 * why the bridge matches words, not sentences.
 */

import type { ConnectErrorCode } from './connect-envelope.js';
import type { FakeCursorLimit } from './run-context.js';

export type FakeLimitText = {
  /** A rate limit passes with time; a usage limit needs the user to act. */
  kind: 'rate' | 'usage';
  title: string;
  detail: string;
  code: ConnectErrorCode;
};

const rate = (title: string, detail: string): FakeLimitText => ({
  kind: 'rate',
  title,
  detail,
  code: 'resource_exhausted',
});

const usage = (
  title: string,
  detail: string,
  code: ConnectErrorCode = 'resource_exhausted',
): FakeLimitText => ({
  kind: 'usage',
  title,
  detail,
  code,
});

export const fakeLimitTexts: Readonly<Record<FakeCursorLimit, FakeLimitText>> = {
  ERROR_RATE_LIMITED: rate('Rate limit exceeded', 'Too many requests right now.'),
  ERROR_RATE_LIMITED_CHANGEABLE: rate(
    'Rate limit exceeded',
    'This model is rate limited for you right now. Switch to another model or wait.',
  ),
  ERROR_API_KEY_RATE_LIMIT: rate(
    'User API Key Rate limit exceeded',
    "Your API key's provider limit was hit.",
  ),
  ERROR_GENERIC_RATE_LIMIT_EXCEEDED: rate('Rate limit exceeded', 'We are receiving too many requests.'),
  ERROR_FREE_USER_RATE_LIMIT_EXCEEDED: rate('Rate limit exceeded', 'Free plan requests are rate limited.'),
  ERROR_PRO_USER_RATE_LIMIT_EXCEEDED: rate('Rate limit exceeded', 'Pro plan requests are rate limited.'),
  ERROR_FREE_USER_USAGE_LIMIT: usage(
    "You've hit your usage limit",
    'Get Cursor Pro for more Agent usage, unlimited Tab, and more.',
  ),
  ERROR_PRO_USER_USAGE_LIMIT: usage(
    "You've hit your usage limit",
    'Get Cursor Pro for more Agent usage, unlimited Tab, and more.',
  ),
  ERROR_USAGE_PRICING_REQUIRED: usage(
    'Usage-based pricing required',
    'Enable usage-based pricing in the dashboard to keep using this model.',
  ),
  ERROR_USAGE_PRICING_REQUIRED_CHANGEABLE: usage(
    'Usage-based pricing required',
    'Enable usage-based pricing, or switch to a model your plan includes.',
  ),
  ERROR_SUSPICIOUS_USAGE_BLOCKED: usage(
    'Too many free trial accounts used on this machine.',
    'Please upgrade to pro. We have this limit in place to prevent abuse. Please let us know if you ' +
      'believe this is a mistake.',
    'permission_denied',
  ),
};
