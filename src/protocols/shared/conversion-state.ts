import type { TurnWarning } from '../../turn/turn-request.js';

/**
 * What a request converter (`*-to-turn.ts`) carries while it walks one body: the warnings so far. Each
 * adapter's `ConversionState` extends it with what its protocol needs (tool names by call id, …) and
 * passes it as `state` to every converter function.
 */
export type BaseConversionState = { warnings: TurnWarning[] };

/** Records a tolerated, unsupported input on `state`; it is logged and carried on the turn. */
export const warn = (state: BaseConversionState, code: TurnWarning['code'], message: string): void => {
  state.warnings.push({ code, message });
};
