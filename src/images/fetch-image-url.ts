/**
 * Fetches an image a client gave by URL, bounded (bytes, time, redirects) and from public addresses only, so
 * a request can never make the bridge reach its own network. Hand-written on `node:http`/`node:https`
 * because the address check must run on the address actually connected to: each hop's host is resolved
 * once, by the request's own `lookup`, which refuses the host if any address is not allowed and hands the
 * socket the addresses it checked (no second resolution, so no DNS rebinding). Node's `fetch` (undici)
 * takes a per-request lookup only through the undici package's dispatcher.
 */

import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { request as httpRequest, STATUS_CODES, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction, type Socket } from 'node:net';

import ipaddr from 'ipaddr.js';

import { clipText } from '../../lib/clip-text.js';
import type { Result } from '../../lib/result.js';
import { errorMessage } from '../../lib/error-message.js';

/** `dns.lookup` in its `{ all: true }` callback form. */
export type ImageFetchLookup = (
  hostname: string,
  options: LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

export type ImageFetchOptions = {
  /** Largest body read, in bytes (read as a stream, aborted past it). */
  maxBytes: number;
  /** Bound on DNS resolution + TCP/TLS connect of one hop. */
  connectTimeoutMs: number;
  /** Bound on the whole fetch, redirects included. */
  totalTimeoutMs: number;
  /** Redirects followed at most (each hop checked again: scheme, address). */
  maxRedirects: number;
  /**
   * CIDR ranges allowed although not public (e.g. `['127.0.0.1/32']` for tests, `['10.0.0.0/8']` for an
   * intranet). IPv4-mapped IPv6 addresses are checked as IPv4, so list IPv4 networks in IPv4 form.
   */
  allowNetworks: readonly string[];
  /** DNS lookup, injectable for tests (default `dns.lookup`, called with `{ all: true }`). */
  lookup?: ImageFetchLookup;
};

export const defaultImageFetchOptions: ImageFetchOptions = {
  maxBytes: 10 * 1024 * 1024,
  connectTimeoutMs: 5_000,
  totalTimeoutMs: 20_000,
  maxRedirects: 3,
  allowNetworks: [],
};

export type ImageFetchFailure = {
  reason:
    | 'scheme'
    | 'address'
    | 'status'
    | 'too-large'
    | 'timeout'
    | 'redirects'
    | 'content-type'
    | 'network'
    | 'aborted';
  /** One sentence naming what is wrong, safe for the model and the log: URLs clipped, never the body. */
  message: string;
};

export type FetchedImage = {
  bytes: Buffer;
  /** The response's media type without parameters; `application/octet-stream` when it named none. */
  contentType: string;
  /** The URL the bytes came from, after redirects. */
  url: string;
};

/** Which addresses the bridge may connect to: global unicast, and the networks a config allows. */
export type AddressPolicy = {
  /** `address` (an IP literal) is allowed, or the range that refuses it ("a private address"). */
  check(address: string): { allowed: true } | { allowed: false; range: string };
};

type IpRange = ReturnType<ipaddr.IPv4['range']> | ReturnType<ipaddr.IPv6['range']>;

const rangeNames: Record<Exclude<IpRange, 'unicast'>, string> = {
  unspecified: 'an unspecified address',
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address',
  loopback: 'a loopback address',
  carrierGradeNat: 'a carrier-grade NAT address',
  private: 'a private address',
  reserved: 'a reserved address',
  benchmarking: 'a benchmarking address',
  amt: 'an AMT relay address',
  as112: 'an AS112 address',
  as112v6: 'an AS112 address',
  uniqueLocal: 'a unique local address',
  ipv4Mapped: 'an IPv4-mapped address',
  rfc6145: 'an IPv4-translated address',
  rfc6052: 'a NAT64 address',
  '6to4': 'a 6to4 address',
  teredo: 'a Teredo address',
  orchid2: 'an ORCHIDv2 address',
  droneRemoteIdProtocolEntityTags: 'a drone remote ID address',
};

/** IPv6 global unicast is 2000::/3; ipaddr.js calls every address outside its special ranges unicast. */
const ipv6GlobalUnicast = ipaddr.IPv6.parseCIDR('2000::/3');
const cloudMetadata = ipaddr.IPv4.parse('169.254.169.254');

/**
 * The policy for `allowNetworks`, each entry parsed once. Throws on an entry that is not a CIDR (a config
 * error: the config schema validates the list first).
 */
export const compileAddressPolicy = (allowNetworks: readonly string[]): AddressPolicy => {
  const allowed = allowNetworks.map((cidr) => {
    try {
      return ipaddr.parseCIDR(cidr);
    } catch {
      throw new Error(`allowNetworks: "${clipText(cidr, 60)}" is not a CIDR (e.g. "10.0.0.0/8")`);
    }
  });
  return {
    check(address) {
      if (!ipaddr.isValid(address)) return { allowed: false, range: 'not an IP address' };
      const ip = ipaddr.process(address);
      if (allowed.some(([network, bits]) => network.kind() === ip.kind() && ip.match(network, bits)))
        return { allowed: true };
      const range: IpRange = ip.range();
      if (range === 'unicast')
        return ip.kind() === 'ipv4' || ip.match(ipv6GlobalUnicast)
          ? { allowed: true }
          : { allowed: false, range: 'not a global unicast address' };
      if (ip.kind() === 'ipv4' && ip.match(cloudMetadata, 32))
        return { allowed: false, range: 'a link-local address (the cloud metadata service)' };
      return { allowed: false, range: rangeNames[range] };
    },
  };
};

/** Policies by `allowNetworks` list: options are plain objects, built once and reused for every fetch. */
const policies = new WeakMap<readonly string[], AddressPolicy>();
const policyOf = (allowNetworks: readonly string[]): AddressPolicy => {
  let policy = policies.get(allowNetworks);
  if (policy === undefined) {
    policy = compileAddressPolicy(allowNetworks);
    policies.set(allowNetworks, policy);
  }
  return policy;
};

const redirectStatuses = new Set([301, 302, 303, 307, 308]);
const requestHeaders = { accept: 'image/*', 'accept-encoding': 'identity', 'user-agent': 'cursor-bridge' };

/**
 * A URL for a message (the model's note and the log): credentials dropped, the query and fragment replaced
 * by `?…` (a signed URL's signature is a secret), clipped.
 */
export const shownUrl = (url: URL | string): string => {
  if (typeof url === 'string')
    return URL.canParse(url) ? shownUrl(new URL(url)) : clipText(url.split(/[?#]/)[0] ?? '');
  return clipText(
    `${url.protocol}//${url.host}${url.pathname}${url.search === '' && url.hash === '' ? '' : '?…'}`,
  );
};

const failure = (reason: ImageFetchFailure['reason'], message: string): ImageFetchFailure => ({
  reason,
  message,
});

const addressRefusal = (target: string, verb: string, address: string, range: string): ImageFetchFailure =>
  failure(
    'address',
    `${target} ${verb} ${address}, ${range}; the bridge fetches only from public addresses ` +
      '(a config can allow a network with cursorImages.allowNetworks)',
  );

type Hop = {
  url: URL;
  request: ClientRequest;
  connectTimer: NodeJS.Timeout | undefined;
  response: IncomingMessage | undefined;
};

type Outcome = Result<FetchedImage, ImageFetchFailure>;

/** One fetch, its hops one after another. Settles once; every exit clears the timers and destroys the hop. */
class ImageFetch {
  readonly #options: ImageFetchOptions;
  readonly #policy: AddressPolicy;
  readonly #signal: AbortSignal | undefined;
  readonly #resolve: (outcome: Outcome) => void;
  readonly #totalTimer: NodeJS.Timeout;
  readonly #onAbort = (): void =>
    this.#fail('aborted', `fetching ${this.#target()} was cancelled before the image arrived`);
  #original: URL | undefined;
  #hop: Hop | undefined;
  #redirects = 0;
  #done = false;

  constructor(
    options: ImageFetchOptions,
    policy: AddressPolicy,
    signal: AbortSignal | undefined,
    resolve: (outcome: Outcome) => void,
  ) {
    this.#options = options;
    this.#policy = policy;
    this.#signal = signal;
    this.#resolve = resolve;
    this.#totalTimer = setTimeout(
      () => this.#fail('timeout', `${this.#target()} took longer than ${options.totalTimeoutMs} ms in all`),
      options.totalTimeoutMs,
    );
    signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  start(url: string): void {
    if (this.#signal?.aborted) return this.#onAbort();
    if (!URL.canParse(url)) return this.#fail('scheme', `${shownUrl(url)} is not a valid URL`);
    this.#original = new URL(url);
    this.#request(this.#original);
  }

  /** A hop's URL (by default the current one's) for a message, with where it was redirected from. */
  #target(current: URL | undefined = this.#hop?.url ?? this.#original): string {
    if (current === undefined) return 'the image URL';
    if (this.#original === undefined || current === this.#original) return shownUrl(current);
    return `${shownUrl(current)} (redirected from ${clipText(shownUrl(this.#original), 120)})`;
  }

  #request(url: URL): void {
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      return this.#fail(
        'scheme',
        `${this.#target(url)} uses ${url.protocol}; the bridge fetches images over http: and https: only`,
      );
    if (url.username !== '' || url.password !== '')
      return this.#fail(
        'scheme',
        `${this.#target(url)} carries credentials (user:password@), which the bridge does not send`,
      );
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    // Node connects to an IP-literal host without calling `lookup`: it is checked here instead.
    if (isIP(host) !== 0) {
      const verdict = this.#policy.check(host);
      if (!verdict.allowed)
        return void this.#finish({
          ok: false,
          error: addressRefusal(this.#target(url), 'is', host, verdict.range),
        });
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = send(url, { agent: false, headers: requestHeaders, lookup: this.#guardedLookup(url) });
    const hop: Hop = { url, request, connectTimer: undefined, response: undefined };
    this.#hop = hop;
    // Stays attached after the hop ends: destroying a request can still emit an error, ignored then.
    request.on('error', (error) => {
      if (this.#hop === hop) this.#fail('network', `${this.#target()} failed: ${clipText(error.message)}`);
    });
    request.on('response', (response) => this.#respond(hop, response));
    // A lookup that answers synchronously has already refused the host, inside `send`.
    if (this.#done) return void request.destroy();
    hop.connectTimer = setTimeout(
      () =>
        this.#fail(
          'timeout',
          `connecting to ${clipText(url.host, 120)} (DNS and TCP/TLS) took longer than ${this.#options.connectTimeoutMs} ms`,
        ),
      this.#options.connectTimeoutMs,
    );
    request.on('socket', (socket: Socket) => {
      socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () =>
        clearTimeout(hop.connectTimer),
      );
    });
    request.end();
  }

  /**
   * The hop's `lookup`: resolves once with `{ all: true }`, refuses the host if any address is not allowed
   * (fails the fetch; the socket never connects), and hands the socket the addresses it checked, in the
   * form its caller asked for (Node asks for all of them when it races IPv4 and IPv6).
   */
  #guardedLookup(url: URL): LookupFunction {
    const resolveHost = this.#options.lookup ?? dnsLookup;
    return (hostname, lookupOptions, callback) => {
      resolveHost(hostname, { all: true }, (error, addresses) => {
        if (error !== null) return callback(error, []);
        for (const { address } of addresses) {
          const verdict = this.#policy.check(address);
          if (verdict.allowed) continue;
          this.#finish({
            ok: false,
            error: addressRefusal(this.#target(url), 'resolves to', address, verdict.range),
          });
          return callback(new Error(`${hostname} resolves to a refused address`), []);
        }
        const first = addresses[0];
        if (first === undefined) return callback(new Error(`${hostname} resolves to no address`), []);
        if (lookupOptions.all === true) return callback(null, addresses);
        return callback(null, first.address, first.family);
      });
    };
  }

  #respond(hop: Hop, response: IncomingMessage): void {
    hop.response = response;
    response.on('error', (error) => {
      if (this.#hop === hop)
        this.#fail('network', `${this.#target()} failed while sending the image: ${clipText(error.message)}`);
    });
    const status = response.statusCode ?? 0;
    const statusText = `${status}${STATUS_CODES[status] === undefined ? '' : ` ${STATUS_CODES[status]}`}`;
    if (redirectStatuses.has(status) && response.headers.location !== undefined)
      return this.#redirect(hop, response.headers.location, statusText);
    if (status < 200 || status > 299) return this.#fail('status', `${this.#target()} answered ${statusText}`);
    const contentType = (response.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    if (contentType === 'image/svg+xml')
      return this.#fail(
        'content-type',
        `${this.#target()} is an SVG image; vector images are not accepted, only raster images (PNG, JPEG, …)`,
      );
    if (contentType !== '' && contentType !== 'application/octet-stream' && !contentType.startsWith('image/'))
      return this.#fail(
        'content-type',
        `${this.#target()} answered with ${clipText(contentType, 80)}, not an image`,
      );
    const declared = Number(response.headers['content-length'] ?? Number.NaN);
    if (declared > this.#options.maxBytes) return this.#tooLarge(declared);
    this.#read(hop, response, contentType === '' ? 'application/octet-stream' : contentType);
  }

  #redirect(hop: Hop, location: string, statusText: string): void {
    if (!URL.canParse(location, hop.url.href))
      return this.#fail('status', `${this.#target()} answered ${statusText} to a location that is not a URL`);
    if (this.#redirects >= this.#options.maxRedirects)
      return this.#fail(
        'redirects',
        `${this.#target()} redirected more than ${this.#options.maxRedirects} times`,
      );
    this.#redirects += 1;
    this.#endHop();
    this.#request(new URL(location, hop.url));
  }

  /** Reads the body, holding at most `maxBytes`: the chunk that would pass it ends the fetch. */
  #read(hop: Hop, response: IncomingMessage, contentType: string): void {
    const chunks: Buffer[] = [];
    let received = 0;
    response.on('data', (chunk: Buffer) => {
      if (received + chunk.length > this.#options.maxBytes) return this.#tooLarge();
      received += chunk.length;
      chunks.push(chunk);
    });
    response.on('end', () =>
      this.#finish({
        ok: true,
        value: { bytes: Buffer.concat(chunks, received), contentType, url: hop.url.href },
      }),
    );
    response.on('close', () => {
      if (this.#hop === hop && !response.complete)
        this.#fail('network', `${this.#target()} closed the connection before the image was complete`);
    });
  }

  /** `declared`: the content-length, when that is what passed the cap. */
  #tooLarge(declared?: number): void {
    const size = declared === undefined ? 'more' : `${declared} bytes, more`;
    this.#fail(
      'too-large',
      `${this.#target()} sends ${size} than the ${this.#options.maxBytes} bytes the bridge fetches at most`,
    );
  }

  #fail(reason: ImageFetchFailure['reason'], message: string): void {
    this.#finish({ ok: false, error: failure(reason, message) });
  }

  #endHop(): void {
    const hop = this.#hop;
    if (hop === undefined) return;
    clearTimeout(hop.connectTimer);
    hop.response?.destroy();
    hop.request.destroy();
    this.#hop = undefined;
  }

  #finish(outcome: Outcome): void {
    if (this.#done) return;
    this.#done = true;
    clearTimeout(this.#totalTimer);
    this.#signal?.removeEventListener('abort', this.#onAbort);
    this.#endHop();
    this.#resolve(outcome);
  }
}

/**
 * Fetches `url` within `options`' bounds, from allowed addresses only (each redirect hop checked again).
 * Every expected failure is returned; the promise never rejects. An `allowNetworks` entry that is not a
 * CIDR fails every fetch with reason `address` (the config schema refuses such a list first).
 */
export const fetchImageUrl = (
  url: string,
  options: ImageFetchOptions,
  signal?: AbortSignal,
): Promise<Result<FetchedImage, ImageFetchFailure>> =>
  new Promise((resolve) => {
    let policy: AddressPolicy;
    try {
      policy = policyOf(options.allowNetworks);
    } catch (error) {
      const message = errorMessage(error);
      return resolve({
        ok: false,
        error: failure('address', `the bridge's image settings are invalid: ${message}`),
      });
    }
    new ImageFetch(options, policy, signal, resolve).start(url);
  });
