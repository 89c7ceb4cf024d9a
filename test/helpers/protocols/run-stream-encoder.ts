import type { StreamEncoder } from '../../../src/protocols/protocol-adapter.js';
import type { SseFrame } from '../../../src/protocols/sse-frame.js';
import type { TurnEvent } from '../../../src/turn/turn-event.js';

/** One step of an encoder script: an event to push, or `'keepalive'` for the encoder's keepalive frame. */
export type EncoderStep = TurnEvent | 'keepalive';

/** Every frame a server would write for `steps`: `start()`, each step in order, then `end()`. */
export const runStreamEncoder = (encoder: StreamEncoder, steps: readonly EncoderStep[]): SseFrame[] => {
  const frames = encoder.start();
  for (const step of steps)
    frames.push(...(step === 'keepalive' ? [encoder.keepalive()] : encoder.push(step)));
  frames.push(...encoder.end());
  return frames;
};
