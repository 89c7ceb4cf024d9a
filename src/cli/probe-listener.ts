import { isRecord } from '../../lib/is-record.js';
import type { CursorReadiness } from '../hosts/http/create-server.js';

/** What answers on a loopback port. */
export type ListenerProbe =
  /** Nothing listens there (connection refused). */
  | { kind: 'free' }
  /** A cursor-bridge HTTP server (`GET /` names it), with its `/health`. */
  | { kind: 'cursor-bridge'; draining: boolean; cursor?: CursorReadiness }
  /** Claude Code Router 1.x / 2.x (`GET /` answers "LLMs API"). */
  | { kind: 'ccr' }
  /** Something else, or something that did not answer HTTP in time. */
  | { kind: 'other' };

const requestTimeoutMs = 1_500;

const getJson = async (url: string): Promise<{ status: number; body: unknown }> => {
  const response = await fetch(url, { signal: AbortSignal.timeout(requestTimeoutMs) });
  const text = await response.text();
  try {
    return { status: response.status, body: JSON.parse(text) as unknown };
  } catch {
    return { status: response.status, body: undefined };
  }
};

/** Cursor readiness as a bridge's `GET /health` reports it (absent from bridges that predate it). */
const readiness = (value: unknown): CursorReadiness | undefined => {
  if (!isRecord(value) || typeof value['ready'] !== 'boolean') return undefined;
  return typeof value['reason'] === 'string'
    ? { ready: value['ready'], reason: value['reason'] }
    : { ready: value['ready'] };
};

/**
 * Asks `http://host:port/` who it is. A cursor-bridge server answers `GET /` with `{"name":"cursor-bridge"}`
 * and its `/health` with `{"status":"ok"|"draining","cursor":{…}}`; the port alone proves nothing (CCR's
 * default is the same 3456). Never rejects: a refused connection is `free`, any other failure `other`.
 */
export const probeListener = async (host: string, port: number): Promise<ListenerProbe> => {
  const base = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  let root;
  try {
    root = await getJson(`${base}/`);
  } catch (error) {
    const code = (error as { cause?: { code?: unknown } }).cause?.code;
    return code === 'ECONNREFUSED' ? { kind: 'free' } : { kind: 'other' };
  }
  if (isRecord(root.body) && root.body['message'] === 'LLMs API') return { kind: 'ccr' };
  if (!isRecord(root.body) || root.body['name'] !== 'cursor-bridge') return { kind: 'other' };
  try {
    const health = await getJson(`${base}/health`);
    const body = isRecord(health.body) ? health.body : {};
    const cursor = readiness(body['cursor']);
    return {
      kind: 'cursor-bridge',
      draining: health.status !== 200,
      ...(cursor === undefined ? {} : { cursor }),
    };
  } catch {
    return { kind: 'other' };
  }
};
