import type { SseFrame } from './sse-frame.js';

const lineBreak = /\r\n|\r|\n/;

/**
 * Serialize one frame to SSE text. Multi-line data is split into several `data:` lines; an event name
 * containing CR or LF would corrupt the stream and is rejected (as Hono's `writeSSE` does).
 */
export const serializeSseFrame = (frame: SseFrame): string => {
  if ('comment' in frame) return `: ${frame.comment.replace(/[\r\n]+/g, ' ')}\n\n`;
  let text = '';
  if (frame.event !== undefined) {
    if (lineBreak.test(frame.event)) throw new Error('SSE event name must not contain CR or LF');
    text += `event: ${frame.event}\n`;
  }
  // Single-line data (every JSON payload) skips the split.
  if (!frame.data.includes('\n') && !frame.data.includes('\r')) return `${text}data: ${frame.data}\n\n`;
  for (const line of frame.data.split(lineBreak)) text += `data: ${line}\n`;
  return `${text}\n`;
};

export const serializeSseFrames = (frames: readonly SseFrame[]): string =>
  frames.map(serializeSseFrame).join('');
