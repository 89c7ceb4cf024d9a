/**
 * What an evicted conversation leaves behind. `serve` in a child process (loopback, the fake backend) with a
 * session cap of 4 runs 10, then 70 more new conversations; a heap snapshot after each batch (the snapshot
 * collects garbage first) must show the bridge's per-session objects at the cap and the live heap not growing
 * with the number of evicted conversations. Measured at d5a5dd4: live heap 67.9 MB after 10, 65.7 MB after
 * 130, while RSS rose 409 → 451 MB, because V8 sizes its heap to the garbage rate (heapUsed 82 → 224 MB
 * between major collections), not because anything is retained. The sessions still cached must not keep their
 * finished runs either (they did, one `CursorRun` and its SDK run's request context per idle session, until
 * the session let go of a finished run).
 */

import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startBridgeProcess, type BridgeProcess } from '../helpers/bridge-process.js';

const maxSessions = 4;
/** A safety net for waits on events, never the claim. */
/** A safety net, never the claim: a loaded machine writes and reads a heap snapshot in seconds. */
const eventually = { timeout: 180_000, interval: 50 };
/** The per-session objects, and how many of each may stay live with `maxSessions` sessions cached. */
const perSession = ['CursorSession', 'ParkedCallBroker', 'InMemoryAgentStore', 'CursorRun'];
// One store more than the cap: the handle on the SDK's executor cache that pre-warms workspaces has one.
const allowed = (name: string) => (name === 'InMemoryAgentStore' ? maxSessions + 1 : maxSessions);

type HeapFigures = { liveMb: number; counts: Map<string, number> };

/** Total self size and object counts by constructor name of a `.heapsnapshot`. */
const readSnapshot = async (path: string): Promise<HeapFigures> => {
  const snapshot = JSON.parse(await readFile(path, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = snapshot.snapshot.meta.node_fields;
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((field) => fields.indexOf(field)) as [
    number,
    number,
    number,
  ];
  const types = snapshot.snapshot.meta.node_types[0];
  const counts = new Map<string, number>();
  let bytes = 0;
  for (let index = 0; index < snapshot.nodes.length; index += fields.length) {
    bytes += snapshot.nodes[index + sizeAt] ?? 0;
    if (types[snapshot.nodes[index + typeAt] ?? -1] !== 'object') continue;
    const name = snapshot.strings[snapshot.nodes[index + nameAt] ?? -1] ?? '';
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return { liveMb: bytes / 2 ** 20, counts };
};

let bridge: BridgeProcess;
beforeAll(async () => {
  bridge = await startBridgeProcess({
    scenario: (run) => {
      run.text('short answer');
      run.turnEnded();
    },
    env: { CURSOR_BRIDGE_MAX_SESSIONS: String(maxSessions) },
    nodeArgs: ['--heapsnapshot-signal=SIGUSR2'],
  });
}, 60_000);
afterAll(async () => bridge?.close());

describe('evicted conversations', () => {
  it('70 more evicted conversations keep the per-session objects at the cap and add no live heap', async () => {
    const cwd = `/proc/${bridge.pid}/cwd`;
    let asked = 0;
    const converse = async (count: number) => {
      for (let index = 0; index < count; index += 1) {
        const response = await fetch(`${bridge.url}/v1/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': 'sk-test' },
          body: JSON.stringify({
            model: 'composer-2',
            max_tokens: 10,
            messages: [{ role: 'user', content: `conversation ${asked++}: say something short` }],
          }),
        });
        expect(response.status).toBe(200);
        await response.text();
      }
    };
    const metrics = async () => (await fetch(`${bridge.url}/metrics`)).text();
    let snapshots = 0;
    /** The snapshots taken again, and what they still held. */
    const retaken: string[] = [];
    /** One heap snapshot of the bridge (it collects garbage first), read and deleted. */
    const snapshotOnce = async (): Promise<HeapFigures> => {
      const before = new Set((await readdir(cwd)).filter((name) => name.endsWith('.heapsnapshot')));
      process.kill(bridge.pid, 'SIGUSR2');
      snapshots += 1;
      const written = await vi.waitFor(async () => {
        const name = (await readdir(cwd)).find((file) => file.endsWith('.heapsnapshot') && !before.has(file));
        if (name === undefined) throw new Error('no heap snapshot yet');
        return name;
      }, eventually);
      // The signal's handler writes the file synchronously on the bridge's only thread, so a request
      // sent once the file exists is answered only after it was written in full.
      await metrics();
      const figures = await readSnapshot(join(cwd, written));
      await rm(join(cwd, written));
      return figures;
    };
    /**
     * The heap once the bridge let go of what it no longer needs: the per-session objects at the cap, and
     * no finished run or turn producer kept. The evicted sessions' disposals start at each eviction and are
     * not awaited by the turn that evicted: a snapshot taken while one is still under way is taken again.
     */
    const settled = async (after: string): Promise<HeapFigures> => {
      await vi.waitFor(
        async () => expect(await metrics()).toMatch(/^cursor_bridge_sessions_in_flight 0$/m),
        eventually,
      );
      return vi.waitFor(async () => {
        const figures = await snapshotOnce();
        const unsettled = [...perSession, 'EventPump']
          .map((name) => `${name} ${figures.counts.get(name) ?? 0}`)
          .join(', ');
        retaken.push(`after ${after}: ${unsettled}`);
        for (const name of perSession)
          expect(figures.counts.get(name) ?? 0, `${name} after ${after}`).toBeLessThanOrEqual(allowed(name));
        // Every conversation has finished: no idle session keeps its last run, whose SDK `Run` holds the
        // run's whole request context (≈ 160 kB live each, 5 MB for 32 idle sessions in the side-by-side
        // bench).
        expect(figures.counts.get('CursorRun') ?? 0, `finished runs kept after ${after}`).toBe(0);
        // A finished turn stays replayable for 60 s from its buffered events alone: its producer (the
        // engine's turn generator and its EventPump) is not kept for that window.
        expect(figures.counts.get('EventPump') ?? 0, `event pumps of finished turns after ${after}`).toBe(0);
        retaken.pop();
        return figures;
      }, eventually);
    };
    await converse(10);
    const early = await settled('10');
    await converse(70);
    const late = await settled('80');
    console.log(
      `[memory-evicted] live heap after 10 conversations ${early.liveMb.toFixed(1)} MB, after 80 ` +
        `${late.liveMb.toFixed(1)} MB (cap ${maxSessions}, ${snapshots} snapshots taken); ` +
        perSession.map((name) => `${name} ${late.counts.get(name) ?? 0}`).join(', ') +
        (retaken.length === 0 ? '' : `; taken again: ${retaken.join('; ')}`),
    );
    // 70 more evicted conversations: under 75 kB each (≈ 0 measured). An SDK executor (one per scratch
    // workspace) kept past eviction costs ≈ 0.52 MB live each (+62 MB for 120 with `agent.close()` removed).
    expect(late.liveMb - early.liveMb).toBeLessThan(5);
  }, 600_000);
});
