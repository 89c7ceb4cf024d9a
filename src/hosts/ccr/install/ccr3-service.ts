/**
 * Finding a Claude Code Router 3 setup and talking to its running service (as CCR 3.1.1 keeps them).
 *
 * CCR 3 keeps its config in `<dir>/config.sqlite` (a legacy `config.json` is imported once, then deleted)
 * and `ccr start` writes `<dir>/service.json` (mode 0600): `{ pid, url: "http://127.0.0.1:3458/?ccr_web_token=…" }`.
 * The admin RPC is `POST <origin>/api/ccr/rpc` with `x-ccr-web-auth: <ccr_web_token>` and
 * `{ method, args }`, answering `{ ok: true, value }` or `{ ok: false, error: { message } }`.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isRecord } from '../../../../lib/is-record.js';
import { safeParseJson } from '../../../protocols/shared/safe-parse-json.js';
import { isProcessAlive } from '../../../../lib/is-process-alive.js';
import { errorMessage } from '../../../../lib/error-message.js';

export type Ccr3Setup =
  /** No sign of CCR 3 in the directory. */
  | { kind: 'none' }
  /** CCR 3 owns the directory, but no live service answers. */
  | { kind: 'stopped'; evidence: string }
  | { kind: 'running'; origin: string; token: string; pid: number };

/** What `configDir` (CCR's `~/.claude-code-router`) says about CCR 3. */
export const detectCcr3 = async (configDir: string): Promise<Ccr3Setup> => {
  const sqlite = join(configDir, 'config.sqlite');
  const serviceFile = join(configDir, 'service.json');
  const text = await readFile(serviceFile, 'utf8').catch(() => undefined);
  if (text === undefined)
    return existsSync(sqlite) ? { kind: 'stopped', evidence: sqlite } : { kind: 'none' };
  const parsed = safeParseJson(text);
  const service = parsed.ok && isRecord(parsed.value) ? parsed.value : {};
  const pid = service['pid'];
  const url = typeof service['url'] === 'string' ? URL.parse(service['url']) : null;
  const token = url?.searchParams.get('ccr_web_token');
  if (typeof pid !== 'number' || !Number.isInteger(pid) || !isProcessAlive(pid) || url === null || !token)
    return { kind: 'stopped', evidence: existsSync(sqlite) ? sqlite : serviceFile };
  return { kind: 'running', origin: url.origin, token, pid };
};

/** A failed admin call: `status` 0 when the service could not be reached. */
export class Ccr3RpcError extends Error {
  override readonly name = 'Ccr3RpcError';
  constructor(
    readonly method: string,
    readonly status: number,
    message: string,
  ) {
    super(`CCR admin RPC ${method}: ${message}`);
  }
}

export type Ccr3Admin = { call(method: string, args?: unknown[]): Promise<unknown> };

/** The admin RPC of a running CCR 3 (`timeoutMs` per call: a config save restarts the gateway). */
export const createCcr3Admin = (
  service: { origin: string; token: string },
  options: { timeoutMs?: number } = {},
): Ccr3Admin => ({
  call: async (method, args = []) => {
    let response: Response;
    try {
      response = await fetch(new URL('/api/ccr/rpc', service.origin), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-ccr-web-auth': service.token },
        body: JSON.stringify({ method, args }),
        signal: AbortSignal.timeout(options.timeoutMs ?? 60_000),
      });
    } catch (error) {
      throw new Ccr3RpcError(method, 0, `cannot reach ${service.origin}: ${errorMessage(error)}`);
    }
    const parsed = safeParseJson(await response.text());
    const body = parsed.ok && isRecord(parsed.value) ? parsed.value : {};
    if (response.ok && body['ok'] === true) return body['value'];
    const error = isRecord(body['error']) ? body['error']['message'] : undefined;
    throw new Ccr3RpcError(
      method,
      response.status,
      `HTTP ${response.status}${typeof error === 'string' ? `: ${error}` : ''}`,
    );
  },
});
