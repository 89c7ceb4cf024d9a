/**
 * An {@link UpstreamPort} for `tool-result-turn.bench.ts` that costs as little as an upstream can: each
 * run calls one host tool (`Bash`), parks, and answers the result at once with one text delta, its usage
 * and its end. Events reach the engine the way the Cursor adapter delivers them (`CursorRun.events` is
 * an {@link AsyncQueue}), each burst in an event-loop turn of its own (`setImmediate`, as a backend read
 * arrives), so the engine is waiting for them as it waits for the SDK.
 *
 * `marks` notes, per run, when the engine handed over the tool result and when the answer's first text
 * delta was queued: the bench's two ends of the upstream's share.
 */

import { performance } from 'node:perf_hooks';
import { AsyncQueue } from '../../lib/async-queue.js';
import type {
  UpstreamEvent,
  UpstreamPort,
  UpstreamRun,
  UpstreamSession,
  UpstreamToolResult,
} from '../../src/upstream/upstream-port.js';

/**
 * Timestamps (`performance.now()`) of the latest run's tool result; `onDelta` runs just before the
 * answer's first delta is queued.
 */
export type UpstreamMarks = { resolvedAt: number; deltaAt: number; onDelta?: () => void };

class InstantRun implements UpstreamRun {
  readonly id: string;
  readonly events = new AsyncQueue<UpstreamEvent>();
  readonly #pending = new Set<string>();
  readonly #marks: UpstreamMarks;

  constructor(id: string, marks: UpstreamMarks) {
    this.id = id;
    this.#marks = marks;
    const toolCallId = `toolu_${id}`;
    this.#pending.add(toolCallId);
    setImmediate(() => {
      this.events.push({
        type: 'tool-call',
        toolCallId,
        toolName: 'Bash',
        input: { command: 'true' },
        parkedAt: Date.now(),
      });
      this.events.push({ type: 'tool-batch-end' });
    });
  }

  pendingToolCalls(): string[] {
    return [...this.#pending];
  }

  historyAdvanced(): boolean {
    return false;
  }

  resolveToolCalls(results: UpstreamToolResult[]): { unknown: string[] } {
    const unknown = results.filter((result) => !this.#pending.delete(result.toolCallId));
    if (unknown.length < results.length) {
      this.#marks.resolvedAt = performance.now();
      setImmediate(() => {
        this.#marks.onDelta?.();
        this.#marks.deltaAt = performance.now();
        this.events.push({ type: 'text-delta', text: 'done ok' });
        setImmediate(() => {
          this.events.push({
            type: 'usage',
            usage: { inputTokens: 10, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 },
          });
          this.events.push({ type: 'end', status: 'finished' });
          this.events.end();
        });
      });
    }
    return { unknown: unknown.map((result) => result.toolCallId) };
  }

  async cancel(): Promise<void> {
    this.#pending.clear();
    this.events.push({ type: 'end', status: 'cancelled' });
    this.events.end();
  }
}

/** See the file's comment. */
export class InstantUpstream implements UpstreamPort {
  readonly marks: UpstreamMarks = { resolvedAt: 0, deltaAt: 0 };
  #runs = 0;

  async preflight(): Promise<void> {}

  async createSession(): Promise<UpstreamSession> {
    const marks = this.marks;
    let active: InstantRun | undefined;
    const next = (): string => String((this.#runs += 1));
    return {
      id: `instant-${next()}`,
      startRun: async () => (active = new InstantRun(next(), marks)),
      dispose: async () => {
        await active?.cancel();
      },
    };
  }

  async close(): Promise<void> {}
}
