import type { TurnEvent } from '../../turn/turn-event.js';
import type { SseFrame } from '../sse-frame.js';

/**
 * A protocol's stream encoder as the non-streaming path uses it: besides the frames, it keeps the
 * response body those frames describe (`snapshot`), complete once `end()` has run.
 */
export interface SnapshotEncoder<Body> {
  push(event: TurnEvent): SseFrame[];
  end(): SseFrame[];
  /** The response body built from every event pushed so far. */
  readonly snapshot: Body;
}

/**
 * The non-streaming body for a complete event list, built the same way in every protocol: the events
 * run through the protocol's stream encoder (the frames are dropped), then its snapshot is read. A JSON
 * answer therefore never disagrees with the stream the same turn would have produced.
 */
export const createJsonResponseFromEvents = <Body>(
  encoder: SnapshotEncoder<Body>,
  events: readonly TurnEvent[],
): Body => {
  for (const event of events) encoder.push(event);
  encoder.end();
  return encoder.snapshot;
};
