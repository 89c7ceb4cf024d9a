/**
 * What one client response of a turn used and cost, for the access log and the operator's figures. Never
 * any conversation text.
 */

import type { TurnUsage } from './turn-usage.js';

/** A cost in float cents: the undiscounted model cost, and what was actually charged. */
export type TurnCost = { rawCents: number; chargedCents: number };

/**
 * - `billing`: Cursor's billing for the run this response finished (`agent.getUsage()`), with its cost
 *   when Cursor reported one within the bounded wait;
 * - `stream`: the usage the run reported when it ended (billing could not be read, or had no entry yet);
 * - `estimate`: the bridge's count (a tool-use response: the run is still live, Cursor has not reported).
 */
export type TurnAccountSource = 'billing' | 'stream' | 'estimate';

export type TurnAccount = { usage: TurnUsage; source: TurnAccountSource; cost?: TurnCost };
