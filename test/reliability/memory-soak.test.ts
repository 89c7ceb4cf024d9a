/**
 * Issue 11, items 2 and 3: memory comes back after work. A bounded soak (loopback, fake backend) against
 * `serve` in a child process, so RSS is the bridge's: many new conversations (most of them evicted by
 * the session cap), then long streamed turns; RSS after the soak and after idling must stay bounded.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scenario } from '../fakes/cursor-backend/index.js';
import { startBridgeProcess, type BridgeProcess } from './helpers/bridge-process.js';

const conversations = 200;
const concurrency = 4;
const longTurns = 8;
const deltasPerLongTurn = 10_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const scenario: Scenario = async (run) => {
  if (run.request.text.includes('long turn')) {
    for (let index = 0; index < deltasPerLongTurn; index += 1) {
      run.text(`delta ${index} of a long answer. `);
      if (index % 500 === 0) await sleep(0);
    }
  } else {
    run.text('short answer');
  }
  run.turnEnded();
};

const post = async (url: string, body: object): Promise<string> => {
  const response = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'sk-test' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`status ${response.status}: ${text.slice(0, 300)}`);
  return text;
};

let bridge: BridgeProcess;
beforeAll(async () => {
  bridge = await startBridgeProcess({ scenario });
}, 60_000);
afterAll(async () => bridge?.close());

describe('memory after a soak (issue 11, items 2 and 3)', () => {
  it(`${conversations} new conversations then ${longTurns} turns of ${deltasPerLongTurn} deltas: live heap and RSS after the soak stay bounded`, async () => {
    await post(bridge.url, {
      model: 'composer-2',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'warm' }],
    });
    await sleep(500);
    const baseline = await bridge.rssMb();
    const startedAt = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < conversations) {
          const index = next++;
          await post(bridge.url, {
            model: 'composer-2',
            max_tokens: 10,
            stream: index % 2 === 0,
            messages: [{ role: 'user', content: `conversation ${index}: say something short` }],
          });
        }
      }),
    );
    const afterConversations = await bridge.rssMb();
    const messages: Array<{ role: string; content: string }> = [];
    for (let turn = 0; turn < longTurns; turn += 1) {
      messages.push({ role: 'user', content: `long turn ${turn}` });
      const text = await post(bridge.url, { model: 'composer-2', max_tokens: 10, messages });
      const answer = (JSON.parse(text) as { content: Array<{ text: string }> }).content[0]?.text ?? '';
      messages.push({ role: 'assistant', content: answer });
    }
    const afterSoak = await bridge.rssMb();
    const soakMs = Date.now() - startedAt;
    await sleep(5_000);
    const afterIdle = await bridge.rssMb();
    const metrics = await (await fetch(`${bridge.url}/metrics`)).text();
    const evicted = Number(/^cursor_bridge_session_evictions_total (\d+)/m.exec(metrics)?.[1] ?? 'NaN');
    const sessions = Number(/^cursor_bridge_sessions (\d+)/m.exec(metrics)?.[1] ?? 'NaN');
    const mb = (name: string) =>
      Math.round(
        Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([\\d.e+]+)`, 'm').exec(metrics)?.[1] ?? 'NaN') / 2 ** 20,
      );
    const heapUsed = mb('nodejs_heap_size_used_bytes');
    const heap = `heap used ${heapUsed} MB of ${mb('nodejs_heap_size_total_bytes')} MB, external ${mb('nodejs_external_memory_bytes')} MB`;
    console.log(
      `[memory-soak] ${conversations} new conversations (${evicted} evicted, ${sessions} live) + ${longTurns} turns × ` +
        `${deltasPerLongTurn} deltas in ${(soakMs / 1000).toFixed(1)} s: RSS baseline ${baseline} MB, after the ` +
        `conversations ${afterConversations} MB, after the soak ${afterSoak} MB, after 5 s idle ${afterIdle} MB (${heap})`,
    );
    expect(sessions).toBeLessThanOrEqual(32);
    expect(evicted).toBeGreaterThanOrEqual(conversations - 32);
    // What stays live: 32 sessions and their agents. Before the agent store stopped keeping finished
    // runs' events, the 8 long turns alone kept ~400 MB of deltas alive (heap used 505 MB).
    expect(heapUsed).toBeLessThan(250);
    // RSS lags the live heap (V8 keeps the pages it grew to); bounded, not back at the baseline.
    expect(afterIdle - baseline).toBeLessThan(500);
  }, 180_000);
});
