/**
 * The first process inside a client's private network namespace (run by Node directly, types stripped).
 *
 * Usage: `node netns-relay.ts <ip binary> <bridge unix socket> <port> [<socket> <port>]… -- <client> [args…]`
 * (each further socket/port pair is one more forward, e.g. to `cursor-bridge mcp-host`)
 *
 * A fresh `unshare -n` namespace has only a downed `lo`, and cannot reach the host's 127.0.0.1 where a
 * bridge would listen. Unix sockets live in the filesystem, not in a network namespace, so the bridge
 * listens on one and this relay bridges `127.0.0.1:<port>` inside the namespace to it. It brings `lo`
 * up, listens, then runs the client with the inherited stdio and environment and exits with its status.
 * Nothing else is reachable from here: there is no other interface and no route.
 *
 * Only erasable TypeScript and `node:` imports: Node runs this file without a build step.
 */

import { spawn, spawnSync } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { constants } from 'node:os';

const argv = process.argv.slice(2);
const separatorAt = argv.indexOf('--');
const [ipBinary, ...pairs] = separatorAt === -1 ? [] : argv.slice(0, separatorAt);
const [command, ...args] = separatorAt === -1 ? [] : argv.slice(separatorAt + 1);

const fail = (message: string): never => {
  process.stderr.write(`netns-relay: ${message}\n`);
  process.exit(125);
};

if (ipBinary === undefined || pairs.length === 0 || pairs.length % 2 !== 0 || command === undefined) {
  fail('usage: netns-relay.ts <ip> <socket> <port> [<socket> <port>]... -- <command> [args...]');
}
const forwards = Array.from({ length: pairs.length / 2 }, (_, index) => ({
  socketPath: pairs[index * 2] as string,
  port: Number(pairs[index * 2 + 1]),
}));

const up = spawnSync(ipBinary as string, ['link', 'set', 'lo', 'up'], { encoding: 'utf8' });
if (up.status !== 0) fail(`could not bring lo up: ${up.stderr || String(up.error)}`);

const relayTo = (socketPath: string) =>
  createServer((client) => {
    const bridge = connect(socketPath);
    client.pipe(bridge);
    bridge.pipe(client);
    client.on('error', () => bridge.destroy());
    bridge.on('error', () => client.destroy());
    client.on('close', () => bridge.destroy());
    bridge.on('close', () => client.destroy());
  });

const listening = forwards.map(
  ({ socketPath, port }) =>
    new Promise<void>((resolve) => {
      const relay = relayTo(socketPath);
      relay.on('error', (error) => fail(`relay to ${socketPath} failed: ${error.message}`));
      relay.listen(port, '127.0.0.1', () => resolve());
    }),
);

void Promise.all(listening).then(() => {
  const child = spawn(command as string, args, { stdio: 'inherit', env: process.env });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.on(signal, () => child.kill(signal));
  }
  child.on('error', (error) => fail(`could not start ${String(command)}: ${error.message}`));
  child.on('exit', (code, signal) => {
    const signalNumber = signal === null ? 0 : (constants.signals[signal] ?? 0);
    process.exit(code ?? 128 + signalNumber);
  });
});
