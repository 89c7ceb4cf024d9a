import { z } from 'zod';
import type { TurnWebSearch } from '../../turn/turn-request.js';

type UserLocation = NonNullable<TurnWebSearch['userLocation']>;

const keys = ['city', 'region', 'country', 'timezone'] as const;

/**
 * The user location a client gave its hosted web search (Anthropic's `user_location`, Chat's
 * `user_location.approximate`, Responses' `user_location`): its non-empty city, region, country and time
 * zone; undefined when none is set.
 */
export const readUserLocation = (
  location: Partial<Record<(typeof keys)[number], unknown>> | null | undefined,
): UserLocation | undefined => {
  const found: UserLocation = {};
  for (const key of keys) {
    const value = location?.[key];
    if (typeof value === 'string' && value !== '') found[key] = value;
  }
  return Object.keys(found).length > 0 ? found : undefined;
};

/** A web search's user location as Anthropic (`user_location`) and Chat (`user_location.approximate`) send it. */
export const userLocationSchema = z.looseObject({
  city: z.string().nullish(),
  region: z.string().nullish(),
  country: z.string().nullish(),
  timezone: z.string().nullish(),
});
