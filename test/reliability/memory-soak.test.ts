/**
 * Memory comes back after work. A bounded soak (loopback, fake backend) against `serve` in a child process,
 * so RSS is the bridge's: many new conversations (most of them evicted by the session cap), then long
 * streamed turns; RSS after the soak and after idling must stay bounded.
 */

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Scenario } from '../fakes/cursor-backend/index.js';
import { closeWireBackend, startWireBridge } from '../helpers/wire-bridge.js';
import { startBridgeProcess, type BridgeProcess } from '../helpers/bridge-process.js';

const conversations = 96;
const concurrency = 4;
const maxSessions = 24;
const longTurns = 8;
const deltasPerLongTurn = 10_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** RSS after idling may exceed the baseline by less than this. */
const idleBoundMb = 120;

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
  // The cap through the environment: evictions are logged and counted.
  bridge = await startBridgeProcess({ scenario, env: { CURSOR_BRIDGE_MAX_SESSIONS: String(maxSessions) } });
}, 60_000);
afterAll(async () => bridge?.close());

describe('memory after a soak', () => {
  it(`${conversations} new conversations then ${longTurns} turns of ${deltasPerLongTurn} deltas: live heap and RSS after the soak stay bounded`, async () => {
    await post(bridge.url, {
      model: 'composer-2',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'warm' }],
    });
    const scrape = async () => (await fetch(`${bridge.url}/metrics`)).text();
    // The baseline once the warm-up turn is over: nothing in flight.
    await vi.waitFor(async () => expect(await scrape()).toMatch(/^cursor_bridge_sessions_in_flight 0$/m), {
      timeout: 120_000,
      interval: 50,
    });
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
    const mbOf = (metrics: string, name: string) =>
      Math.round(
        Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([\\d.e+]+)`, 'm').exec(metrics)?.[1] ?? 'NaN') / 2 ** 20,
      );
    // "Heap used" includes garbage not yet collected (reported, not asserted): the live heap is
    // measured with forced collections in the next test.
    // Idle, V8's memory reducer runs the major collections the soak never triggered (measured: none in 130
    // conversations) and gives the pages back once it sees a low allocation rate, which it samples every
    // 8 s: 30–60 s after the work stops; at 5 s idle RSS was still the soak's (562 MB). The condition is
    // waited for; the generous timeout is only a safety net.
    const idleSince = Date.now();
    let afterIdle = await bridge.rssMb();
    await vi.waitFor(
      async () => {
        afterIdle = await bridge.rssMb();
        expect(afterIdle - baseline, `RSS after idling (baseline ${baseline} MB)`).toBeLessThan(idleBoundMb);
      },
      { timeout: 300_000, interval: 1_000 },
    );
    const idleMs = Date.now() - idleSince;
    const metrics = await scrape();
    const heapUsed = mbOf(metrics, 'nodejs_heap_size_used_bytes');
    const evicted = Number(/^cursor_bridge_session_evictions_total (\d+)/m.exec(metrics)?.[1] ?? 'NaN');
    const sessions = Number(/^cursor_bridge_sessions (\d+)/m.exec(metrics)?.[1] ?? 'NaN');
    const mb = (name: string) => mbOf(metrics, name);
    const heap = `heap used ${heapUsed} MB of ${mb('nodejs_heap_size_total_bytes')} MB, external ${mb('nodejs_external_memory_bytes')} MB`;
    console.log(
      `[memory-soak] ${conversations} new conversations (${evicted} evicted, ${sessions} live) + ${longTurns} turns × ` +
        `${deltasPerLongTurn} deltas in ${(soakMs / 1000).toFixed(1)} s: RSS baseline ${baseline} MB, after the ` +
        `conversations ${afterConversations} MB, after the soak ${afterSoak} MB, after idling ${(idleMs / 1000).toFixed(0)} s ${afterIdle} MB (${heap})`,
    );
    expect(sessions).toBeLessThanOrEqual(maxSessions);
    expect(evicted).toBeGreaterThanOrEqual(conversations - maxSessions);
    const evictionLines = bridge
      .log()
      .split('\n')
      .filter((line) => line.includes('evicted the least recently used conversation'));
    expect(evictionLines).toHaveLength(evicted);
    expect(
      evictionLines.every(
        (line) => line.includes('"level":30') && line.includes(`"maxSessions":${maxSessions}`),
      ),
    ).toBe(true);
    // Measured at d5a5dd4: baseline 173 MB, 522 MB after the soak, 212 MB after 40 s idle (the issue's
    // bare SDK with the same store: 258 MB). Nothing per session is retained (memory-evicted.test.ts).
    expect(afterIdle - baseline).toBeLessThan(idleBoundMb);
  }, 600_000);

  // What evicted conversations leave on the live heap is measured, object by object, in memory-evicted.test.ts.
  it('live heap (after forced collections, the bridge in this process): 8 long turns add a bounded amount', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const live = (): number => {
      gc();
      gc();
      return Math.round(process.memoryUsage().heapUsed / 2 ** 20);
    };
    const wire = await startWireBridge({ scenario });
    try {
      const ask = async (messages: object[]) =>
        JSON.parse(await post(wire.url, { model: 'composer-2', max_tokens: 10, messages })) as {
          content: Array<{ text: string }>;
        };
      await ask([{ role: 'user', content: 'warm' }]);
      const baseline = live();
      const messages: Array<{ role: string; content: string }> = [];
      for (let turn = 0; turn < longTurns; turn += 1) {
        messages.push({ role: 'user', content: `long turn ${turn}` });
        messages.push({ role: 'assistant', content: (await ask(messages)).content[0]?.text ?? '' });
      }
      const afterLongTurns = live();
      console.log(
        `[memory-soak] live heap after GC: baseline ${baseline} MB, after ${longTurns} turns × ${deltasPerLongTurn} ` +
          `deltas ${afterLongTurns} MB (+${afterLongTurns - baseline})`,
      );
      // Before the agent store stopped keeping finished runs' events: +90 MB for the long turns.
      expect(afterLongTurns - baseline).toBeLessThan(50);
    } finally {
      await wire.close();
      await closeWireBackend();
    }
  }, 480_000);
});
