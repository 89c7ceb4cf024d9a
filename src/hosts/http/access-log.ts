/**
 * The access log: one line per HTTP request, written when its response is over — after the last byte of a
 * stream, or when the client went away — never before. Fields: method, path (no query string), status,
 * duration, protocol, the model the client asked for, the Cursor model and the route that chose it, a hash
 * of the client's session key, bytes in and out, and for a turn what its response used (tokens by kind,
 * `usageSource`) and cost (`costCents`, raw and charged, when Cursor's billing reported it). Never headers,
 * never conversation text. A turn's line waits for its account: the response that finished a run is
 * logged once Cursor's billing answered (a bounded wait after the answer).
 *
 * The server's handlers add what they learn to the request's record with {@link noteAccess} (the Cursor
 * model and route come from the turn's `modelRoute`). Records live in a WeakMap keyed by the response, so
 * they go with the request and nothing here grows with traffic.
 */

import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { TurnAccount } from '../../turn/turn-account.js';
import type { TurnProtocol } from '../../turn/turn-request.js';
import { clipText } from '../../../lib/clip-text.js';

/** The API family of a path: a client protocol, or `other` (probes, metrics, unknown paths). */
export type AccessProtocol = TurnProtocol | 'other';

/** What handlers may add to a request's access line. Every field is a short value, never prompt text. */
export type AccessFields = {
  protocol?: AccessProtocol;
  /** The model name as the client sent it. */
  model?: string;
  /** The Cursor model that ran the turn (the turn's `modelRoute`). */
  cursorModel?: string;
  /** Which rule chose it, e.g. `explicit`, `catalog`, `default`, `think`, `background`. */
  route?: string;
  /** {@link hashSessionKey} of the client's session key (Claude Code's session id, `prompt_cache_key`, …). */
  sessionHash?: string;
  /** Body bytes read, when the handler read the body (else the declared `content-length`). */
  bytesIn?: number;
  /**
   * What the turn's response used and cost ({@link TurnEvents}' `account`): the line waits for it (bounded
   * by {@link ACCOUNT_WAIT_MS}) — for the response that finished a run, until Cursor's billing answered.
   */
  account?: Promise<TurnAccount | undefined>;
};

/**
 * The longest a line waits for its turn's account past the response's end. The engine bounds its own
 * wait for billing well below it; this only keeps a line from being lost to an account that never settles.
 */
export const ACCOUNT_WAIT_MS = 15_000;

const records = new WeakMap<ServerResponse, AccessFields>();

/** The account's fields of the line: tokens by kind, and the cost in cents when known. */
const accountFields = (account: TurnAccount | undefined): Record<string, unknown> => {
  if (account === undefined) return {};
  const { usage, cost, source } = account;
  return {
    tokens: {
      input: usage.inputTokens,
      output: usage.outputTokens,
      cacheRead: usage.cacheReadTokens,
      cacheWrite: usage.cacheWriteTokens,
      ...(usage.reasoningTokens === undefined ? {} : { reasoning: usage.reasoningTokens }),
    },
    usageSource: source,
    ...(cost === undefined ? {} : { costCents: { raw: cost.rawCents, charged: cost.chargedCents } }),
  };
};

const settledWithin = <T>(promise: Promise<T>, ms: number): Promise<T | undefined> => {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), ms);
      timer.unref();
    }),
  ]).finally(() => clearTimeout(timer));
};

/**
 * Add fields to the access line of the request `response` answers. A no-op for a response whose request is
 * not logged (the record is made by {@link logAccess}); safe to call after the response ended (the line is
 * written on `close`, so fields noted before then appear).
 */
export const noteAccess = (response: ServerResponse, fields: AccessFields): void => {
  const record = records.get(response);
  if (record !== undefined) Object.assign(record, fields);
};

/** A short, stable, non-reversible tag of a session key: the first 16 hex digits of its sha256. */
export const hashSessionKey = (key: string): string =>
  createHash('sha256').update(key).digest('hex').slice(0, 16);

const declaredLength = (request: IncomingMessage): number | undefined => {
  const header = request.headers['content-length'];
  const length = header === undefined ? Number.NaN : Number(header);
  return Number.isSafeInteger(length) && length >= 0 ? length : undefined;
};

export type AccessLogOptions = {
  logger: Logger;
  requestId: string;
  path: string;
  /** The line's level; the default is `info`. */
  level?: (status: number, path: string) => 'info' | 'debug';
};

/**
 * Start the access record of one request; its line is written once, when `response` closes. Bytes out are
 * what the socket sent while this response was the socket's (HTTP/1.1 answers one request at a time per
 * connection): headers and body, chunk framing included.
 */
export const logAccess = (
  request: IncomingMessage,
  response: ServerResponse,
  options: AccessLogOptions,
): void => {
  const startedAt = performance.now();
  const socket = request.socket;
  const writtenBefore = socket.bytesWritten;
  const record: AccessFields = {};
  records.set(response, record);
  response.once('close', () => {
    const status = response.statusCode;
    const level = options.level?.(status, options.path) ?? 'info';
    const bytesIn = record.bytesIn ?? declaredLength(request);
    const durationMs = Math.round((performance.now() - startedAt) * 10) / 10;
    const bytesOut = socket.bytesWritten - writtenBefore;
    const aborted = !response.writableFinished;
    const write = (account: TurnAccount | undefined): void =>
      options.logger[level](
        {
          requestId: options.requestId,
          method: request.method,
          path: clipText(options.path),
          status,
          durationMs,
          protocol: record.protocol ?? 'other',
          ...(record.model === undefined ? {} : { model: clipText(record.model) }),
          ...(record.cursorModel === undefined ? {} : { cursorModel: clipText(record.cursorModel) }),
          ...(record.route === undefined ? {} : { route: clipText(record.route) }),
          ...(record.sessionHash === undefined ? {} : { sessionHash: record.sessionHash }),
          ...(bytesIn === undefined ? {} : { bytesIn }),
          bytesOut,
          // The client went away before the whole answer was sent.
          ...(aborted ? { aborted: true } : {}),
          ...accountFields(account),
        },
        'request',
      );
    if (record.account === undefined) write(undefined);
    else void settledWithin(record.account, ACCOUNT_WAIT_MS).then(write, () => write(undefined));
  });
};
