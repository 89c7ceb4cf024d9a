// The console's requests to its bridge. Every route is under /console/api and answers JSON; the login
// cookie goes along (same origin), and a request that changes something carries the console's own header,
// which a page of another site cannot send.
export const api = '/console/api';

/** The headers of a request that changes something (login, save, revert, preview). */
export const changing = { 'content-type': 'application/json', 'x-cursor-bridge-console': '1' };

/** `path` under /console/api: its status and its JSON body (`{}` when the body is not JSON). */
export const request = async (path, init = {}) => {
  const response = await fetch(`${api}/${path}`, { credentials: 'same-origin', ...init });
  const body = await response.json().catch(() => ({}));
  return { status: response.status, body };
};
