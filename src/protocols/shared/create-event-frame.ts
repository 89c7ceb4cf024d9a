import type { SseFrame } from '../sse-frame.js';

/**
 * A named SSE event whose name is the payload's `type` (Anthropic and Responses streams): `event: <type>`
 * and the payload as single-line JSON, keys in the order given.
 */
export const createEventFrame = (payload: { type: string } & Record<string, unknown>): SseFrame => ({
  event: payload.type,
  data: JSON.stringify(payload),
});

/** An unnamed `data:` frame carrying `payload` as single-line JSON (Chat Completions chunks). */
export const createDataFrame = (payload: unknown): SseFrame => ({ data: JSON.stringify(payload) });
