import type { TurnEvent } from '../../../src/turn/turn-event.js';

/**
 * TurnEvent builders shared by the three adapters' encoder tests and the byte-level fixture scripts
 * (`turn-event-scripts.ts`).
 */

/** A text block: `text-start`, one `text-delta` per delta, `text-end`. */
export const textEvents = (id: string, ...deltas: string[]): TurnEvent[] => [
  { type: 'text-start', id },
  ...deltas.map((delta): TurnEvent => ({ type: 'text-delta', id, delta })),
  { type: 'text-end', id },
];

/** A reasoning block closed by `signature`: `reasoning-start`, its deltas, `reasoning-end`. */
export const reasoningEvents = (id: string, signature: string, ...deltas: string[]): TurnEvent[] => [
  { type: 'reasoning-start', id },
  ...deltas.map((delta): TurnEvent => ({ type: 'reasoning-delta', id, delta })),
  { type: 'reasoning-end', id, signature },
];

/** `text` cut into pieces of `size` characters (none for `''`). */
export const splitText = (text: string, size: number): string[] => {
  const pieces: string[] = [];
  for (let offset = 0; offset < text.length; offset += size) pieces.push(text.slice(offset, offset + size));
  return pieces;
};

/**
 * A complete tool call: `tool-input-start`, the argument deltas, `tool-input-end`, then `tool-call` with the
 * whole `input`. The deltas are `options.deltas` when given, else `input` in pieces of `chunkSize` (8).
 */
export const toolCallEvents = (
  id: string,
  toolName: string,
  input: string,
  options: { kind?: 'function' | 'custom'; deltas?: readonly string[]; chunkSize?: number } = {},
): TurnEvent[] => {
  const kind = options.kind ?? 'function';
  const deltas = options.deltas ?? splitText(input, options.chunkSize ?? 8);
  return [
    { type: 'tool-input-start', id, toolName, kind },
    ...deltas.map((delta): TurnEvent => ({ type: 'tool-input-delta', id, delta })),
    { type: 'tool-input-end', id },
    { type: 'tool-call', toolCallId: id, toolName, kind, input },
  ];
};
