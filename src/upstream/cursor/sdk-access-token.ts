/**
 * Shares the access token the process already holds among the SDK's clients, so a new conversation does
 * not exchange the API key again on its path.
 *
 * `@cursor/sdk` (1.0.32) exchanges the API key for a short-lived access token (`POST
 * {backend}/auth/exchange_user_api_key`, a JWT) once per *client*, and builds new clients all the time: each
 * executor its dashboard transport and its Statsig bootstrap, and each executor's agent client at the
 * executor's first run. The bridge runs each conversation in a scratch workspace of its own, so on an
 * executor of its own (warmed by the pool, but never run): every new conversation's first run exchanged the
 * key before it opened its stream, one round trip on its path. No option of the SDK takes a token or a
 * transport, but every exchange goes through the global `fetch` (its Connect RPCs do not), so this module
 * answers the exchanges of the bridge's own API keys from one cache per key and backend:
 *
 * - The first exchange goes to Cursor; exchanges that arrive while it is in flight share it (each gets its own
 *   copy of the answer, success or failure). A failed exchange is never cached; a refused one (401, 403) also
 *   drops the token held for that key.
 * - A token is served until the point where the SDK itself would refresh it (5 min before its `exp`, or half
 *   its life if that is later; no `exp`: 30 min, as the SDK assumes), counted from when its answer
 *   arrived, as the SDK counts. A client given it later refreshes by the same `exp`, so no request carries a
 *   token past the point where the SDK would have replaced it: sharing changes how many exchanges there are.
 * - Past half of that span, or 5 minutes after it was issued, serving it also starts one exchange in the
 *   background, so a process with steady traffic never waits for one again, and a token Cursor stopped
 *   accepting before its `exp` is replaced within minutes even if nothing reported it.
 * - {@link AccessTokenShare.forget} drops a key's token at once: the upstream calls it when Cursor refuses
 *   the key in a create, a send or a run. The SDK's own retry inside a run whose token was refused (it drops
 *   its copy and asks again) is still answered with the held token, so that run fails as refused; the
 *   conversations after it get a new token.
 *
 * Everything else passes to the `fetch` it replaced untouched: other URLs, other methods, and exchanges of
 * API keys no live upstream holds. The module installs its `fetch` while at least one upstream uses it and
 * puts the original back (and drops every token) when the last one leaves, unless someone replaced `fetch`
 * after it: then its own stays in place, passing everything through.
 */

import { isRecord } from '../../../lib/is-record.js';

/** The path of the SDK's key exchange, under the backend URL. */
export const KEY_EXCHANGE_PATH = '/auth/exchange_user_api_key';

/** What holds the `fetch` the SDK calls (`globalThis` in production). */
export type FetchHost = { fetch: typeof fetch };

/** The SDK's token lifetime when the JWT has no `exp`, and how long before expiry it refreshes. */
const assumedLifetimeMs = 30 * 60_000;
const refreshBeforeExpiryMs = 5 * 60_000;
/** Age at which serving a token also renews it in the background (earlier when half its span is gone). */
const renewAfterMs = 5 * 60_000;

/** An exchange's answer, kept so that every caller gets a `Response` of its own. */
type Answer = { status: number; statusText: string; contentType: string | null; body: string };

type HeldToken = { answer: Answer; refreshAtMs: number; renewAtMs: number };

/** The key exchange a `fetch` call is, or undefined for any other request. */
type Exchange = { url: string; apiKey: string; headers: Headers; body: RequestInit['body'] };

const readExchange = (
  input: Parameters<typeof fetch>[0],
  init: RequestInit | undefined,
): Exchange | undefined => {
  if (typeof input !== 'string' && !(input instanceof URL)) return undefined;
  const url = String(input);
  if (!url.endsWith(KEY_EXCHANGE_PATH) || (init?.method ?? 'GET').toUpperCase() !== 'POST') return undefined;
  const headers = new Headers(init?.headers);
  const apiKey = /^Bearer (.+)$/.exec(headers.get('authorization') ?? '')?.[1];
  return apiKey === undefined ? undefined : { url, apiKey, headers, body: init?.body };
};

/** The access token in an exchange's JSON answer (`{ accessToken }`), as the SDK reads it. */
const readAccessToken = (body: string): string | undefined => {
  try {
    const parsed: unknown = JSON.parse(body);
    return isRecord(parsed) && typeof parsed['accessToken'] === 'string' && parsed['accessToken'] !== ''
      ? parsed['accessToken']
      : undefined;
  } catch {
    return undefined;
  }
};

/** The token's expiry as the SDK computes it: the JWT's `exp` (unverified), else 30 min from `nowMs`. */
const expiryOf = (token: string, nowMs: number): number => {
  try {
    const payload: unknown = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8'));
    const exp = isRecord(payload) ? payload['exp'] : undefined;
    const expiresAtMs = typeof exp === 'number' ? exp * 1000 : Number.NaN;
    return Number.isFinite(expiresAtMs) && expiresAtMs > 0 ? expiresAtMs : nowMs + assumedLifetimeMs;
  } catch {
    return nowMs + assumedLifetimeMs;
  }
};

const toResponse = (answer: Answer): Response =>
  new Response(answer.body, {
    status: answer.status,
    statusText: answer.statusText,
    ...(answer.contentType === null ? {} : { headers: { 'content-type': answer.contentType } }),
  });

/** Settles with `work`, or rejects as `fetch` does when `signal` aborts first. */
const abortable = <T>(work: Promise<T>, signal: AbortSignal | null | undefined): Promise<T> => {
  if (signal === undefined || signal === null) return work;
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
};

export class AccessTokenShare {
  readonly #host: FetchHost;
  readonly #now: () => number;
  /** The API key of each live owner (an upstream): only their exchanges are answered from the cache. */
  readonly #owners = new Map<object, string>();
  /** Tokens and in-flight exchanges, by backend URL and API key. */
  readonly #tokens = new Map<string, HeldToken>();
  readonly #inFlight = new Map<string, Promise<Answer>>();
  /** Bumped when tokens are dropped: an exchange started before keeps its answer out of the cache. */
  #generation = 0;
  /** The `fetch` replaced while installed. */
  #original: typeof fetch | undefined;
  readonly #fetch: typeof fetch;

  constructor(host: FetchHost, now: () => number = Date.now) {
    this.#host = host;
    this.#now = now;
    this.#fetch = (input, init) => this.#handle(input, init);
  }

  /** Starts answering `apiKey`'s exchanges from the cache (installing this module's `fetch` if needed). */
  join(owner: object, apiKey: string): void {
    this.#owners.set(owner, apiKey);
    if (this.#original !== undefined) return;
    this.#original = this.#host.fetch;
    this.#host.fetch = this.#fetch;
  }

  /** `owner` is gone; after the last one, the original `fetch` is back and no token is held. */
  leave(owner: object): void {
    if (!this.#owners.delete(owner) || this.#owners.size > 0) return;
    this.#tokens.clear();
    this.#inFlight.clear();
    this.#generation += 1;
    if (this.#original !== undefined && this.#host.fetch === this.#fetch) {
      this.#host.fetch = this.#original;
      this.#original = undefined;
    }
  }

  /** Drops the token held for `apiKey` (Cursor refused it): its next exchange goes to Cursor. */
  forget(apiKey: string): void {
    for (const cacheKey of [...this.#tokens.keys(), ...this.#inFlight.keys()]) {
      if (!cacheKey.endsWith(`\n${apiKey}`)) continue;
      this.#tokens.delete(cacheKey);
      this.#inFlight.delete(cacheKey);
    }
    this.#generation += 1;
  }

  #handle(input: Parameters<typeof fetch>[0], init: RequestInit | undefined): Promise<Response> {
    const original = this.#original ?? this.#host.fetch;
    const exchange = readExchange(input, init);
    if (exchange === undefined || ![...this.#owners.values()].includes(exchange.apiKey)) {
      return original(input, init);
    }
    const cacheKey = `${exchange.url}\n${exchange.apiKey}`;
    const held = this.#tokens.get(cacheKey);
    const now = this.#now();
    if (held !== undefined && now < held.refreshAtMs) {
      if (now >= held.renewAtMs) this.#exchange(cacheKey, exchange, original).catch(() => undefined);
      return abortable(Promise.resolve(toResponse(held.answer)), init?.signal);
    }
    return abortable(this.#exchange(cacheKey, exchange, original), init?.signal).then(toResponse);
  }

  /** One exchange with Cursor per key at a time; its answer is cached when it carries a token. */
  #exchange(cacheKey: string, exchange: Exchange, original: typeof fetch): Promise<Answer> {
    const running = this.#inFlight.get(cacheKey);
    if (running !== undefined) return running;
    const generation = this.#generation;
    const asked = (async (): Promise<Answer> => {
      // No caller's signal: the exchange is shared, each caller stops waiting on its own.
      const response = await original(exchange.url, {
        method: 'POST',
        headers: exchange.headers,
        ...(exchange.body === undefined ? {} : { body: exchange.body }),
      });
      const answer: Answer = {
        status: response.status,
        statusText: response.statusText,
        contentType: response.headers.get('content-type'),
        body: await response.text(),
      };
      const token = response.ok ? readAccessToken(answer.body) : undefined;
      if (token !== undefined && generation === this.#generation) {
        const issuedAtMs = this.#now();
        const expiresAtMs = expiryOf(token, issuedAtMs);
        const refreshAtMs = Math.max(
          expiresAtMs - refreshBeforeExpiryMs,
          issuedAtMs + (expiresAtMs - issuedAtMs) / 2,
        );
        const renewAtMs = Math.min(issuedAtMs + (refreshAtMs - issuedAtMs) / 2, issuedAtMs + renewAfterMs);
        this.#tokens.set(cacheKey, { answer, refreshAtMs, renewAtMs });
      } else if (response.status === 401 || response.status === 403) {
        this.#tokens.delete(cacheKey);
      }
      return answer;
    })().finally(() => {
      if (this.#inFlight.get(cacheKey) === asked) this.#inFlight.delete(cacheKey);
    });
    this.#inFlight.set(cacheKey, asked);
    return asked;
  }
}

const shares = new WeakMap<FetchHost, AccessTokenShare>();

/** The share of `host` (one per `fetch` holder, shared by every upstream of the process). */
export const sdkAccessTokenShare = (host: FetchHost): AccessTokenShare => {
  let share = shares.get(host);
  if (share === undefined) {
    share = new AccessTokenShare(host);
    shares.set(host, share);
  }
  return share;
};
