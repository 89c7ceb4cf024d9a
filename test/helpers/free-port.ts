/**
 * Ports for processes a test starts with a port of its own choosing (`serve --port`, CCR's `PORT`, HAProxy's
 * binds). The OS picks a free port, which is released before the process binds it: another process may take
 * it in between. A starter that can tell that race from a real failure ({@link portIsTaken}) starts again on
 * another port.
 */

import { createServer } from 'node:net';

/** A TCP port on 127.0.0.1 that was free a moment ago (bound, read and released). */
export const findFreePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address !== null
          ? resolve(address.port)
          : reject(new Error('no port')),
      );
    });
  });

/** Whether another process listens on `port` of 127.0.0.1 now (binding it fails with `EADDRINUSE`). */
export const portIsTaken = (port: number): Promise<boolean> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'EADDRINUSE' ? resolve(true) : reject(error),
    );
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(false)));
  });
