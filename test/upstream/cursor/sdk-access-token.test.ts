import { describe, expect, it } from 'vitest';
import {
  AccessTokenShare,
  KEY_EXCHANGE_PATH,
  sdkAccessTokenShare,
  type FetchHost,
} from '../../../src/upstream/cursor/sdk-access-token.js';

const backend = 'http://127.0.0.1:4000';
const exchangeUrl = `${backend}${KEY_EXCHANGE_PATH}`;
const minute = 60_000;

/** A JWT as Cursor's exchange returns it (the signature is never checked), expiring at `expMs`. */
const jwt = (expMs: number | undefined, serial: number): string => {
  const part = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none' })}.${part({ sub: `user-${serial}`, ...(expMs === undefined ? {} : { exp: expMs / 1000 }) })}.sig`;
};

type Answer = { status: number; body: string } | 'network-error';

/**
 * The `fetch` the share replaces: records every request it gets, and answers exchanges with a new token
 * (expiring `lifetimeMs` after the clock's now) unless `next` holds what to answer, or `hold` is set (the
 * exchange then waits for `release`).
 */
const createBackend = (clock: { now: number }, lifetimeMs: number | undefined = 60 * minute) => {
  const requests: Array<{ url: string; method: string; authorization: string | null }> = [];
  const next: Answer[] = [];
  let serial = 0;
  let held: Array<() => void> | undefined;
  const fetch = async (
    input: Parameters<typeof globalThis.fetch>[0],
    init?: RequestInit,
  ): Promise<Response> => {
    const url = input instanceof Request ? input.url : String(input);
    requests.push({
      url,
      method: init?.method ?? 'GET',
      authorization: new Headers(init?.headers).get('authorization'),
    });
    if (held !== undefined) await new Promise<void>((resolve) => held?.push(resolve));
    if (!url.endsWith(KEY_EXCHANGE_PATH)) return new Response('other', { status: 200 });
    const answer = next.shift();
    if (answer === 'network-error') throw new TypeError('fetch failed');
    if (answer !== undefined) return new Response(answer.body, { status: answer.status });
    serial += 1;
    const expiry = lifetimeMs === undefined ? undefined : clock.now + lifetimeMs;
    return Response.json({ accessToken: jwt(expiry, serial) });
  };
  return {
    host: { fetch } as FetchHost,
    fetch,
    requests,
    next,
    exchanges: () => requests.filter((request) => request.url.endsWith(KEY_EXCHANGE_PATH)).length,
    hold: () => {
      held = [];
    },
    release: () => {
      const waiting = held ?? [];
      held = undefined;
      for (const resolve of waiting) resolve();
    },
  };
};

/** The SDK's exchange call, as `@cursor/sdk` 1.0.32 makes it. */
const exchange = (host: FetchHost, apiKey = 'crsr_a', signal?: AbortSignal): Promise<Response> =>
  host.fetch(exchangeUrl, {
    method: 'POST',
    headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
    body: '{}',
    ...(signal === undefined ? {} : { signal }),
  });

const tokenOf = async (response: Response): Promise<string> =>
  ((await response.json()) as { accessToken: string }).accessToken;

const setUp = (lifetimeMs?: number) => {
  const clock = { now: 1_000_000 };
  const cursor = createBackend(clock, lifetimeMs);
  const share = new AccessTokenShare(cursor.host, () => clock.now);
  const owner = {};
  share.join(owner, 'crsr_a');
  return { clock, cursor, share, owner };
};

describe("the SDK's key exchanges answered from one token per process", () => {
  it('answers every exchange of a joined key from one exchange with Cursor, each caller a response of its own', async () => {
    const { cursor } = setUp();
    const first = await tokenOf(await exchange(cursor.host));
    const again = await Promise.all([exchange(cursor.host), exchange(cursor.host)]);
    expect(again.map((response) => response.status)).toEqual([200, 200]);
    expect(await Promise.all(again.map(tokenOf))).toEqual([first, first]);
    expect(cursor.exchanges()).toBe(1);
  });

  it('passes everything else through untouched: other URLs, methods, keys, and `Request` objects', async () => {
    const { cursor } = setUp();
    await cursor.host.fetch(`${backend}/v1/models`, { headers: { Authorization: 'Bearer crsr_a' } });
    await cursor.host.fetch(exchangeUrl, { headers: { Authorization: 'Bearer crsr_a' } });
    await exchange(cursor.host, 'crsr_not_ours');
    await exchange(cursor.host, 'crsr_not_ours');
    await cursor.host.fetch(
      new Request(exchangeUrl, { method: 'POST', headers: { Authorization: 'Bearer crsr_a' } }),
    );
    expect(cursor.requests.map(({ url, method }) => `${method} ${url}`)).toEqual([
      `GET ${backend}/v1/models`,
      `GET ${exchangeUrl}`,
      `POST ${exchangeUrl}`,
      `POST ${exchangeUrl}`,
      `GET ${exchangeUrl}`, // the Request's method travels in it, not in `init`
    ]);
    // A joined key's exchange is still the caller's request, authorization and all.
    await exchange(cursor.host);
    expect(cursor.requests.at(-1)).toEqual({
      url: exchangeUrl,
      method: 'POST',
      authorization: 'Bearer crsr_a',
    });
  });

  it('shares an exchange in flight among the callers that arrive meanwhile', async () => {
    const { cursor } = setUp();
    cursor.hold();
    const waiting = [exchange(cursor.host), exchange(cursor.host), exchange(cursor.host)];
    await new Promise((resolve) => setTimeout(resolve, 0));
    cursor.release();
    const tokens = await Promise.all((await Promise.all(waiting)).map(tokenOf));
    expect(new Set(tokens).size).toBe(1);
    expect(cursor.exchanges()).toBe(1);
  });

  it('never keeps a failed exchange: every caller meanwhile gets the failure, the next one asks Cursor', async () => {
    const { cursor } = setUp();
    cursor.next.push({ status: 500, body: 'busy' });
    cursor.hold();
    const waiting = [exchange(cursor.host), exchange(cursor.host)];
    await new Promise((resolve) => setTimeout(resolve, 0));
    cursor.release();
    const failed = await Promise.all(waiting);
    expect(failed.map((response) => response.status)).toEqual([500, 500]);
    expect(await Promise.all(failed.map((response) => response.text()))).toEqual(['busy', 'busy']);

    cursor.next.push('network-error');
    await expect(exchange(cursor.host)).rejects.toThrow('fetch failed');
    cursor.next.push({ status: 200, body: '{"accessToken":""}' });
    expect((await exchange(cursor.host)).status).toBe(200);
    expect(await tokenOf(await exchange(cursor.host))).toMatch(/\.sig$/);
    expect(cursor.exchanges()).toBe(4);
  });

  it("serves a token until the SDK's own refresh point, renewing it in the background from 5 minutes on", async () => {
    const { clock, cursor } = setUp(60 * minute);
    const first = await tokenOf(await exchange(cursor.host));

    clock.now += 5 * minute - 1;
    expect(await tokenOf(await exchange(cursor.host))).toBe(first);
    expect(cursor.exchanges()).toBe(1);

    // From 5 minutes on, a served token also starts one renewal; the caller does not wait for it.
    clock.now += 1;
    cursor.hold();
    expect(await tokenOf(await exchange(cursor.host))).toBe(first);
    expect(await tokenOf(await exchange(cursor.host))).toBe(first);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(cursor.exchanges()).toBe(2);
    cursor.release();
    await new Promise((resolve) => setTimeout(resolve, 0));
    const renewed = await tokenOf(await exchange(cursor.host));
    expect(renewed).not.toBe(first);

    // Unused until 5 minutes before its expiry: the caller waits for a new exchange.
    clock.now += 55 * minute;
    const fresh = await tokenOf(await exchange(cursor.host));
    expect(fresh).not.toBe(renewed);
    expect(cursor.exchanges()).toBe(3);
  });

  it('serves a short-lived token half its life, and one without `exp` as if it lived 30 minutes', async () => {
    const short = setUp(6 * minute);
    const first = await tokenOf(await exchange(short.cursor.host));
    short.clock.now += 3 * minute - 1;
    expect(await tokenOf(await exchange(short.cursor.host))).toBe(first);
    short.clock.now += 1;
    expect(await tokenOf(await exchange(short.cursor.host))).not.toBe(first);

    const unbounded = setUp(undefined);
    const token = await tokenOf(await exchange(unbounded.cursor.host));
    unbounded.clock.now += 25 * minute - 1;
    expect(await tokenOf(await exchange(unbounded.cursor.host))).toBe(token);
    unbounded.clock.now += 1;
    unbounded.cursor.hold(); // the renewal started at 5 minutes must not be the answer
    const waiting = exchange(unbounded.cursor.host);
    await new Promise((resolve) => setTimeout(resolve, 0));
    unbounded.cursor.release();
    expect(await tokenOf(await waiting)).not.toBe(token);
  });

  it('never serves a token that expired before it arrived', async () => {
    const { cursor } = setUp(-minute);
    await exchange(cursor.host);
    await exchange(cursor.host);
    expect(cursor.exchanges()).toBe(2);
  });

  it('drops a key’s token when Cursor refuses the key: forget, or a 401 / 403 from the exchange', async () => {
    const { cursor, share } = setUp();
    const first = await tokenOf(await exchange(cursor.host));
    share.forget('crsr_a');
    const second = await tokenOf(await exchange(cursor.host));
    expect(second).not.toBe(first);
    expect(cursor.exchanges()).toBe(2);

    // A refused exchange (a renewal, here) takes the held token with it.
    cursor.next.push({ status: 401, body: '{"error":{"message":"Invalid API key"}}' });
    share.forget('crsr_other'); // another key's refusal changes nothing for this one
    await exchange(cursor.host);
    expect(cursor.exchanges()).toBe(2);
  });

  it('keeps an exchange that was in flight when the key was refused out of the cache', async () => {
    const { cursor, share } = setUp();
    cursor.hold();
    const before = exchange(cursor.host);
    await new Promise((resolve) => setTimeout(resolve, 0));
    share.forget('crsr_a');
    const after = exchange(cursor.host);
    await new Promise((resolve) => setTimeout(resolve, 0));
    cursor.release();
    const [old, fresh] = await Promise.all([before.then(tokenOf), after.then(tokenOf)]);
    expect(old).not.toBe(fresh);
    expect(await tokenOf(await exchange(cursor.host))).toBe(fresh);
    expect(cursor.exchanges()).toBe(2);
  });

  it('a caller that stops waiting does not stop the shared exchange', async () => {
    const { cursor } = setUp();
    cursor.hold();
    const aborting = new AbortController();
    const gaveUp = exchange(cursor.host, 'crsr_a', aborting.signal);
    const stays = exchange(cursor.host);
    await new Promise((resolve) => setTimeout(resolve, 0));
    aborting.abort(new Error('gave up'));
    await expect(gaveUp).rejects.toThrow('gave up');
    cursor.release();
    expect((await stays).status).toBe(200);
    await expect(exchange(cursor.host, 'crsr_a', AbortSignal.abort(new Error('late')))).rejects.toThrow(
      'late',
    );
    expect(cursor.exchanges()).toBe(1);
  });

  it('keeps tokens per backend and per key', async () => {
    const { cursor, share } = setUp();
    share.join({}, 'crsr_b');
    const a = await tokenOf(await exchange(cursor.host, 'crsr_a'));
    const b = await tokenOf(await exchange(cursor.host, 'crsr_b'));
    const elsewhere = await cursor.host.fetch(`http://127.0.0.1:5000${KEY_EXCHANGE_PATH}`, {
      method: 'POST',
      headers: { Authorization: 'Bearer crsr_a' },
      body: '{}',
    });
    expect(new Set([a, b, await tokenOf(elsewhere)]).size).toBe(3);
    expect(await tokenOf(await exchange(cursor.host, 'crsr_b'))).toBe(b);
    expect(cursor.exchanges()).toBe(3);
  });

  it('installs its fetch while an owner is live; the last to leave puts the original back and drops the tokens', async () => {
    const clock = { now: 0 };
    const cursor = createBackend(clock);
    const share = new AccessTokenShare(cursor.host, () => clock.now);
    const [first, second] = [{}, {}];
    share.join(first, 'crsr_a');
    share.join(second, 'crsr_a');
    expect(cursor.host.fetch).not.toBe(cursor.fetch);
    await exchange(cursor.host);
    share.leave(first);
    await exchange(cursor.host);
    expect(cursor.exchanges()).toBe(1);
    share.leave(second);
    expect(cursor.host.fetch).toBe(cursor.fetch);

    share.join(first, 'crsr_a');
    await exchange(cursor.host);
    expect(cursor.exchanges()).toBe(2);
  });

  it('stays in place, passing everything through, when someone replaced fetch after it', async () => {
    const clock = { now: 0 };
    const cursor = createBackend(clock);
    const share = new AccessTokenShare(cursor.host, () => clock.now);
    const owner = {};
    share.join(owner, 'crsr_a');
    const ours = cursor.host.fetch;
    const theirs: typeof fetch = (input, init) => ours(input, init);
    cursor.host.fetch = theirs;
    share.leave(owner);
    expect(cursor.host.fetch).toBe(theirs);
    await exchange(cursor.host);
    await exchange(cursor.host);
    expect(cursor.exchanges()).toBe(2);
  });

  it('is one share per fetch holder, shared by every upstream of the process', () => {
    const host: FetchHost = { fetch: globalThis.fetch };
    expect(sdkAccessTokenShare(host)).toBe(sdkAccessTokenShare(host));
    expect(sdkAccessTokenShare({ fetch: globalThis.fetch })).not.toBe(sdkAccessTokenShare(host));
  });
});
