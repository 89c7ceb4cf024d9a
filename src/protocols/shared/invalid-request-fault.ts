import { createTurnError } from '../../turn/turn-error.js';
import type { TurnRequest } from '../../turn/turn-request.js';
import type { ParseResult } from '../protocol-adapter.js';

/**
 * Thrown inside a request converter when the body cannot be used; {@link catchInvalidRequest} turns it
 * into an `invalid-request` TurnError (400, not retryable). Never escapes a `parseRequest`.
 */
export class InvalidRequestFault extends Error {
  override readonly name = 'InvalidRequestFault';
  /** The field at fault (dot path); absent when the body as a whole is wrong. */
  readonly param: string | undefined;

  constructor(param: string | undefined, message: string) {
    super(message);
    this.param = param;
  }

  /** A bad field: `Invalid request: <param>: <reason>`, or `Invalid request body: <reason>` for `''`. */
  static atField(param: string, reason: string): InvalidRequestFault {
    return param === ''
      ? new InvalidRequestFault(undefined, `Invalid request body: ${reason}`)
      : new InvalidRequestFault(param, `Invalid request: ${param}: ${reason}`);
  }
}

/**
 * Runs a request converter: its TurnRequest on success, an `invalid-request` error (message and `param`
 * from the {@link InvalidRequestFault}) when it throws one. Any other exception is a bug and propagates.
 */
export const catchInvalidRequest = (convert: () => TurnRequest): ParseResult => {
  try {
    return { ok: true, value: convert() };
  } catch (error) {
    if (!(error instanceof InvalidRequestFault)) throw error;
    const extra = error.param === undefined ? {} : { param: error.param };
    return { ok: false, error: createTurnError('invalid-request', error.message, extra) };
  }
};
