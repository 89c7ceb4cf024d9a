import { clipText } from '../../lib/clip-text.js';
import type { TurnError } from '../turn/turn-error.js';

/**
 * A TurnError as a log field: its message and `param` cut at 200 characters (noted). Errors about a
 * request quote it (field names, values, model names), and the request may be megabytes long.
 */
export const clipTurnError = (error: TurnError): TurnError => ({
  ...error,
  message: clipText(error.message),
  ...(error.param === undefined ? {} : { param: clipText(error.param) }),
});
