import { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BridgeMetrics } from '../../../src/metrics/bridge-metrics.js';
import { anthropicAdapter } from '../../../src/protocols/anthropic/anthropic-adapter.js';
import { openaiChatAdapter } from '../../../src/protocols/openai-chat/openai-chat-adapter.js';
import { openaiResponsesAdapter } from '../../../src/protocols/openai-responses/openai-responses-adapter.js';
import { createBridgeServer } from '../../../src/hosts/http/create-server.js';
import type { TurnEvent } from '../../../src/turn/turn-event.js';
import { silentLogger } from '../../helpers/engine-helpers.js';
import { createGate } from '../../helpers/gate.js';

afterEach(() => vi.restoreAllMocks());

describe('a streaming response', () => {
  it("is set up after the turn's first steps ran up to their first wait", async () => {
    const order: string[] = [];
    vi.spyOn(ServerResponse.prototype, 'writeHead').mockImplementationOnce(function (
      this: ServerResponse,
      ...args: Parameters<ServerResponse['writeHead']>
    ) {
      order.push('headers');
      return ServerResponse.prototype.writeHead.apply(this, args);
    });
    const usage = { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 };
    // The upstream's first event waits until the client has the headers: a regression that opens the
    // stream only with the first event hangs here until the test times out.
    const clientHasHeaders = createGate();
    const events: AsyncIterable<TurnEvent> = {
      [Symbol.asyncIterator]: () => {
        let calls = 0;
        return {
          next: async () => {
            calls += 1;
            if (calls > 1) return { done: true, value: undefined };
            order.push('first next');
            // A few steps of microtasks, as the engine's resume takes, then a real wait (the upstream).
            for (let step = 0; step < 5; step += 1) await Promise.resolve();
            order.push('resumed');
            await clientHasHeaders.opened;
            order.push('first event');
            return { done: false, value: { type: 'turn-end', stopReason: 'end', usage } };
          },
        };
      },
    };
    const server = createBridgeServer({
      adapters: {
        anthropic: anthropicAdapter,
        openaiChat: openaiChatAdapter,
        openaiResponses: openaiResponsesAdapter,
      },
      handleTurn: async () => events,
      logger: silentLogger,
      listModels: () => ['composer-2'],
      metrics: new BridgeMetrics(),
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const response = await fetch(`http://127.0.0.1:${port}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'composer-2',
          max_tokens: 10,
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      // The headers came before the turn's first event (the stream opens while the upstream works).
      order.push('client has headers');
      clientHasHeaders.open();
      const body = await response.text();
      expect(body).toContain('event: message_start');
      expect(body).toContain('event: message_stop');
      expect(order).toEqual(['first next', 'resumed', 'headers', 'client has headers', 'first event']);
    } finally {
      server.close();
    }
  });
});
