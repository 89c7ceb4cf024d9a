/**
 * A client that never reads its answer: a raw socket that sends one Messages request to a bridge on
 * 127.0.0.1 and pauses, so the bridge's writes fill the socket's buffers and then wait on backpressure.
 */

import { connect, type Socket } from 'node:net';

/** Send `payload` (a JSON body) to `POST /v1/messages` on `port`; resolves with the paused socket. */
export const neverReading = (port: number, payload: string, apiKey = 'sk-test'): Promise<Socket> =>
  new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(
        `POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n` +
          `x-api-key: ${apiKey}\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
      );
      socket.pause();
      resolve(socket);
    });
    socket.on('error', reject);
  });
