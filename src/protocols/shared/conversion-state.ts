import { clipText } from '../../../lib/clip-text.js';
import type { TurnWarning } from '../../turn/turn-request.js';

/**
 * What a request converter (`*-to-turn.ts`) carries while it walks one body: the warnings so far. Each
 * adapter's `ConversionState` extends it with what its protocol needs (tool names by call id, …) and
 * passes it as `state` to every converter function.
 */
export type BaseConversionState = { warnings: TurnWarning[] };

/** The longest warning message kept: the message quotes client values (block types, field names, …). */
const maxWarningChars = 300;

/**
 * Records a tolerated, unsupported input on `state`; it is logged and carried on the turn. The message is
 * cut at 300 characters (the cut noted): it quotes client values, which may be megabytes long.
 */
export const warn = (state: BaseConversionState, code: TurnWarning['code'], message: string): void => {
  state.warnings.push({ code, message: clipText(message, maxWarningChars) });
};
