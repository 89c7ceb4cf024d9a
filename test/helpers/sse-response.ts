import type { SseFrame } from '../../src/protocols/sse-frame.js';
import { serializeSseFrames } from '../../src/protocols/sse-serialize.js';

/**
 * A `fetch` stand-in that answers every request with the given SSE text, split into chunks of
 * `chunkSize` bytes (to exercise the clients' parsers across chunk boundaries). Use it as the `fetch`
 * option of the official `@anthropic-ai/sdk` / `openai` clients.
 */
export const createSseFetch =
  (frames: readonly SseFrame[], options: { chunkSize?: number; crlf?: boolean } = {}) =>
  async (): Promise<Response> => {
    let text = serializeSseFrames(frames);
    if (options.crlf) text = text.replace(/\n/g, '\r\n');
    const bytes = new TextEncoder().encode(text);
    const size = options.chunkSize ?? bytes.length;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let offset = 0; offset < bytes.length; offset += size) {
          controller.enqueue(bytes.subarray(offset, offset + size));
        }
        controller.close();
      },
    });
    return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  };

/** A `fetch` stand-in answering with a JSON body and status. */
export const createJsonFetch =
  (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  async (): Promise<Response> =>
    new Response(JSON.stringify(body), {
      status,
      headers: { 'content-type': 'application/json', ...headers },
    });
