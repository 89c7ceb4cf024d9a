/**
 * How a client under test reaches the bridge and nothing else.
 *
 * Default: every client run gets its own network namespace (`unshare -n`, or `unshare -r -n` where an
 * unprivileged user namespace is allowed) whose only interface is `lo`. The bridge listens on a unix
 * socket, which is reachable from any network namespace, and `netns-relay.ts` (the namespace's first
 * process) forwards `127.0.0.1:<port>` inside the namespace to it. A client's stray DNS lookup or
 * connect fails locally with "network unreachable"; no packet leaves the namespace.
 *
 * Without namespaces the suite refuses to run, because OpenCode resolves the npm registry host on every
 * run whatever its flags say. `E2E_ALLOW_HOST_NETWORK=1` opts into running the clients on the host's
 * network with only their offline settings (an in-process forwarder on an ephemeral loopback port).
 */

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';

export type IsolationKind = 'netns' | 'host';

/** A way for one client run to reach the bridge's unix socket over loopback TCP. */
export type ClientEndpoint = {
  isolation: IsolationKind;
  /** `http://127.0.0.1:<port>`, as the client must be configured. */
  baseUrl: string;
  /** The command line that runs `command` so that {@link baseUrl} reaches the bridge. */
  wrap(command: string, args: readonly string[]): { command: string; args: string[] };
  close(): Promise<void>;
};

/** Inside a private namespace every port is free; this one is easy to spot in logs. */
const netnsPort = 3456;
const relayScript = fileURLToPath(new URL('./netns-relay.ts', import.meta.url));

const findBinary = (candidates: readonly string[]): string | undefined =>
  candidates.find((path) => existsSync(path));

type Probe = { kind: 'netns'; unshare: string; unshareArgs: string[]; ip: string } | { kind: 'host' };

let probe: Probe | undefined;

const probeIsolation = (): Probe => {
  const unshare = findBinary(['/usr/bin/unshare', '/bin/unshare']);
  const ip = findBinary(['/usr/sbin/ip', '/sbin/ip', '/usr/bin/ip', '/bin/ip']);
  const tried: string[] = [];
  if (unshare !== undefined && ip !== undefined) {
    for (const unshareArgs of [['-n'], ['-r', '-n']]) {
      const result = spawnSync(unshare, [...unshareArgs, '--', ip, 'link', 'set', 'lo', 'up'], {
        encoding: 'utf8',
        timeout: 10_000,
      });
      if (result.status === 0) return { kind: 'netns', unshare, unshareArgs, ip };
      tried.push(`unshare ${unshareArgs.join(' ')}: ${(result.stderr || String(result.error)).trim()}`);
    }
  } else {
    tried.push(`unshare: ${unshare ?? 'not found'}, ip: ${ip ?? 'not found'}`);
  }
  if (process.env['E2E_ALLOW_HOST_NETWORK'] === '1') return { kind: 'host' };
  throw new Error(
    'e2e: cannot give the clients a private network namespace, so they could reach the network ' +
      `(${tried.join('; ')}). Run as root (or where unprivileged user namespaces are enabled), or set ` +
      'E2E_ALLOW_HOST_NETWORK=1 to run them on the host network with only their offline settings.',
  );
};

/** Which isolation this machine gives the clients (probed once per process). */
export const detectIsolation = (): IsolationKind => {
  probe ??= probeIsolation();
  return probe.kind;
};

const pipeTo = (socketPath: string) => (client: Socket) => {
  const bridge = connect(socketPath);
  client.pipe(bridge);
  bridge.pipe(client);
  client.on('error', () => bridge.destroy());
  bridge.on('error', () => client.destroy());
  client.on('close', () => bridge.destroy());
  bridge.on('close', () => client.destroy());
};

const listenHostForwarder = (socketPath: string): Promise<Server> =>
  new Promise((resolve, reject) => {
    const server = createServer(pipeTo(socketPath));
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });

/**
 * One more server a client must reach: inside the namespace `127.0.0.1:<port>` leads to `socketPath`.
 * On the host network nothing is forwarded, so `port` must be the server's own loopback port.
 */
export type ExtraForward = { socketPath: string; port: number };

/**
 * Open an endpoint for one client run against the bridge listening on `bridgeSocket` (plus `forwards`);
 * inside a namespace the bridge is at `127.0.0.1:<port>` (default 3456).
 */
export const openClientEndpoint = async (
  bridgeSocket: string,
  forwards: readonly ExtraForward[] = [],
  port: number = netnsPort,
): Promise<ClientEndpoint> => {
  probe ??= probeIsolation();
  const found = probe;
  if (found.kind === 'netns') {
    return {
      isolation: 'netns',
      baseUrl: `http://127.0.0.1:${port}`,
      wrap: (command, args) => ({
        command: found.unshare,
        args: [
          ...found.unshareArgs,
          '--',
          process.execPath,
          relayScript,
          found.ip,
          bridgeSocket,
          String(port),
          ...forwards.flatMap((forward) => [forward.socketPath, String(forward.port)]),
          '--',
          command,
          ...args,
        ],
      }),
      close: async () => {},
    };
  }
  const server = await listenHostForwarder(bridgeSocket);
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('e2e: forwarder has no TCP port');
  return {
    isolation: 'host',
    baseUrl: `http://127.0.0.1:${address.port}`,
    wrap: (command, args) => ({ command, args: [...args] }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
      }),
  };
};
