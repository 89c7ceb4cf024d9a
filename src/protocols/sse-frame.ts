/**
 * One Server-Sent Events frame as an encoder produces it; `sse-serialize.ts` serializes it.
 * `data` is written as-is after splitting on newlines (JSON is single-line). `comment` frames
 * (`: keepalive`) are ignored by every SSE parser.
 */
export type SseFrame = { event?: string; data: string } | { comment: string };
