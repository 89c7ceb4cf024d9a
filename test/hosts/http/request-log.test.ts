import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/logging/logger.js';
import { startScriptedBridgeServer } from '../../helpers/scripted-bridge-server.js';

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

describe("a request's log lines", () => {
  it('carry one request id per request, with its method and path', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        callback();
      },
    });
    const bridge = await startScriptedBridgeServer(
      [{ type: 'error', error: { kind: 'api', message: 'boom', retryable: true } }],
      { logger: createLogger({ level: 'warn', destination }), warningIntervalMs: 0 },
    );
    close = bridge.close;
    const post = (content: string) =>
      fetch(`${bridge.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        // An unknown field: one warning line; the upstream's error: one more.
        body: JSON.stringify({
          model: 'composer-2',
          max_tokens: 10,
          stream: true,
          unknown_field: true,
          messages: [{ role: 'user', content }],
        }),
      }).then((response) => response.text());
    await post('first');
    await post('second');
    const requestLines = lines.filter((line) => line['requestId'] !== undefined);
    const ids = [...new Set(requestLines.map((line) => line['requestId']))];
    expect(ids).toHaveLength(2);
    for (const id of ids) {
      const ofRequest = requestLines.filter((line) => line['requestId'] === id);
      expect(ofRequest.map((line) => line['msg'])).toEqual([
        'tolerated unsupported input',
        'turn failed in-stream',
      ]);
      for (const line of ofRequest) expect(line).toMatchObject({ method: 'POST', path: '/v1/messages' });
    }
  });
});
