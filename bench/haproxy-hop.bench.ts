/**
 * The cost of the HAProxy hop (deploy/haproxy/haproxy.cfg, the real haproxy) in front of three
 * `cursor-bridge serve` processes (the real SDK against the fake Cursor backend), measured side by side
 * with direct requests to the same processes, interleaved (the order flips every iteration) over
 * keep-alive connections:
 * - `GET /health`: the bare hop (HAProxy's header rules, the hash, the stick table, one more socket);
 * - a streaming Anthropic turn on a new conversation: time to the response headers (the bridge opens the
 *   stream at once) and to `message_stop`.
 * Prints p50 / p99 of each and the added latency (HAProxy − direct).
 * `BENCH_HEALTH_ITERATIONS` (default 400), `BENCH_TURN_ITERATIONS` (default 40).
 */

import { randomUUID } from 'node:crypto';
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { startBridgeCluster } from '../test/helpers/e2e/haproxy-cluster.js';

const healthIterations = Number(process.env['BENCH_HEALTH_ITERATIONS'] ?? 400);
const turnIterations = Number(process.env['BENCH_TURN_ITERATIONS'] ?? 40);

const cluster = await startBridgeCluster({
  scenario: { turns: [] },
  shell: { name: 'Bash', input: (command) => ({ command }) },
  backendScenario: () => (run) => {
    run.text('hello');
    run.turnEnded({ inputTokens: 10, outputTokens: 1 });
  },
  env: { LOG_LEVEL: 'warn' },
});
const agent = new Agent({ keepAlive: true, maxSockets: 4 });

type Timing = { headersMs: number; totalMs: number };

const send = (port: number, method: string, path: string, body?: string): Promise<Timing> =>
  new Promise((resolve, reject) => {
    const startedAt = performance.now();
    let headersMs = 0;
    const outgoing = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent,
        headers:
          body === undefined
            ? {}
            : {
                'content-type': 'application/json',
                'content-length': Buffer.byteLength(body),
                'x-claude-code-session-id': randomUUID(),
              },
      },
      (response) => {
        headersMs = performance.now() - startedAt;
        response.on('data', () => {});
        response.on('end', () => {
          if ((response.statusCode ?? 0) >= 400) reject(new Error(`${path}: ${response.statusCode}`));
          else resolve({ headersMs, totalMs: performance.now() - startedAt });
        });
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });

const turnBody = (): string =>
  JSON.stringify({
    model: 'composer-2',
    max_tokens: 100,
    stream: true,
    messages: [{ role: 'user', content: `Say hello ${randomUUID()}` }],
  });

const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
};

const report = (label: string, direct: number[], viaLb: number[]): void => {
  const row = (p: number): string => {
    const [d, h] = [percentile(direct, p), percentile(viaLb, p)];
    return `p${p} direct ${d.toFixed(2)} ms, via HAProxy ${h.toFixed(2)} ms, added ${(h - d).toFixed(2)} ms`;
  };
  console.log(`${label} (n=${direct.length} each)\n  ${row(50)}\n  ${row(99)}`);
};

try {
  const lbPort = cluster.lb.port;
  const ports = cluster.bridges.map((bridge) => bridge.port);
  // Warm up: connections, the SDK's first agent in each process.
  for (const port of ports) await send(port, 'POST', '/v1/messages', turnBody());
  for (let index = 0; index < 6; index += 1) await send(lbPort, 'POST', '/v1/messages', turnBody());

  const health = { direct: [] as number[], viaLb: [] as number[] };
  for (let index = 0; index < healthIterations; index += 1) {
    const direct = async () =>
      health.direct.push((await send(ports[index % 3] ?? 0, 'GET', '/health')).totalMs);
    const viaLb = async () => health.viaLb.push((await send(lbPort, 'GET', '/health')).totalMs);
    if (index % 2 === 0) await direct().then(viaLb);
    else await viaLb().then(direct);
  }

  const turn = {
    headers: { direct: [] as number[], viaLb: [] as number[] },
    total: { direct: [] as number[], viaLb: [] as number[] },
  };
  const record = (side: 'direct' | 'viaLb', timing: Timing): void => {
    turn.headers[side].push(timing.headersMs);
    turn.total[side].push(timing.totalMs);
  };
  for (let index = 0; index < turnIterations; index += 1) {
    const direct = async () =>
      record('direct', await send(ports[index % 3] ?? 0, 'POST', '/v1/messages', turnBody()));
    const viaLb = async () => record('viaLb', await send(lbPort, 'POST', '/v1/messages', turnBody()));
    if (index % 2 === 0) await direct().then(viaLb);
    else await viaLb().then(direct);
  }

  report('GET /health round trip', health.direct, health.viaLb);
  report('new conversation, request → response headers', turn.headers.direct, turn.headers.viaLb);
  report('new conversation, request → message_stop', turn.total.direct, turn.total.viaLb);
} finally {
  agent.destroy();
  await cluster.close();
}
