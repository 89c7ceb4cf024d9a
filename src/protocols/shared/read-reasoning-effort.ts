import type { TurnReasoningEffort } from '../../turn/turn-request.js';
import { InvalidRequestFault } from './invalid-request-fault.js';

/**
 * Every effort level a client may send, on every protocol: `none` (no reasoning) and the
 * {@link TurnReasoningEffort} levels, lowest first. The engine maps a level onto the nearest one the
 * chosen model allows (on a tie the lower level wins), so a protocol never narrows this list.
 */
export const reasoningEffortLevels = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;

const levels: ReadonlySet<string> = new Set(reasoningEffortLevels);

/**
 * The effort a request names at `param` (`reasoning_effort`, `reasoning.effort`, `output_config.effort`):
 * `undefined` when absent or null, else one of {@link reasoningEffortLevels}. Any other word is an
 * `invalid-request` (400) naming `param` and the accepted levels — the rule for all three protocols, as
 * the OpenAI and Anthropic APIs answer an unknown effort: an unknown word has no place on the scale, so
 * no "nearest" level exists, and guessing would hide the client's typo.
 */
export const readReasoningEffort = (
  value: string | null | undefined,
  param: string,
): TurnReasoningEffort | 'none' | undefined => {
  if (value === undefined || value === null) return undefined;
  if (levels.has(value)) return value as TurnReasoningEffort | 'none';
  throw InvalidRequestFault.atField(
    param,
    `unknown reasoning effort "${value}"; use one of ${reasoningEffortLevels.join(', ')}`,
  );
};
