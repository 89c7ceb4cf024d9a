/**
 * How a browser carries the bridge's API key to the console without putting it in a URL: the page asks
 * for the key once, the console checks it and answers with a cookie holding a random token of this
 * process (HttpOnly, SameSite=Strict, scoped to `/console`), never the key itself. A request is let in
 * when it carries the key as any other route takes it, or that cookie. Changing requests must also carry
 * the console's own header, which a page on another origin cannot send without a CORS preflight the
 * bridge never grants.
 */

import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export const consoleCookieName = 'cursor_bridge_console';

/** The header every changing console request carries (its value is not checked: its presence is the point). */
export const consoleRequestHeader = 'x-cursor-bridge-console';

/** How long a console login lasts, in seconds. */
const loginMaxAgeSeconds = 12 * 60 * 60;

const cookieOf = (request: IncomingMessage, name: string): string | undefined => {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return value.join('=');
  }
  return undefined;
};

export class ConsoleAuth {
  readonly #token = randomBytes(32).toString('hex');

  /** Whether the request carries this process's console cookie. */
  hasLogin(request: IncomingMessage): boolean {
    const presented = Buffer.from(cookieOf(request, consoleCookieName) ?? '');
    const expected = Buffer.from(this.#token);
    return presented.length === expected.length && timingSafeEqual(presented, expected);
  }

  /** The `set-cookie` value of a login. */
  loginCookie(): string {
    return `${consoleCookieName}=${this.#token}; HttpOnly; SameSite=Strict; Path=/console; Max-Age=${loginMaxAgeSeconds}`;
  }

  /** The `set-cookie` value that ends a login. */
  logoutCookie(): string {
    return `${consoleCookieName}=; HttpOnly; SameSite=Strict; Path=/console; Max-Age=0`;
  }
}
