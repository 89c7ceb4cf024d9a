/**
 * The DNS-rebinding allow-lists of the standalone tool host: which `Host` headers name this server, and
 * which `Origin`s may talk to it. A browser page on another site that resolves its own name to 127.0.0.1
 * sends that name as `Host`; a page anywhere sends its own `Origin` (on WebSocket upgrades too, which
 * CORS does not cover). Requests without `Origin` (non-browser clients) pass the origin check.
 */

import type { IncomingMessage } from 'node:http';
import { networkInterfaces } from 'node:os';

export type HostAllowList = {
  /** `Host` header values accepted, e.g. `127.0.0.1:3457`, `localhost:3457`. */
  readonly hosts: string[];
  /** `Origin` values accepted: each host over http and https. */
  readonly origins: string[];
  /** Why `request` is refused, or undefined when it passes. */
  refusal(request: IncomingMessage): string | undefined;
};

const loopbackNames = ['127.0.0.1', 'localhost', '[::1]'];

const bracket = (address: string): string => (address.includes(':') ? `[${address}]` : address);

/** Names (without port) under which a server bound to `bound` is reached. */
function namesFor(bound: string): string[] {
  const names = new Set<string>();
  if (bound === '0.0.0.0' || bound === '::') {
    for (const name of loopbackNames) names.add(name);
    for (const list of Object.values(networkInterfaces())) {
      for (const address of list ?? []) names.add(bracket(address.address));
    }
  } else {
    names.add(bracket(bound));
    if (loopbackNames.includes(bracket(bound))) for (const name of loopbackNames) names.add(name);
  }
  return [...names];
}

/**
 * The allow-list of a server bound to `bound`:`port`. The bound address counts with its port (all
 * interface addresses for `0.0.0.0`/`::`, and every loopback name for a loopback address). Each `extra`
 * name counts as given when it carries a port, else with `port` and bare (a reverse proxy on a default
 * port sends a bare name).
 */
export function createHostAllowList(
  bound: string,
  port: number,
  extra: readonly string[] = [],
): HostAllowList {
  const configured = extra.flatMap((name) => (/:\d+$/.test(name) ? [name] : [`${name}:${port}`, name]));
  const hosts = [...namesFor(bound).map((name) => `${name}:${port}`), ...configured];
  const origins = hosts.flatMap((name) => [`http://${name}`, `https://${name}`]);
  return {
    hosts,
    origins,
    refusal: (request) => {
      const host = request.headers.host;
      if (host === undefined || !hosts.includes(host)) return `Invalid Host header: ${String(host)}`;
      const origin = request.headers.origin;
      if (origin !== undefined && !origins.includes(origin)) return `Invalid Origin header: ${origin}`;
      return undefined;
    },
  };
}

/** Before `listen()`: nothing is allowed. */
export const emptyHostAllowList: HostAllowList = {
  hosts: [],
  origins: [],
  refusal: () => 'The server is not listening yet.',
};
